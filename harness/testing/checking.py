"""What `check_scheduler` does once called: builds the scheduler (or its isolated stand-in), explores
every chosen scenario and the generated batches, shrinks, replays and describes each distinct
failure, replays the running test's stored failures first, and raises or returns the report.

Owns the search behind `harness.testing.check_scheduler`, which validates its arguments, sets the
real-time watchdog and imports this module on its first call (so that importing the check costs
little). It never changes the scheduler and is not imported by `import harness.testing`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness.agent.runtime import LoopPolicy
from harness.explore.engine import explore
from harness.explore.findings import Exploration, Finding, first_violation
from harness.explore.shrink import ShrinkMemo, shrink_finding
from harness.explore.swarm import POLICY_KINDS
from harness.oracles.loop_policy import CONFORMANCE_SCENARIOS, loop_conformance_scenarios
from harness.oracles.severity import rank
from harness.policies.registry import BUILTIN_SCHEDULERS, build_scheduler
from harness.run import RunResult, scheduler_label
from harness.scenario import Scenario, find_scenario, load_scenario
from harness.scenario.trust import TrustLike
from harness.scheduling import Scheduler
from harness.sim.realtime import WallClockExceeded, resolve_wall_timeout, stopwatch
from harness.testing import generated as generated_part
from harness.testing.coverage import CheckReport, ScenarioCoverage
from harness.testing.failures import Failure, describe, explore_command, trust_flags
from harness.testing.profiles import DEFAULT_SCENARIOS, GENERATED, Profile
from harness.testing.reports import SchedulerCheckFailed, collect

if TYPE_CHECKING:
    from harness.isolation.remote import IsolatedScheduler

#: The loop scenarios `loop=` adds, each run under the loop policy given (`loop-policy` oracle).
LOOP_SCENARIOS = CONFORMANCE_SCENARIOS


def check(scheduler: Scheduler | str, settings: Profile, name: str, *,
          scenarios: Sequence[str | Path | Scenario] | None, extra_scenarios: Sequence[str | Path | Scenario],
          only: Sequence[str], skip: Sequence[str], seed: int, generated: bool, swarm: bool,
          report_dir: Path | str | None, check_determinism: bool, wall_timeout_s: float | None, fail_fast: bool,
          loop: str | LoopPolicy | None, import_timeout_s: float | None, trust: TrustLike | None,
          isolate: bool | None) -> CheckReport:
    """`check_scheduler` with its profile resolved (`settings`, called `name`), under its watchdog."""
    __tracebackhide__ = True
    took = stopwatch()  # for the summary only: real time never reaches a run
    spec = scheduler if isinstance(scheduler, str) else None
    isolated = _isolated(spec, isolate, import_timeout_s)
    try:
        return _check(scheduler, spec, isolated, settings, name, scenarios, extra_scenarios, only, skip, seed,
                      generated, swarm, report_dir, check_determinism, wall_timeout_s, fail_fast, loop,
                      import_timeout_s, trust, took)
    finally:
        if isolated is not None:
            isolated.close()


def _isolated(spec: str | None, isolate: bool | None, import_timeout_s: float | None) -> IsolatedScheduler | None:
    """The stand-in whose child runs every run when the check is isolated (built there now), else None."""
    if isolate is None:
        from harness.isolation import available

        isolate = spec is not None and ":" in spec and spec not in BUILTIN_SCHEDULERS and available()
    if not isolate:
        return None
    if spec is None:
        raise ValueError("isolate=True needs the scheduler's name (\"package.module:attribute\"): an instance "
                         "cannot be sent to another process")
    from harness.isolation.remote import IsolatedScheduler

    return IsolatedScheduler(spec, import_timeout_s=import_timeout_s)


def _check(scheduler: Scheduler | str, spec: str | None, isolated: IsolatedScheduler | None, settings: Profile,
           name: str, scenarios: Sequence[str | Path | Scenario] | None,
           extra_scenarios: Sequence[str | Path | Scenario],
           only: Sequence[str], skip: Sequence[str], seed: int, generated: bool, swarm: bool,
           report_dir: Path | str | None, check_determinism: bool, wall_timeout_s: float | None, fail_fast: bool,
           loop: str | LoopPolicy | None, import_timeout_s: float | None, trust: TrustLike | None,
           took: Callable[[], float]) -> CheckReport:
    __tracebackhide__ = True
    # A named one imported and built first, under its own limit: a runtime's import is no run's hang.
    policy: Scheduler = isolated if isolated is not None else \
        build_scheduler(scheduler, import_timeout_s) if isinstance(scheduler, str) else scheduler
    looped = loop_conformance_scenarios(loop) if loop is not None else []
    chosen, skipped = _select([*(scenarios if scenarios is not None else DEFAULT_SCENARIOS), *extra_scenarios,
                               *looped], generated, only, skip, trust)
    if looped and not any(any(item is s for s in looped) for item, _ in chosen):
        raise ValueError(f"loop={loop!r}: only= and skip= leave none of the loop scenarios it adds "
                         f"({', '.join(LOOP_SCENARIOS)}), so the loop would not run")
    loop_name = loop if isinstance(loop, str) else None  # what a command line can name
    run_generated = generated and GENERATED not in skipped and (not only or GENERATED in only)
    failures: list[Failure] = []
    covered: list[ScenarioCoverage] = []
    label = spec or scheduler_label(policy)[0]  # what the report calls it: the name it goes by

    def report(stopped: str | None = None) -> CheckReport:
        ordered = tuple(sorted(failures, key=lambda f: rank(f.label)))  # stable: scenario order within a rank
        return CheckReport(label, name, seed, tuple(covered), ordered, took(), stopped,
                           tuple(skipped), isolated is not None, tuple(isolated.refused) if isolated else ())

    def fail_now() -> bool:
        return fail_fast and bool(failures)

    def explore_all() -> None:
        failures.extend(_replay_stored(policy, spec, [scenario for _, scenario in chosen], run_generated,
                                       report_dir, check_determinism))
        for item, scenario in chosen:
            if fail_now():
                return
            scenario_took = stopwatch()
            exploration = explore(scenario, isolated or spec or policy, "auto", runs=settings.runs, seed=seed,
                                  swarm_kinds=POLICY_KINDS if swarm else (), keep_going=not fail_fast, shrink=False,
                                  import_timeout_s=import_timeout_s)
            command: tuple[str | None, tuple[str, ...], str | None] | None = None
            if spec is not None and any(item is s for s in looped) and loop_name is not None:
                command = (None, scenario.tools_modules, loop_name)  # a built-in loop scenario, under --loop
            elif spec is not None and not isinstance(item, Scenario):
                path = None if isinstance(item, str) and not item.endswith(".toml") else str(item)
                command = (path, scenario.tools_modules, None)
            failures.extend(_failures(exploration, policy, spec, seed, report_dir, check_determinism, settings.runs,
                                      swarm, scenario, command, fail_fast, _reported(failures)))
            covered.append(ScenarioCoverage.of(scenario, exploration, scenario_took(), _labels(exploration)))
        if run_generated and not fail_now():
            scenario_took = stopwatch()
            exploration = generated_part.explore_generated(policy, settings.generated, seed)
            failures.extend(_failures(exploration, policy, spec, seed, report_dir, check_determinism, settings.runs,
                                      swarm, None, None, fail_fast, _reported(failures)))
            covered.append(ScenarioCoverage.of(None, exploration, scenario_took(), _labels(exploration)))

    try:
        explore_all()
    except WallClockExceeded as exc:
        if exc.result is None:
            raise  # the scheduler's constructor spun: there is no run to show
        failures.append(_spun(exc, resolve_wall_timeout(wall_timeout_s)))
        name_of = exc.result.scenario.name
        return _raise(report(f"the scheduler spun on {name_of!r}: nothing after it was explored"))
    outcome = report("fail_fast: stopped at the first failure" if fail_now() else None)
    if outcome.failures or outcome.not_exercised:
        _raise(outcome)
    collect(outcome)
    return outcome


def _reported(failures: list[Failure]) -> set[tuple[str, str]]:
    """(scenario, label) of the failures reported so far: a stored failure replayed first is the same
    failure as the exploration's finding of that label, reported once (from the database)."""
    return {(f.scenario, f.label) for f in failures}


def _labels(exploration: Exploration) -> tuple[str, ...]:
    """The labels an exploration found, worst first."""
    return tuple(dict.fromkeys(sorted((f.label for f in exploration.findings), key=rank)))


def _failures(exploration: Exploration, policy: Scheduler, spec: str | None, seed: int,
              report_dir: Path | str | None, check_determinism: bool, runs: int, swarm: bool,
              scenario: Scenario | None, command: tuple[str | None, tuple[str, ...], str | None] | None,
              fail_fast: bool, reported: set[tuple[str, str]]) -> list[Failure]:
    """Each distinct label the exploration of `scenario` (None: the generated batches) found, shrunk,
    replayed and described, worst first, but those `reported` already (scenario, label). `command`:
    what an explore line names (the scenario's file or None for its name, its tool modules, the loop),
    None when no command can give the scenario."""
    findings = sorted((f for f in exploration.findings if (exploration.scenario, f.label) not in reported),
                      key=lambda f: rank(f.label))
    found = []
    memo = ShrinkMemo()  # the labels of one scenario shrink through mostly the same runs
    for finding in findings[:1] if fail_fast else findings:
        shrunk = finding if exploration.strategy == "hypothesis" else shrink_finding(finding, policy, seed, 3,
                                                                                       memo=memo)
        line = None
        if command is not None and spec is not None and scenario is not None:
            line = explore_command(scenario.name, command[0], command[1], spec, runs, seed, finding.label, swarm,
                                   loop=command[2], trust=trust_flags(scenario) if command[0] else ())
        found.append(describe(shrunk, spec=spec, policy=policy, report_dir=report_dir,
                              check_determinism=check_determinism, command=line, identity=_identity(policy, spec),
                              scenario=scenario))
    return found


def _spun(exc: WallClockExceeded, seconds: float) -> Failure:
    """A run the real-time watchdog stopped: a hang, reported at once (neither shrunk nor replayed: it
    would spin again)."""
    result = exc.result
    assert result is not None
    finding = Finding("hang", "liveness", str(exc), {"wall_timeout_s": seconds}, result, 0, (), "watchdog")
    head = f"liveness violated on scenario {result.scenario.name!r}: hang"
    text = (f"{head}\n  {exc}\n  seed {result.seed}; stopped by the real-time watchdog (wall_timeout_s={seconds}): "
            "the scheduler ran Python for that long without yielding to the simulation")
    return Failure(result.scenario.name, "hang", "liveness", head, text, text, finding, False)


def _raise(report: CheckReport) -> CheckReport:
    """Raise the check's failure: one failure's text alone, or a numbered list first, then each."""
    __tracebackhide__ = True
    parts = []
    failures = report.failures
    if len(failures) > 1 or (failures and report.not_exercised):
        count = f"{len(failures)} failures" if len(failures) > 1 else "1 failure"
        parts.append(f"{report.scheduler}: {count}, worst first:\n"
                     + "\n".join(f"  {i}. {f.head}" for i, f in enumerate(failures, 1)))
    idle = report.not_exercised_message()
    if idle:
        parts.append(idle)
    if len(failures) == 1:
        parts.append(failures[0].text)
    else:
        # The first failure of each label in full; another scenario's of the same label in brief (its
        # story is its replay's): a policy that ignores interrupts fails every scenario the same way.
        first: dict[str, int] = {}
        for i, f in enumerate(failures, 1):
            shown = first.setdefault(f.label, i)
            parts.append(f"[{i}] {f.text if shown == i else f.brief(shown)}")
    parts.append(report.summary())
    collect(report)
    raise SchedulerCheckFailed("\n\n".join(parts), report)


def _select(items: list[str | Path | Scenario], generated: bool, only: Sequence[str], skip: Sequence[str],
            trust: TrustLike | None = None) -> tuple[list[tuple[str | Path | Scenario, Scenario]], list[str]]:
    """The scenarios to explore, loaded, and the names skipped; `only`/`skip` name scenarios of the
    list (or "generated"): a name that is not one is a ValueError listing the valid names."""
    loaded = [(item, _scenario(item, trust)) for item in items]
    valid = [scenario.name for _, scenario in loaded] + ([GENERATED] if generated else [])
    for option, names in (("only", only), ("skip", skip)):
        if isinstance(names, str):
            raise TypeError(f"{option}= takes a list of scenario names, got the string {names!r}")
        unknown = [n for n in names if n not in valid]
        if unknown:
            raise ValueError(f"{option}=: unknown scenario {unknown[0]!r}; valid: {', '.join(valid)}")
    chosen = [(item, scenario) for item, scenario in loaded
              if (not only or scenario.name in only) and scenario.name not in skip]
    skipped = [name for name in valid if name in skip]
    return chosen, skipped


def _scenario(item: str | Path | Scenario, trust: TrustLike | None) -> Scenario:
    if isinstance(item, Scenario):
        return item
    if isinstance(item, Path) or item.endswith(".toml"):
        return load_scenario(Path(item), trust=trust)
    return find_scenario(item, trust=trust)


def _identity(policy: Scheduler, spec: str | None) -> str:
    """What the example database files a failure under: the name given, or the instance's class and,
    when it goes by another name, that name too (two `from_asyncio` executors, a runtime's buggy one
    and its fix, are two schedulers of one class: their failures must not be replayed for each other)."""
    if spec is not None:
        return spec
    kind = f"{type(policy).__module__}:{type(policy).__qualname__}"
    name = scheduler_label(policy)[0]
    return kind if name == type(policy).__qualname__ else f"{kind} ({name})"


def _replay_stored(policy: Scheduler, spec: str | None, scenarios: list[Scenario], generated: bool,
                   report_dir: Path | str | None, check_determinism: bool) -> list[Failure]:
    """Replay the running test's stored failures of this scheduler on these scenarios, first, as
    Hypothesis does its example database, and keep them as regression tests once they pass. Each entry
    is one failure (scenario x label), judged by its own label: a stored failure whose label still fires
    is reported (its entry rewritten if the run changed), one whose label no longer fires moves to the
    test's fixed entries; a fixed entry is replayed too, and one whose label fires again is reported as
    a regression and moves back."""
    from harness import __version__
    from harness.reproducers.file import reproducer_of
    from harness.scenario.model_load import loop_modules
    from harness.testing import example_db

    active = example_db.active()
    if active is None:
        return []
    database, key = active
    names = {scenario.name for scenario in scenarios} | ({GENERATED} if generated else set())
    trust = tuple(dict.fromkeys(module for scenario in scenarios for module in [
        *scenario.tools_modules,
        *loop_modules(scenario.agent_specs)]))
    identity = _identity(policy, spec)

    def ours(entry: example_db.Entry) -> bool:
        return entry.reproducer.scheduler == identity and entry.reproducer.scenario.name in names

    found: list[Failure] = []
    seen: set[tuple[str, str]] = set()  # (scenario, label): one failure, whatever entries hold it

    def fails(entry: example_db.Entry) -> RunResult | None:
        """The run now, if the entry's own label still fires in it (another label is the exploration's
        to find, under its own name, not this entry's)."""
        result = entry.reproducer.run(policy)
        return result if first_violation(result, entry.reproducer.label) is not None else None

    def report(entry: example_db.Entry, result: RunResult, path: Path, regressed: bool) -> None:
        stored = entry.reproducer
        violation = first_violation(result, stored.label)
        assert violation is not None
        finding = Finding(*violation, result, 0, (), stored.found_by)
        found.append(describe(finding, spec=spec, policy=policy, report_dir=report_dir,
                              check_determinism=check_determinism, stored=path, identity=identity,
                              regressed=regressed))
        seen.add((stored.scenario.name, stored.label))

    for entry in filter(ours, database.fixed(key, trust)):
        result = fails(entry)
        if result is None:
            continue  # still fixed
        path = database.reopen(entry.path) or entry.path
        if (entry.reproducer.scenario.name, entry.reproducer.label) not in seen:
            report(entry, result, path, regressed=True)
    for entry in filter(ours, database.entries(key, trust)):
        stored = entry.reproducer
        result = fails(entry)
        if result is None:
            database.mark_fixed(entry.path)  # kept, and replayed first from now on, as a regression test
            continue
        if (stored.scenario.name, stored.label) in seen:
            continue  # the same failure, stored twice: reported once
        path = entry.path
        if result.fingerprint != stored.fingerprint:
            database.delete(entry.path)
            path = database.save(key, reproducer_of(result, identity, stored.label, stored.oracle, stored.found_by,
                                                    policy=policy), version=__version__)
        report(entry, result, path, regressed=False)
    return found
