"""What every runner of a run shares, batch by batch: the `Shared` kernel and world that make each
batch's scheduler context, the crash and the user interrupt, how a batch ends (`end_batch`) and how
a run drains (`drain`: abandoned calls run out, each runtime's end-of-run hooks).

Used by the single runner (`harness.run.single`) and the crew runner (`harness.run.crew`) alike;
imports neither.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any

import simpy
from simpy.events import PENDING

from harness.faults.failures import FailureModel
from harness.model import Batch, ToolCall
from harness.run.driver import Driver, describe_error
from harness.run.hang import Peer, diagnose
from harness.run.result import BatchRun, RunStatus
from harness.scenario.spec import Interrupt, Scenario
from harness.scheduling.context import END_OF_RUN, SchedulerContext
from harness.sim.arbiter import Arbiter
from harness.sim.kernel import Kernel, StopReason
from harness.sim.realtime import (
    WallClockExceeded,
    aborts,
)
from harness.world.world import World


def crash_event(kernel: Kernel, at_ms: int | None) -> simpy.Event:
    """The fault plan's runtime crash: an event that fires (and is traced) at `at_ms`, or never."""
    event = kernel.env.event()
    if at_ms is not None:
        def fire() -> Generator[simpy.Event, Any, None]:
            yield kernel.delay(at_ms, "crash")
            kernel.record("crash")
            event.succeed()

        kernel.env.process(fire())
    return event


class _UserInterrupt:
    """The scenario's user interrupt: one timer for the whole run that interrupts whichever batch is
    running when it fires (and is written to the trace then)."""

    def __init__(self, kernel: Kernel, spec: Interrupt | None) -> None:
        self.kernel = kernel
        self.spec = spec
        self.current: tuple[int, simpy.Event] | None = None
        self.fired = False
        if spec is not None:
            kernel.env.process(self._fire(spec))

    def arm(self, index: int) -> simpy.Event | None:
        """The event batch `index` is interrupted by; None when the scenario scripts no interrupt (the
        batch's context makes its own, which never fires)."""
        if self.spec is None:
            return None
        event = self.kernel.env.event()
        self.current = (index, event)
        return event

    def deliver_if_due(self) -> None:
        """Deliver the interrupt now if it is due as the armed batch begins (an interrupt at the very
        start): the user pressed Ctrl-C before the scheduler could start anything, so it reaches the
        scheduler before its first step, not after it has started every call in the same millisecond."""
        spec = self.spec
        if spec is not None and self.current is not None and not self.fired and spec.at_ms <= self.kernel.now:
            self._deliver(spec)
            self.kernel.env.process(self._grace_expiry(spec))

    def disarm(self) -> None:
        self.current = None

    def _fire(self, spec: Interrupt) -> Generator[simpy.Event, Any, None]:
        yield self.kernel.delay(spec.at_ms, "interrupt")
        if self.current is not None and not self.fired:
            self._deliver(spec)
            yield from self._grace_expiry(spec)

    def _deliver(self, spec: Interrupt) -> None:
        assert self.current is not None
        index, event = self.current
        self.fired = True
        self.kernel.record("interrupt", index=index, grace_ms=spec.grace_ms)
        event.succeed()

    def _grace_expiry(self, spec: Interrupt) -> Generator[simpy.Event, Any, None]:
        # The end of the grace period is a deadline the liveness oracle judges by, whether or not the
        # scheduler set a timer for it: order-first runs must be able to reach it with calls still
        # running: the first instant a call still running is late. A process waits on it, as the
        # order-first arbiter offers only timers someone waits for. It does nothing when it fires
        # (and is not traced).
        yield self.kernel.delay(spec.grace_ms + 1, "grace-expiry")


class Shared:
    """What every runtime of a run shares: the kernel, the world, the run-wide rate windows, file
    locks and produced values, the exploration knobs. Makes each batch's scheduler context."""

    def __init__(self, kernel: Kernel, world: World, scenario: Scenario, jitter: float,
                 arbiter: Arbiter | None) -> None:
        self.kernel, self.world, self.scenario, self.jitter, self.arbiter = kernel, world, scenario, jitter, arbiter
        self.rate_windows: dict[str, list[int]] = {}
        self.file_locks: dict[str, simpy.Resource] = {}
        self.produced: dict[str, Any] = {}  # each call's latest value settled ok, what args_from reads
        #: A crew with subagents starts one for a `delegate` call (see `harness.run.crew`).
        self.delegate: Callable[[Any, Any, str], simpy.Event] | None = None

    def context(self, current: Scenario, batch: Batch, name: str, session: dict[str, Any],
                interrupt: simpy.Event | None) -> SchedulerContext:
        scenario = self.scenario
        return SchedulerContext(self.kernel, self.world, current.catalogue, batch, name, current.call_latency,
                                max_concurrency=scenario.max_concurrency, tool_caps=scenario.tool_caps,
                                interrupt=interrupt if scenario.interrupt is not None else None,
                                grace_ms=scenario.interrupt.grace_ms if scenario.interrupt else 0, jitter=self.jitter,
                                failures=_failures_of(current) if current.call_failures or current.tool_failures
                                else None,
                                execution=scenario.execution, session=session, depends_on=current.depends_on,
                                approvals=scenario.approvals,
                                process_cwd=scenario.world.cwd, arbiter=self.arbiter, faults=scenario.faults,
                                rate_windows=self.rate_windows, args_from=current.args_from, produced=self.produced,
                                file_locks=self.file_locks, delegate=self.delegate, machine=scenario.machine)


def scheduler_of(index: int, agent: str | None) -> str:
    """How a batch's scheduler is named among several hung batches."""
    return f"the scheduler of batch {index}" + (f" ({agent})" if agent else "")


def end_batch(kernel: Kernel, index: int, batch: Batch, start: int, ctx: SchedulerContext, driver: Driver,
               stop: StopReason, agent: str | None = None, peers: Sequence[Peer] = ()) -> BatchRun:
    """Record how a batch ended (a scheduler still running when the kernel stopped hung). `peers`: the
    run's other hung batches (other agents' turns), for a lock cycle across them."""
    if stop is not StopReason.DONE and driver.status is RunStatus.COMPLETED:
        driver.status = RunStatus.HANG
        pending = [h.call.id for h in ctx.handles if not h.triggered]
        driver.error = f"scheduler did not return ({stop.value})" + (
            f"; calls still pending: {', '.join(pending)}" if pending else "")
    # Read from the live simulation before anything is cleaned up; it only reads, so the trace is unchanged.
    waits = (diagnose(ctx, driver.process, scheduler_of(index, agent) if peers else "the scheduler", peers)
             if driver.status is RunStatus.HANG and driver.process else None)
    now = int(kernel.env._now)  # (`kernel.now`; `record_ids` and the enums' values, without their calls)
    kernel.trace.add(now, "batch_end", {"index": index, "status": driver.status._value_, "stop": stop._value_,
                                        "reported": [r.call_id for r in driver.results], "error": driver.error}, True)
    return BatchRun(index, batch, start, now, tuple(driver.results), driver.status, stop, driver.error,
                    agent, waits)


def drain(kernel: Kernel, contexts: Sequence[SchedulerContext], sessions: Sequence[Mapping[str, Any]],
           status: RunStatus, error: str | None, wall_clock: bool, mark: int) -> tuple[RunStatus, str | None, bool]:
    """The end of a run: calls the scheduler abandoned run out (their effects belong in the world),
    then each runtime's end-of-run hooks (a bridge drains what its event loop left)."""
    if status in (RunStatus.COMPLETED, RunStatus.CRASHED):
        # Wait for abandoned calls only, not for background processes a scheduler left behind.
        # (`process._value is PENDING` is `process.is_alive`, without a property call per call of the run.)
        running = [h.process for c in contexts for h in c.handles
                   if h.process is not None and h.process._value is PENDING]
        try:
            if running:
                kernel.run_until(kernel.env.all_of(running))
        except WallClockExceeded as exc:
            status, error, wall_clock = RunStatus.HANG, str(exc), True
        except BaseException as exc:
            if aborts(exc, mark):
                raise
            status, error = RunStatus.SCHEDULER_ERROR, describe_error(exc)
    for session in sessions:
        for hook in session.get(END_OF_RUN, ()):  # a bridge drains what its runtime left (see the context)
            try:
                hook()
            except WallClockExceeded as exc:
                if not wall_clock:
                    status, error, wall_clock = RunStatus.HANG, str(exc), True
            except BaseException as exc:
                if aborts(exc, mark):
                    raise
                if status is RunStatus.COMPLETED:
                    status, error = RunStatus.SCHEDULER_ERROR, describe_error(exc)
    return status, error, wall_clock


def _failures_of(scenario: Scenario) -> Callable[[ToolCall], FailureModel | None]:
    """The injected-failure model of a call: its own, else its tool's."""
    def failures(call: ToolCall) -> FailureModel | None:
        return scenario.call_failures.get(call.id, scenario.tool_failures.get(call.name))

    return failures

