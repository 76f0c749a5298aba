"""`check_scheduler()`: the property suite users run against their own policy, in their own tests.

Owns what "a scheduler is correct" means for a user: every oracle holds on the default scenarios —
chosen so that each failure class real runtimes show has a workload that provokes it: path aliases
(symlink, hard link, case, `./` spellings, `..` after a symlink), a shell `cd` before relative
paths, global and per-tool caps, `depends_on` chains, a hung call, an interrupt while calls are
queued, non-idempotent effects with retries, identical duplicate calls, failing siblings, an
interactive call — plus any scenarios the user adds, under `auto` exploration (random latencies, PCT
at depths 1-3 and swarm faults, timers and all), and on Hypothesis-generated batches over a world
with aliases. It keeps going: every scenario is explored and every distinct failure (scenario x
label) is shrunk, replayed, explained and reported, worst first, in one `SchedulerCheckFailed` (an
`AssertionError`), with a coverage summary of what was exercised; `fail_fast=True` stops at the
first. A scenario where no call ever started through the scheduler was not exercised and fails the
check too, unless the user skipped it. Kept reproducers are regression tests (`assert_fixed`,
`reproducers`: `harness.testing.regressions`). It never changes the scheduler.

    from harness.testing import check_scheduler

    def test_my_policy():
        check_scheduler(MyPolicy())
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness.lazy import install
from harness.sim.realtime import resolve_wall_timeout, wall_limit_per_run, watching_user_interrupts
from harness.testing.profiles import ALIASES, DEFAULT_SCENARIOS, PROFILES, Profile, default_scenarios
from harness.testing.profiles import GENERATED as GENERATED  # what only= and skip= call the generated part
from harness.testing.reports import SchedulerCheckFailed, collecting_reports

# What the check reports, and the regression helpers, load when first read (see harness.lazy):
# `from harness.testing import check_scheduler` stays cheap (issue 27: a few times `python -c pass`).
install(__name__, {
    **dict.fromkeys(("CheckReport", "ScenarioCoverage"), "harness.testing.coverage"),
    "Failure": "harness.testing.failures",
    **dict.fromkeys(("GENERATED_FILES", "GENERATED_PATHS"), "harness.testing.generated"),
    **dict.fromkeys(("Outcome", "assert_expected", "assert_fixed", "judge_file", "replay_all", "reproducer_files",
                     "reproducers"), "harness.testing.regressions"),
    "LOOP_SCENARIOS": "harness.testing.checking",
})

if TYPE_CHECKING:
    from harness.agent.runtime import LoopPolicy
    from harness.oracles.loop_policy import CONFORMANCE_SCENARIOS as LOOP_SCENARIOS
    from harness.scenario import Scenario
    from harness.scenario.trust import TrustLike
    from harness.scheduling import Scheduler
    from harness.testing.coverage import CheckReport, ScenarioCoverage
    from harness.testing.failures import Failure
    from harness.testing.generated import GENERATED_FILES, GENERATED_PATHS
    from harness.testing.regressions import (
        Outcome,
        assert_expected,
        assert_fixed,
        judge_file,
        replay_all,
        reproducer_files,
        reproducers,
    )

__all__ = [
    "DEFAULT_SCENARIOS", "GENERATED_FILES", "GENERATED_PATHS", "LOOP_SCENARIOS", "PROFILES", "CheckReport", "Failure",
    "Outcome", "Profile", "ScenarioCoverage", "SchedulerCheckFailed", "assert_expected", "assert_fixed",
    "check_scheduler", "collecting_reports", "default_scenarios", "judge_file", "replay_all", "reproducer_files",
    "reproducers",
]


def check_scheduler(scheduler: Scheduler | str, *, scenarios: Sequence[str | Path | Scenario] | None = None,
                    extra_scenarios: Sequence[str | Path | Scenario] = (), only: Sequence[str] = (),
                    skip: Sequence[str] = (), profile: str = "ci", seed: int = 1, generated: bool = True,
                    swarm: bool = True, report_dir: Path | str | None = None, check_determinism: bool = False,
                    wall_timeout_s: float | None = None, fail_fast: bool = False,
                    loop: str | LoopPolicy | None = None, import_timeout_s: float | None = None,
                    trust: TrustLike | None = None, isolate: bool | None = None) -> CheckReport:
    """Explore every scenario and raise `SchedulerCheckFailed` listing every failure, worst first, if
    any oracle finds a violation or a scenario was not exercised; return the `CheckReport` (what was
    covered: `report.summary()`) when the scheduler passes.

    `scheduler` is an instance, or a name `get_scheduler` accepts (built-in or `module:attr`; with a
    name each failure carries a command line that reproduces it). `scenarios` replaces the defaults,
    `extra_scenarios` adds to them (names, scenario files or `Scenario` values); `only` and `skip`
    pick among them by name (`"generated"` is the Hypothesis-generated part; an unknown name is a
    `ValueError` listing the valid ones). A scenario none of whose calls ever started through the
    scheduler (its tools unknown to the runtime, every call refused) fails the check as *not
    exercised*, naming the scenarios and the tools: skip it if the runtime does not have them.
    `fail_fast` stops at the first failure, as the check did before it kept going. `loop` (a loop
    policy: a registry name, `package.module:attribute` or an object) adds the loop scenarios
    (`LOOP_SCENARIOS`) run under that loop, where the `loop-policy` oracle checks it against its own
    declared limits: a tool failing with the same signature is retried at most its limit and then
    disabled, the round limit holds, and the model is told. A scenario file imports only the modules
    `trust` names (module names or modules; or the project's `[tool.harness] trusted-modules`) and its
    `from_dir` reads only its own directory or `Trust(dirs=...)` (`harness.scenario.trust`).

    Every failure is shrunk and replayed in this process before it is reported; `report_dir` saves
    its reproducer and `check_determinism` also replays it in a fresh process under another
    PYTHONHASHSEED — both only for a scheduler given by name, the only kind a file can name.

    `wall_timeout_s` (None: the limit in force, else 60; 0: no limit) is the real time each run may
    take: a scheduler that spins in Python without yielding fails the check as a `hang` and stops it.
    Importing and building a named scheduler happens first and is not counted: it has its own limit,
    `import_timeout_s` (None: 600; 0: no limit), and an import or constructor that outlasts it raises
    `harness.sim.realtime.ImportTimeout` (a `WallClockExceeded`: there is no run to show). Both are
    SIGALRM timers, so they work on the main thread of Unix only; a timer of pytest-timeout's due
    sooner is left in charge.

    `isolate` runs every run (explored, shrunk, replayed) in a supervised child process and judges it
    here (harness.isolation: a hard real-time kill, resource limits, real-disk writes refused, oracles
    the scheduler cannot patch); it needs the scheduler's name. None (the default) isolates a name of
    your own code (`package.module:attribute`) where the system can (POSIX), and runs a built-in policy or
    an instance in this process.

    Under pytest (with the harness plugin) the failures a test failed with before are replayed first,
    before anything is explored (see `harness.testing.example_db`).
    """
    __tracebackhide__ = True  # pytest: the message, not this function's source, comes first
    name = ALIASES.get(profile, profile)
    if name not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; valid: {', '.join(PROFILES)}")
    # The search and all it needs load on the first check, not on `from harness.testing import ...`:
    # a test module that imports the check pays for it only when it runs it.
    from harness.testing.checking import check

    # Every run of the check has its own real-time watchdog; a real Ctrl-C is told from a
    # KeyboardInterrupt the scheduler raises.
    with wall_limit_per_run(resolve_wall_timeout(wall_timeout_s)), watching_user_interrupts():
        return check(scheduler, PROFILES[name], name, scenarios=scenarios, extra_scenarios=extra_scenarios,
                     only=only, skip=skip, seed=seed, generated=generated, swarm=swarm, report_dir=report_dir,
                     check_determinism=check_determinism, wall_timeout_s=wall_timeout_s, fail_fast=fail_fast,
                     loop=loop, import_timeout_s=import_timeout_s, trust=trust, isolate=isolate)
