"""Schedulers whose runs happen somewhere else: `run()` hands such a scheduler the whole run.

Owns `RunsElsewhere`, the base class of a scheduler that is a stand-in for one running in another
process (harness.isolation's `IsolatedScheduler`): every entry point that takes a scheduler instance
(`explore`, `check_scheduler`, shrinking, replay) goes through `run()`, so handing it the run there is
enough for all of them to run, search and shrink in the other process while they judge in this one.
A reproducer asks it which code ran (`code_elsewhere`), since that code was imported there. It never
runs anything itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.run.result import RunResult
    from harness.scenario.spec import Scenario
    from harness.sim.arbiter import Chooser


class RunsElsewhere:
    """A scheduler `run()` does not drive: it calls `run_elsewhere` with the run's arguments instead,
    and returns (or raises) what it does, as a run in this process would: a `RunResult`, or
    `WallClockExceeded` carrying the hung run when a per-run real-time limit is in force."""

    def run_elsewhere(self, scenario: Scenario, seed: int, jitter: float, chooser: Chooser | None) -> RunResult:
        raise NotImplementedError

    def code_elsewhere(self, scenario: Scenario) -> Mapping[str, Any] | None:
        """The identity of the code a run of `scenario` runs there, as a reproducer records it
        (`CodeIdentity.to_data()`, harness.reproducers.code_identity): the user's modules are imported
        there, not here. None when it cannot be told."""
        return None
