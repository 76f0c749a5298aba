"""A named scheduler as a stand-in whose every run happens in one supervised child.

Owns `IsolatedScheduler`: give it where a scheduler instance goes (`explore`, `check_scheduler`,
`verify`, `run`) and each run — plain, order-first with an explorer's chooser, a shrinking step, a
replay — goes to its `Supervisor`'s child (harness.run.elsewhere), under the per-run real-time limit
in force here (harness.sim.realtime.wall_limit_per_run), and comes back as data judged here. Pickled
(to a worker process of a pool or a Dask cluster) it travels as its name and settings, and starts a
child of its own there at its first run. It never judges and never prints: what the child's code was
refused is kept in `refused` for the caller to report.
"""

from __future__ import annotations

import multiprocessing.util
import os
import threading
import weakref
from collections.abc import Mapping
from typing import Any

from harness.diagnosis import origins as origins_module
from harness.isolation.supervisor import Limits, Supervisor
from harness.model import Batch
from harness.run.elsewhere import RunsElsewhere
from harness.run.result import RunResult
from harness.scenario.spec import Scenario
from harness.scheduling.context import SchedulerContext, SchedulerProcess
from harness.sim.arbiter import Chooser
from harness.sim.realtime import WallClockExceeded, per_run_limit


class IsolatedScheduler(RunsElsewhere):
    """The scheduler named `spec` (`package.module:attribute` or a built-in name), imported, built and
    run in a supervised child process only. Building happens at once (`start=False`: at the first
    run), so an import error or a slow import is raised here as `IsolationError` or `ImportTimeout`,
    as `build_scheduler` would raise its own. Use as a context manager, or `close()` it: the child's
    whole process group is killed then (and when this object is collected)."""

    def __init__(self, spec: str, *, import_timeout_s: float | None = None, limits: Limits | None = None,
                 start: bool = True) -> None:
        self.spec = spec
        self.import_timeout_s = import_timeout_s
        self.limits = limits
        self.supervisor = Supervisor(spec, import_timeout_s=import_timeout_s, limits=limits)
        self._closer = weakref.finalize(self, self.supervisor.close)
        #: The name the runs record: the spec until the child has built the scheduler, then its own.
        self.name = spec
        #: What the child's code tried and was refused (writes outside its directory, new processes),
        #: in the order first seen, each once.
        self.refused: dict[str, None] = {}
        self._built = start
        #: Close this session when a worker process exits (set for a stand-in unpickled there).
        self._close_at_process_exit = False
        if start:
            self.supervisor.start()
            self._note(self.supervisor.refused_at_build)
            self.name = self.supervisor.label

    @property
    def grace_ms(self) -> int | None:
        """The interrupt grace the scheduler declares (its `grace_ms`, as the child read it), so a swarm
        judges it against its own promise (harness.explore.swarm.declared_grace_ms)."""
        if not self._built:
            self.supervisor.start()
            self._built = True
        return self.supervisor.grace_ms

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        raise TypeError(f"{self.spec} runs in an isolated process: give it to run(), explore() or check_scheduler(), "
                        "which hand it whole runs")

    def run_elsewhere(self, scenario: Scenario, seed: int, jitter: float, chooser: Chooser | None) -> RunResult:
        if self._close_at_process_exit:
            # A pool's worker process leaves through multiprocessing's exit, which runs its finalizers
            # but not the garbage collector's, so the child's private directory is removed then too.
            # Registered at the first run, not when unpickled: a new process clears the registry after
            # unpickling what it was started with.
            multiprocessing.util.Finalize(self, self.close, exitpriority=10)
            self._close_at_process_exit = False
        limit = per_run_limit()
        recorder = origins_module.active
        got = self.supervisor.run(scenario, seed, jitter, chooser=chooser, origins=recorder is not None,
                                  wall_timeout_s=limit)
        self._note(self.supervisor.refused_at_build)
        self._note(got.refused)
        self.name = self.supervisor.label
        if recorder is not None and got.origins is not None:
            recorder.started.update(got.origins.started)
            recorder.awaited.update(got.origins.awaited)
        if limit and got.result.wall_clock_exceeded:  # as a run in this process raises it
            raise WallClockExceeded(got.result.error or "real time ran out", got.result)
        return got.result

    def code_elsewhere(self, scenario: Scenario) -> Mapping[str, Any] | None:
        told = self.supervisor.code_identity(scenario)
        return told if isinstance(told, dict) else None

    def close(self) -> None:
        self._closer()

    def __enter__(self) -> IsolatedScheduler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuilt, (self.spec, self.import_timeout_s, self.limits))

    def _note(self, refused: tuple[str, ...]) -> None:
        for what in refused:
            self.refused.setdefault(what, None)


def _rebuilt(spec: str, import_timeout_s: float | None, limits: Limits | None) -> IsolatedScheduler:
    """An `IsolatedScheduler` unpickled in another process: its own child, started at its first run.
    One per process and thread for the same settings, so a Dask worker that unpickles the stand-in with
    every task it is given keeps one child (a session is used by one thread at a time)."""
    key = (spec, import_timeout_s, limits, os.getpid(), threading.get_ident())
    kept = _REBUILT.get(key)
    if kept is None:
        kept = _REBUILT[key] = IsolatedScheduler(spec, import_timeout_s=import_timeout_s, limits=limits, start=False)
        kept._close_at_process_exit = True
    return kept


#: The stand-ins unpickled in this process, by settings, process and thread (see `_rebuilt`).
_REBUILT: dict[tuple[Any, ...], IsolatedScheduler] = {}
