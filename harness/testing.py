"""`check_scheduler()`: the property suite users run against their own policy, in their own tests.

Owns what "a scheduler is correct" means for a user: every oracle holds on the built-in scenarios
(or the ones given) under order-first exploration (PCT), on generated batches (Hypothesis, via
`harness.strategies`), with faults switched on in swarm mode. On the first violation it raises
`SchedulerCheckFailed`, an `AssertionError` whose message names the scenario, the oracle, the label,
the witness and the command that reproduces it (and a saved reproducer when a directory is given).
It never changes the scheduler.

    from harness.testing import check_scheduler

    def test_my_policy():
        check_scheduler(MyPolicy())
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from random import Random

from harness.explore.engine import Finding, explore, first_violation
from harness.explore.pct import PCT
from harness.explore.swarm import POLICY_KINDS
from harness.model import Batch
from harness.run import run
from harness.scenario import Scenario, find_scenario
from harness.schedulers import Scheduler, get_scheduler
from harness.world import World

#: How hard to look, per profile: (PCT runs per scenario, generated batches, swarm runs per scenario).
PROFILES = {"dev": (20, 30, 5), "ci": (40, 60, 10), "deep": (300, 500, 100)}

#: The scenarios whose races a correct policy must survive, if none are given.
DEFAULT_SCENARIOS = ("config-clobber", "edit-then-test", "code-review", "clarify-mixed", "shared-shell-cwd",
                     "home-assistant", "risky-writes", "malformed-args", "interrupt-midbatch", "rare-torn-read")


class SchedulerCheckFailed(AssertionError):
    def __init__(self, message: str, finding: Finding, reproducer: Path | None) -> None:
        super().__init__(message)
        self.finding, self.reproducer = finding, reproducer


def check_scheduler(scheduler: Scheduler | str, *, scenarios: Sequence[str | Scenario] | None = None,
                    profile: str = "ci", seed: int = 1, generated: bool = True, swarm: bool = True,
                    report_dir: Path | str | None = None) -> None:
    """Raise `SchedulerCheckFailed` with a readable message if any oracle finds a violation.

    `scheduler` is an instance, or a name `get_scheduler` accepts (built-in or `module:attr`; with a
    name the failure message carries a `harness explore` command that reproduces it).
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; valid: {', '.join(PROFILES)}")
    pct_runs, batches, swarm_runs = PROFILES[profile]
    spec = scheduler if isinstance(scheduler, str) else None
    policy = get_scheduler(scheduler) if isinstance(scheduler, str) else scheduler
    for item in scenarios if scenarios is not None else DEFAULT_SCENARIOS:
        scenario = find_scenario(item) if isinstance(item, str) else item
        _fail_on(_explore(scenario, policy, spec, "pct", pct_runs, seed, False), spec, report_dir)
        if swarm:
            _fail_on(_explore(scenario, policy, spec, "random", swarm_runs, seed, True), spec, report_dir)
    if generated:
        _fail_on(_generated(policy, batches, seed), spec, report_dir)


#: Swarm faults a scheduling policy must survive. Duplicate delivery is left out: only idempotency
#: keys defend against a transport that delivers twice (`harness explore --swarm` includes it).
CHECK_SWARM_KINDS = POLICY_KINDS


def _explore(scenario: Scenario, policy: Scheduler, spec: str | None, strategy: str, runs: int, seed: int,
             swarm: bool) -> tuple[Finding | None, str]:
    exploration = explore(scenario, spec or policy, strategy, runs=runs, seed=seed, swarm=swarm,
                          swarm_kinds=CHECK_SWARM_KINDS)
    command = ""
    if spec is not None:
        swarm_flags = f" --swarm --swarm-kinds {','.join(CHECK_SWARM_KINDS)}" if swarm else ""
        command = (f"harness explore {scenario.name} --scheduler {spec} --strategy {strategy} --runs {runs} "
                   f"--seed {seed}{swarm_flags}")
    return exploration.shrunk or exploration.found, command


def _generated(policy: Scheduler, examples: int, seed: int) -> tuple[Finding | None, str]:
    """Hypothesis-generated batches over a small repository; Hypothesis shrinks a failure."""
    from hypothesis import HealthCheck, find, settings
    from hypothesis.errors import NoSuchExample

    from harness.strategies import batches

    files = {"/repo/a.txt": "alpha beta\n", "/repo/b.txt": "beta gamma\n", "/repo/tests/test_a.txt":
             "requires a.txt alpha\n"}
    world = World(cwd="/repo")
    world.populate(files=sorted(files.items()))
    state = world.state()

    def failing(batch: Batch) -> bool:
        scenario = Scenario(name="generated", batches=(batch,), world=state)
        return first_violation(run(scenario, policy, seed, chooser=PCT(Random(seed), list(batch.ids), 8))) \
            is not None

    try:
        batch = find(batches(max_size=5), failing, random=Random(seed),
                     settings=settings(max_examples=examples, deadline=None, database=None,
                                       suppress_health_check=list(HealthCheck)))
    except NoSuchExample:
        return None, ""
    scenario = Scenario(name="generated", batches=(batch,), world=state)
    result = run(scenario, policy, seed, chooser=PCT(Random(seed), list(batch.ids), 8))
    found = first_violation(result)
    assert found is not None
    return Finding(*found, result, 0), ""


def _fail_on(outcome: tuple[Finding | None, str], spec: str | None, report_dir: Path | str | None) -> None:
    finding, command = outcome
    if finding is None:
        return
    result = finding.result
    path = None
    if report_dir is not None and spec is not None:
        from harness import __version__
        from harness.replay import reproducer_of, save

        path = save(reproducer_of(result, spec, finding.label, finding.oracle, "check_scheduler"), Path(report_dir),
                    version=__version__)
    calls = ", ".join(f"{c.id}={c.name}" for c in result.scenario.calls)
    lines = [
        f"{finding.oracle} violated on scenario {result.scenario.name!r}: {finding.label}",
        f"  {finding.message}",
        f"  witness: {json.dumps(finding.witness, sort_keys=True, default=str)}",
        f"  calls: {calls}",
        f"  seed {result.seed}" + (f", order tape {list(result.tape)}" if result.tape is not None else "")
        + (f", swarm faults: {', '.join(finding.swarm)}" if finding.swarm else ""),
    ]
    if path is not None:
        lines.append(f"  reproduce: harness replay {path}")
    elif command:
        lines.append(f"  reproduce: {command}")
    else:
        tape = f", chooser=Tape({list(result.tape)!r})" if result.tape is not None else ""
        lines.append(f"  reproduce: harness.run(<scenario>, <your scheduler>, seed={result.seed}{tape}) "
                     "(name the scheduler as module:attr to get a command line)")
    raise SchedulerCheckFailed("\n".join(lines), finding, path)
