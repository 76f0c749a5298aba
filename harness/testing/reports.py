"""What a `check_scheduler` call hands back besides its `CheckReport`: the exception that lists its
failures, and the reports a pytest test's checks made (for the harness's pytest plugin).

Owns `SchedulerCheckFailed` and `collecting_reports`, in a module the package and the search behind it
(`harness.testing.checking`) both import, so neither imports the other. It never runs a check.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.explore.findings import Finding
    from harness.testing.coverage import CheckReport
    from harness.testing.failures import Failure


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


def collect(report: CheckReport) -> None:
    """Keep `report` for the test `collecting_reports` was opened around, if any."""
    collected = _COLLECTED.get()
    if collected is not None:
        collected.append(report)
