"""Running a scenario: `run(scenario, scheduler, seed)`, one deterministic simulation, and what it
gives back (`RunResult`).

Modules, in the order a run uses them: `single` (the run loop of one runtime), `crew` (several agents
at once on one world, `[[agents]]`), `batch` (what both share batch by batch: contexts, crash and
interrupt, the end of a batch, the drain), `driver` (steps a batch's scheduler and contains it),
`result` (the frozen values a run returns). None of them judges a run (the oracles do) or prints.
"""

from harness import moved
from harness.run.driver import describe_error, scheduler_label
from harness.run.result import BatchRun, RunResult, RunStatus
from harness.run.single import MAX_JITTER, run
from harness.sim.realtime import WallClockExceeded

__all__ = ["MAX_JITTER", "BatchRun", "RunResult", "RunStatus", "WallClockExceeded", "describe_error", "run",
           "scheduler_label"]


# Names split out of this module still import from it, with a warning (see harness.moved).
__getattr__ = moved.forward(__name__)
