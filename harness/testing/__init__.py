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

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.lazy import install
from harness.sim.realtime import resolve_wall_timeout, wall_limit_per_run, watching_user_interrupts

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
    from harness.explore.findings import Finding
    from harness.scenario import Scenario
    from harness.scenario.trust import TrustLike
    from harness.scheduling import Scheduler
    from harness.testing.checking import LOOP_SCENARIOS
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
    "interleaved-caps",         # two capped tools whose calls interleave
    "two-agents-one-runtime",   # one scheduler instance serving two agents on one world at once
)

#: What `only=` and `skip=` call the Hypothesis-generated part.
GENERATED = "generated"


def default_scenarios(*, generated: bool = True) -> list[str]:
    """The names `check_scheduler` explores by default, for one pytest item per scenario (each then
    runs alone on an xdist worker, and `-k` picks one)::

        @pytest.mark.parametrize("scenario", default_scenarios())
        def test_my_policy(scenario):
            check_scheduler("mypackage.policies:MyPolicy", only=[scenario])

    `"generated"` (the Hypothesis-generated batches) is the last, unless `generated=False`."""
    return [*DEFAULT_SCENARIOS, *([GENERATED] if generated else [])]


class SchedulerCheckFailed(AssertionError):
    """Every failure of one `check_scheduler` call, worst first, and what the check covered.

    `failures` lists them (each with its text, reproducer and replay line) and `report` is the
    `CheckReport`; `finding`, `reproducer`, `replay_command` and `example` are the first failure's."""

    def __init__(self, message: str, report: CheckReport) -> None:
        super().__init__(message)
        self.report = report
        self.failures: tuple[Failure, ...] = report.failures
        #: The seed and profile the check ran with (what a command reproducing it must give).
        self.seed, self.profile = report.seed, report.profile
        first = report.failures[0] if report.failures else None
        self.finding: Finding | None = first.finding if first else None
        self.reproducer: Path | None = first.reproducer if first else None
        #: `harness replay FILE --trust-module ...`: the command that replays the first saved reproducer.
        self.replay_command: str | None = first.replay_command if first else None
        #: The verified reproducers the pytest plugin keeps in its example database, one per failure that
        #: replays; `example` is the first failure's (None when it does not replay).
        self.examples = tuple(f.example for f in report.failures if f.example is not None)
        self.example = first.example if first else None

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


#: Where the reports of the checks a pytest test makes go (set by the plugin around each test).
_COLLECTED: ContextVar[list[CheckReport] | None] = ContextVar("harness_check_reports", default=None)


@contextmanager
def collecting_reports() -> Iterator[list[CheckReport]]:
    """Collect the `CheckReport` of every `check_scheduler` call made inside, passed or failed."""
    reports: list[CheckReport] = []
    token = _COLLECTED.set(reports)
    try:
        yield reports
    finally:
        _COLLECTED.reset(token)


def _collect(report: CheckReport) -> None:
    collected = _COLLECTED.get()
    if collected is not None:
        collected.append(report)
