"""`check_scheduler()`: the property suite users run against their own policy, in their own tests.

Owns what "a scheduler is correct" means for a user: every oracle holds on the default scenarios —
chosen so that each failure class real runtimes show has a workload that provokes it: path aliases
(symlink, hard link, case, `./` spellings, `..` after a symlink), a shell `cd` before relative
paths, global and per-tool caps, `depends_on` chains, a hung call, an interrupt while calls are
queued, non-idempotent effects with retries, identical duplicate calls, failing siblings, an
interactive call — plus any scenarios
the user adds, under `auto` exploration (random latencies, PCT at depths 1-3 and swarm faults,
timers and all), and on Hypothesis-generated batches over a world with aliases. On the first
violation it raises `SchedulerCheckFailed`, an `AssertionError` whose message names the scenario,
the oracle, the label, the witness and the command that reproduces it; the reproducer is replayed
before it is reported (and saved, when a directory is given), and a scheduler whose failure does not
replay is reported as nondeterministic instead. It never changes the scheduler.

    from harness.testing import check_scheduler

    def test_my_policy():
        check_scheduler(MyPolicy())
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from random import Random
from typing import TYPE_CHECKING, Any

from harness.explore.engine import Finding, explore, first_violation
from harness.explore.pct import PCT
from harness.explore.swarm import POLICY_KINDS
from harness.model import Batch
from harness.realtime import (
    WallClockExceeded,
    per_run_limit,
    resolve_wall_timeout,
    wall_limit_per_run,
    watched_build,
    watching_user_interrupts,
)
from harness.run import run
from harness.scenario import Scenario, find_scenario, load_scenario
from harness.schedulers import Scheduler, get_scheduler
from harness.sim.arbiter import TIME
from harness.sim.collector import long_search
from harness.world import World

if TYPE_CHECKING:
    from harness.replay import Reproducer


@dataclass(frozen=True)
class Profile:
    """How hard to look: auto-exploration runs per scenario, and generated batches."""

    runs: int
    generated: int


#: `quick` stays within ~5 s on one core for a fast policy, `ci` within ~30 s; `deep` is for nightly.
PROFILES = {"quick": Profile(12, 30), "ci": Profile(60, 120), "deep": Profile(400, 1000)}
#: Older names of the profiles.
ALIASES = {"dev": "quick"}

#: The scenarios whose races a correct policy must survive, if none are given; each names the
#: situation it provokes.
DEFAULT_SCENARIOS = (
    "config-clobber",           # two read-modify-writes of one file
    "config-two-spellings",     # one file spelled two ways (`./`)
    "symlink-alias",            # one file through a symlink
    "symlink-dotdot",           # `..` after a symlink: the kernel resolves the link first
    "v4a-multi-file",           # one V4A patch of two files, a read of the second beside it
    "hardlink-alias",           # one file through a hard link
    "case-alias",               # one file in two cases on a case-insensitive disk
    "edit-then-test",           # a write, then a read of the whole tree
    "fix-then-test-dag",        # a declared depends_on chain
    "shared-shell-cwd",         # shell state shared by calls
    "cd-then-cat",              # `cd` then a relative path, in one turn
    "cd-then-edit",             # `cd`, then relative and absolute spellings of one file next turn
    "home-assistant",           # an external device: write, then read its state
    "risky-writes",             # external effects in model order
    "restart-rollback-restart", # identical calls with different ids
    "duplicate-ticket",         # a timeout, a retry and an idempotency key
    "ticket-retry",             # a non-idempotent effect slower than the timeout
    "scrape-fanout",            # a global and a per-tool cap
    "interrupt-midbatch",       # a user interrupt with calls running
    "interrupt-search-fanout",  # a user interrupt with calls queued
    "stuck-extract",            # a call that never answers
    "cascade-cancel",           # a failing sibling next to a call that ignores cancellation
    "clarify-mixed",            # an interactive call among others
    "malformed-args",           # arguments that are not JSON
    "rare-torn-read",           # a race only a rare order shows
    "ops-approvals",            # calls that need the user's approval: approved, denied, unanswered
)


class SchedulerCheckFailed(AssertionError):
    def __init__(self, message: str, finding: Finding, reproducer: Path | None, replay_command: str | None = None
                 ) -> None:
        super().__init__(message)
        self.finding, self.reproducer = finding, reproducer
        #: `harness replay FILE --trust-module ...`: the command that replays the saved reproducer.
        self.replay_command = replay_command
        #: The verified reproducer the pytest plugin keeps in its example database (None when the
        #: failure does not replay); its scheduler is the name given, or the instance's class.
        self.example: Reproducer | None = None


def _watched(check: Callable[..., None]) -> Callable[..., None]:
    """Give every run of a check its own real-time watchdog (`wall_timeout_s`) and tell a real Ctrl-C
    from a KeyboardInterrupt the scheduler raises; a run the watchdog stopped fails the check as a
    hang at once (it is neither shrunk nor replayed: it would spin again)."""

    @functools.wraps(check)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        __tracebackhide__ = True
        seconds = resolve_wall_timeout(kwargs.get("wall_timeout_s"))
        try:
            with wall_limit_per_run(seconds), watching_user_interrupts():
                check(*args, **kwargs)
        except WallClockExceeded as exc:
            if exc.result is None:
                raise  # the scheduler's constructor spun: there is no run to show
            result = exc.result
            finding = Finding("hang", "liveness", str(exc), {"wall_timeout_s": seconds}, result, 0, (), "watchdog")
            raise SchedulerCheckFailed(
                f"liveness violated on scenario {result.scenario.name!r}: hang\n  {exc}\n"
                f"  seed {result.seed}; stopped by the real-time watchdog (wall_timeout_s={seconds}): the scheduler "
                "ran Python for that long without yielding to the simulation", finding, None) from None

    return wrapper


@_watched
def check_scheduler(scheduler: Scheduler | str, *, scenarios: Sequence[str | Path | Scenario] | None = None,
                    extra_scenarios: Sequence[str | Path | Scenario] = (), profile: str = "ci", seed: int = 1,
                    generated: bool = True, swarm: bool = True, report_dir: Path | str | None = None,
                    check_determinism: bool = False, wall_timeout_s: float | None = None) -> None:
    """Raise `SchedulerCheckFailed` with a readable message if any oracle finds a violation.

    `scheduler` is an instance, or a name `get_scheduler` accepts (built-in or `module:attr`; with a
    name the failure message carries a `harness explore` command that reproduces it). `scenarios`
    replaces the defaults, `extra_scenarios` adds to them (names, scenario files or `Scenario`
    values). A failure is always replayed in this process before it is reported; `report_dir` saves
    its reproducer and `check_determinism` also replays it in a fresh process under another
    PYTHONHASHSEED — both only for a scheduler given by name, the only kind a file can name.

    `wall_timeout_s` (None: the limit in force, else 60; 0: no limit) is the real time each run,
    and building a named scheduler, may take: a scheduler that spins in Python without yielding
    fails the check as a `hang` (a constructor that spins raises `WallClockExceeded`). It is a
    SIGALRM timer, so it works on the main thread of Unix only; a timer of pytest-timeout's due
    sooner is left in charge.

    Under pytest (with the harness plugin) the failures a test failed with before are replayed first,
    before anything is explored, until they pass (see `harness.example_db`).
    """
    __tracebackhide__ = True  # pytest: the message, not this function's source, comes first
    name = ALIASES.get(profile, profile)
    if name not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; valid: {', '.join(PROFILES)}")
    settings = PROFILES[name]
    spec = scheduler if isinstance(scheduler, str) else None
    policy = watched_build(lambda: get_scheduler(scheduler), per_run_limit(), f"building the scheduler {scheduler}"
                           ) if isinstance(scheduler, str) else scheduler  # a constructor can spin too
    chosen = [*(scenarios if scenarios is not None else DEFAULT_SCENARIOS), *extra_scenarios]
    _replay_stored(policy, spec, [_scenario(item) for item in chosen], generated, report_dir, check_determinism)
    for item in chosen:
        scenario = _scenario(item)
        exploration = explore(scenario, spec or policy, "auto", runs=settings.runs, seed=seed,
                              swarm_kinds=POLICY_KINDS if swarm else ())
        finding = exploration.shrunk or exploration.found
        command = ""
        if finding is not None and spec is not None and isinstance(item, str) and not item.endswith(".toml"):
            from harness.replay import modules_named, search_path_prefix

            command = (f"{search_path_prefix(modules_named(spec, scenario.tools_modules))}"
                       f"harness explore {scenario.name} --scheduler {spec} --strategy auto --runs {settings.runs} "
                       f"--seed {seed}" + ("" if swarm else " --swarm-kinds ''"))
        _fail_on(finding, command, spec, report_dir, check_determinism, policy)
    if generated:
        _fail_on(_generated(policy, settings.generated, seed), "", spec, report_dir, check_determinism, policy)


def _scenario(item: str | Path | Scenario) -> Scenario:
    if isinstance(item, Scenario):
        return item
    if isinstance(item, Path) or item.endswith(".toml"):
        return load_scenario(Path(item))
    return find_scenario(item)


#: The generated batches' world: two files, a symlink and a hard link to them, a subdirectory for
#: `cd` and relative paths, and a test file that reads the tree.
GENERATED_FILES = {"/repo/a.txt": "alpha beta\n", "/repo/b.txt": "beta gamma\n", "/repo/src/c.txt": "gamma\n",
                   "/repo/tests/test_a.txt": "requires a.txt alpha\n"}
GENERATED_PATHS = ("/repo/a.txt", "/repo/b.txt", "/repo/src/c.txt", "/repo/link.txt", "/repo/hard.txt",
                   "c.txt", "./a.txt")


def _generated_world() -> World:
    world = World(cwd="/repo")
    world.populate(files=sorted(GENERATED_FILES.items()), symlinks=[("/repo/link.txt", "/repo/a.txt")],
                   hardlinks=[("/repo/b.txt", "/repo/hard.txt")])
    return world


def _generated(policy: Scheduler, examples: int, seed: int) -> Finding | None:
    """Hypothesis-generated batches over a small repository with aliases; Hypothesis shrinks a failure.
    Each batch runs order-first under PCT (timers included)."""
    from hypothesis import HealthCheck, find, settings
    from hypothesis.errors import NoSuchExample

    from harness.strategies import batches

    state = _generated_world().state()

    def chooser(batch: Batch) -> PCT:
        return PCT(Random(seed), [*batch.ids, TIME], 16)

    def failing(batch: Batch) -> bool:
        scenario = Scenario(name="generated", batches=(batch,), world=state)
        return first_violation(run(scenario, policy, seed, chooser=chooser(batch))) is not None

    try:
        with long_search():  # the session's heap frozen, young collections less often
            batch = find(batches(max_size=5, paths=GENERATED_PATHS), failing, random=Random(seed),
                         settings=settings(max_examples=examples, deadline=None, database=None,
                                           suppress_health_check=list(HealthCheck)))
    except NoSuchExample:
        return None
    scenario = Scenario(name="generated", batches=(batch,), world=state)
    result = run(scenario, policy, seed, chooser=chooser(batch))
    found = first_violation(result)
    assert found is not None
    return Finding(*found, result, 0, (), "hypothesis")


def _identity(policy: Scheduler, spec: str | None) -> str:
    """What the example database files a failure under: the name given, or the instance's class."""
    return spec or f"{type(policy).__module__}:{type(policy).__qualname__}"


def _replay_stored(policy: Scheduler, spec: str | None, scenarios: list[Scenario], generated: bool,
                   report_dir: Path | str | None, check_determinism: bool) -> None:
    """Replay the running test's stored failures of this scheduler on these scenarios, first: one that
    still fails is reported (its entry rewritten if the run changed), one that passes is forgotten."""
    __tracebackhide__ = True
    from harness import __version__, example_db
    from harness.replay import reproducer_of
    from harness.scenario.model_load import loop_modules

    active = example_db.active()
    if active is None:
        return
    database, key = active
    names = {scenario.name for scenario in scenarios} | ({"generated"} if generated else set())
    trust = tuple(dict.fromkeys(module for scenario in scenarios for module in [
        *scenario.tools_modules,
        *loop_modules(scenario.agent_specs)]))
    identity = _identity(policy, spec)
    for entry in database.entries(key, trust):
        stored = entry.reproducer
        if stored.scheduler != identity or stored.scenario.name not in names:
            continue
        result = stored.run(policy)
        found = first_violation(result)
        if found is None:
            database.delete(entry.path)
            continue
        finding = Finding(*found, result, 0, (), f"the example database ({entry.path.name}, replayed first)")
        path = entry.path
        if result.fingerprint != stored.fingerprint:
            database.delete(entry.path)
            path = database.save(key, reproducer_of(result, identity, finding.label, finding.oracle, stored.found_by),
                                 version=__version__)
        if path.is_relative_to(Path.cwd()):
            path = path.relative_to(Path.cwd())
        _fail_on(finding, "", spec, report_dir, check_determinism, policy, stored=path)


def _fail_on(finding: Finding | None, command: str, spec: str | None, report_dir: Path | str | None,
             check_determinism: bool, policy: Scheduler, stored: Path | None = None) -> None:
    __tracebackhide__ = True
    if finding is None:
        return
    from harness import __version__
    from harness.oracles import check as check_oracles
    from harness.replay import reproducer_of, save_verified, verify
    from harness.report.explain import explain_witness
    from harness.report.hang import hang_lines
    from harness.report.story import story_lines
    from harness.schedulers.origins import recording

    result = finding.result
    reproducer = reproducer_of(result, spec or result.scheduler, finding.label, finding.oracle, "check_scheduler")
    fresh = check_determinism and spec is not None
    path = None
    with recording() as origins:  # the replay notes the user's source lines for the story
        if report_dir is not None and spec is not None:
            path, selfcheck = save_verified(reproducer, Path(report_dir), version=__version__, fresh_process=fresh,
                                            scheduler=policy)
        else:
            selfcheck = verify(reproducer, fresh_process=fresh, scheduler=policy)
    calls = ", ".join(f"{c.id}={c.name}" for c in result.scenario.calls)
    head = f"{finding.oracle} violated on scenario {result.scenario.name!r}: {finding.label}"
    if not selfcheck.ok:
        head = (f"nondeterministic: the {finding.label} found on scenario {result.scenario.name!r} does not replay "
                f"from its seed and order tape ({selfcheck.describe()})")
    lines = [
        head,
        f"  {finding.message}",
        f"  why: {explain_witness(finding.label, finding.witness, result, finding.message)}",
    ]
    details = [
        f"  witness: {json.dumps(finding.witness, sort_keys=True, default=str)}",
        f"  calls: {calls}",
        f"  seed {result.seed}" + (f", order tape {list(result.tape)}" if result.tape is not None else "")
        + (f", found by {finding.found_by}" if finding.found_by else "")
        + (f", swarm faults: {', '.join(finding.swarm)}" if finding.swarm else ""),
    ]
    violations = [v for verdict in check_oracles(result) for v in verdict.violations if v.label == finding.label]
    # The story right under the reproduce line, before the raw witness.
    details[:0] = [f"  {line}" for line in story_lines(violations[:1], result, origins if selfcheck.ok else None)]
    if finding.label == "hang":  # what each unfinished call waited on, read at the hang
        details[:0] = [f"  {line}" for line in hang_lines(result)]
    replay_command = dataclasses.replace(reproducer, path=path).command if path is not None else None
    if replay_command is None and stored is not None and spec is not None and selfcheck.ok:
        replay_command = dataclasses.replace(reproducer, path=stored).command
    if replay_command is not None:
        lines.append(f"  reproduce: {replay_command}")
    if spec is None and (report_dir is not None or check_determinism):
        lines.append("  (no reproducer saved and no fresh-process replay: name the scheduler as module:attr)")
    elif stored is not None and replay_command is not None:
        pass  # the stored failure's file is its reproducer
    elif command and selfcheck.ok:
        lines.append(f"  reproduce: {command}")
    elif selfcheck.ok:
        tape = f", chooser=Tape({list(result.tape)!r})" if result.tape is not None else ""
        # A generated batch has no built-in name to explore again: a command line needs its reproducer.
        hint = ("name the scheduler as module:attr to get a command line" if spec is None
                else "pass report_dir=... to save a reproducer that `harness replay` runs")
        lines.append(f"  reproduce: harness.run(<scenario>, <your scheduler>, seed={result.seed}{tape}) ({hint})")
    # What and why, then how to reproduce it, then the details: pytest shows the top first.
    failure = SchedulerCheckFailed("\n".join([*lines, *details]), finding, path, replay_command)
    if selfcheck.ok:
        failure.example = dataclasses.replace(reproducer, scheduler=_identity(policy, spec), path=None)
    raise failure
