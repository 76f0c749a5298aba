"""`run(scenario, scheduler, seed)`: one deterministic simulation, start to finish.

Owns the run loop: build the world, give each batch of the scenario to the scheduler as a SimPy
process, contain whatever the scheduler does (raise, yield garbage, never return), let calls the
scheduler abandoned run out, and package trace, results and the final world as a `RunResult`. A run
is a pure function of (scenario, scheduler, seed, harness version). It never judges the results
(oracles do) and never prints.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import simpy

from harness.agent.runner import LoopTurns, StaticTurns, Turns
from harness.agent.runtime import Outcome as AgentOutcome
from harness.faults.failures import FailureModel
from harness.model import Batch, CallResult, Outcome, ToolCall
from harness.scenario.spec import Interrupt, Scenario
from harness.schedulers.context import END_OF_RUN, Scheduler, SchedulerContext
from harness.sim.arbiter import Arbiter, Chooser, Decision
from harness.sim.kernel import Kernel, StopReason
from harness.sim.trace import TraceEvent, fingerprint
from harness.sim.trace import sha256 as trace_hash
from harness.world.state import WorldState
from harness.world.world import World


class RunStatus(enum.StrEnum):
    """How the scheduler behaved, before any oracle looks at what it did."""

    COMPLETED = "completed"  # every batch's scheduler returned a list of CallResult
    SCHEDULER_ERROR = "scheduler-error"  # the scheduler raised
    CONTRACT_ERROR = "contract-error"  # it yielded or returned something that breaks the contract
    HANG = "hang"  # it never returned: deadlock, time bound or event budget
    CRASHED = "crashed"  # the fault plan crashed the runtime mid-batch (not the scheduler's fault)


@dataclass(frozen=True)
class BatchRun:
    """One batch as it ran: when it started and ended and what the scheduler reported."""

    index: int
    batch: Batch
    start_ms: int
    end_ms: int
    results: tuple[CallResult, ...]
    status: RunStatus
    stop: StopReason
    error: str | None = None


@dataclass(frozen=True)
class RunResult:
    scenario: Scenario
    scheduler: str
    seed: int
    jitter: float
    batches: tuple[BatchRun, ...]
    trace: tuple[TraceEvent, ...]
    initial: WorldState
    world: World = field(repr=False)
    makespan_ms: int
    status: RunStatus
    error: str | None = None
    #: Order-first runs: the calls picked at each step (replay it with `explore.Tape`).
    tape: tuple[str, ...] | None = None
    decisions: tuple[Decision, ...] = ()
    #: A loop scenario's run: `scenario` holds the batches its model emitted (what oracles read) and
    #: `source` the scenario with its model (what reproducers keep and replays run again).
    source: Scenario | None = None
    #: How the agent's task ended (loop scenarios only).
    agent: AgentOutcome | None = None
    #: An outside watchdog stopped the run (real time ran out): a harness driving many runs should stop too.
    wall_clock_exceeded: bool = False

    @property
    def replayable(self) -> Scenario:
        """The scenario that makes this run again: the loop scenario, or the plain one."""
        return self.source if self.source is not None else self.scenario

    @property
    def results(self) -> tuple[CallResult, ...]:
        return tuple(result for batch in self.batches for result in batch.results)

    @cached_property
    def final(self) -> WorldState:
        return self.world.state()

    @cached_property
    def trace_sha256(self) -> str:
        return trace_hash(self.trace)

    @cached_property
    def fingerprint(self) -> str:
        """SHA-256 over the canonical trace and the final world digest."""
        return fingerprint(self.trace_sha256, self.final.digest())

    def final_files(self) -> dict[str, str]:
        """Path -> SHA-256 of the content, for every regular file of the final world."""
        files: dict[str, str] = self.final.to_json()["files"]
        return files


def _crash(kernel: Kernel, at_ms: int | None) -> simpy.Event:
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

    def arm(self, index: int) -> simpy.Event:
        event = self.kernel.env.event()
        self.current = (index, event)
        return event

    def disarm(self) -> None:
        self.current = None

    def _fire(self, spec: Interrupt) -> Generator[simpy.Event, Any, None]:
        yield self.kernel.delay(spec.at_ms, "interrupt")
        if self.current is not None:
            index, event = self.current
            self.fired = True
            self.kernel.record("interrupt", index=index, grace_ms=spec.grace_ms)
            event.succeed()
            # The end of the grace period is a deadline the liveness oracle judges by, whether or not
            # the scheduler set a timer for it: order-first runs must be able to reach it with calls
            # still running: the first instant a call still running is late. It does nothing when it
            # fires (and is not traced).
            yield self.kernel.delay(spec.grace_ms + 1, "grace-expiry")


#: Jitter multiplies latencies by up to e^jitter: beyond this, virtual times overflow any bound.
MAX_JITTER = 10.0


class WallClockExceeded(Exception):
    """Raised into a run by an outside watchdog (the CLI's `--wall-timeout`) when the code under test
    spins without yielding. The simulation itself never reads the wall clock."""


class _Contained(Exception):
    """Raised inside the driver to end a batch whose scheduler broke the contract."""


def run(scenario: Scenario, scheduler: Scheduler, seed: int, *, jitter: float = 0.0,
        chooser: Chooser | None = None) -> RunResult:
    """Run every batch of `scenario` under `scheduler` with random streams from `seed`.

    `jitter` > 0 multiplies every latency by a factor drawn log-uniformly from
    [e^-jitter, e^jitter] (stream `jitter/<call>/<attempt>`): an exploration knob that varies
    completion orders; latency statistics of jittered runs are not the scenario's.

    With a `chooser`, the run is order-first (see `harness.sim.arbiter`): calls advance one
    touch point at a time in the order the chooser picks, and `RunResult.tape` records the picks.
    """
    if isinstance(jitter, bool) or not isinstance(jitter, int | float) or not 0 <= jitter <= MAX_JITTER:
        raise ValueError(f"jitter must be a number between 0 and {MAX_JITTER} (a log-scale factor), got {jitter!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    kernel = Kernel(seed, scenario.limits)
    world = World.from_state(scenario.world)
    name = getattr(scheduler, "name", type(scheduler).__name__)
    kernel.record("run", scenario=scenario.name, scheduler=name, seed=seed, jitter=jitter or None,
                  # Which chooser made the tape is not part of the run: any chooser that makes the same
                  # choices makes the same run, and a reproducer replays it with a plain Tape.
                  explorer="order-first" if chooser is not None else None)
    arbiter = Arbiter(kernel, chooser, {c.id: i for i, c in enumerate(scenario.calls)}) if chooser else None
    # A loop scenario's batches come from its model, turn by turn; a plain one's are fixed.
    turns: Turns = (LoopTurns(scenario, kernel, arbiter.positions if arbiter else None)
                    if scenario.agent is not None else StaticTurns(scenario))
    batch_runs: list[BatchRun] = []
    contexts: list[SchedulerContext] = []
    user_interrupt = _UserInterrupt(kernel, scenario.interrupt)
    crash = _crash(kernel, scenario.faults.crash_at_ms)
    session: dict[str, Any] = {}
    rate_windows: dict[str, list[int]] = {}
    status, error = RunStatus.COMPLETED, None
    wall_clock = False
    produced: dict[str, Any] = {}  # each call's latest value settled ok, what args_from reads
    batch = turns.next_batch(None)
    index = -1
    while batch is not None:
        index += 1
        current = turns.current
        interrupt = user_interrupt.arm(index)
        ctx = SchedulerContext(kernel, world, current.catalogue, batch, name, current.call_latency,
                               max_concurrency=scenario.max_concurrency, tool_caps=scenario.tool_caps,
                               interrupt=interrupt,
                               grace_ms=scenario.interrupt.grace_ms if scenario.interrupt else 0, jitter=jitter,
                               failures=_failures_of(current),
                               execution=scenario.execution, session=session, depends_on=current.depends_on,
                               process_cwd=scenario.world.cwd, arbiter=arbiter, faults=scenario.faults,
                               rate_windows=rate_windows, args_from=current.args_from, produced=produced)
        contexts.append(ctx)
        driver = _Driver(scheduler, batch, ctx)
        start = kernel.now
        kernel.record("batch", index=index, label=batch.label, calls=list(batch.ids))
        process = kernel.env.process(driver.drive())
        try:
            stop = kernel.run_until(kernel.env.any_of([process, crash]))
            if crash.processed and not process.triggered:
                driver.crash(process)
        except WallClockExceeded as exc:
            stop, driver.status, driver.error = StopReason.DONE, RunStatus.HANG, str(exc)
            wall_clock = True
        except Exception as exc:  # an event of the scheduler's own failed with nobody waiting
            stop, driver.status, driver.error = StopReason.DONE, RunStatus.SCHEDULER_ERROR, _describe(exc)
        if stop is not StopReason.DONE and driver.status is RunStatus.COMPLETED:
            driver.status = RunStatus.HANG
            pending = [h.call.id for h in ctx.handles if not h.triggered]
            driver.error = f"scheduler did not return ({stop.value})" + (
                f"; calls still pending: {', '.join(pending)}" if pending else "")
        kernel.record("batch_end", index=index, status=driver.status.value, stop=stop.value,
                      reported=[r.call_id for r in driver.results], error=driver.error)
        batch_runs.append(BatchRun(index, batch, start, kernel.now, tuple(driver.results), driver.status,
                                   stop, driver.error))
        if driver.status is not RunStatus.COMPLETED:
            status, error = driver.status, driver.error
            turns.stop(f"the batch ended with {driver.status.value}")
            break
        if crash.processed:
            status, error = RunStatus.CRASHED, "the runtime crashed between turns"
            turns.stop("the runtime crashed")
            break
        user_interrupt.disarm()
        if user_interrupt.fired:
            turns.stop("the user interrupted the turn")
            break  # the user interrupted this turn: the model never sends the next one
        batch = turns.next_batch(driver.results)
    makespan = batch_runs[-1].end_ms if batch_runs else 0
    if scenario.agent is not None:
        makespan = max(makespan, kernel.now)  # a task ends with its last decision, think time included
    if status in (RunStatus.COMPLETED, RunStatus.CRASHED):
        # Calls the scheduler abandoned may still be running; their effects belong in the world.
        # Wait for those only, not for background processes a scheduler left behind.
        running = [h.process for c in contexts for h in c.handles if h.process is not None and h.process.is_alive]
        try:
            if running:
                kernel.run_until(kernel.env.all_of(running))
        except Exception as exc:
            status, error = RunStatus.SCHEDULER_ERROR, _describe(exc)
    for hook in session.get(END_OF_RUN, ()):  # a bridge drains what its runtime left (see the context)
        try:
            hook()
        except Exception as exc:
            if status is RunStatus.COMPLETED:
                status, error = RunStatus.SCHEDULER_ERROR, _describe(exc)
    kernel.record("quiesce", makespan=makespan)
    return RunResult(turns.realized(), name, seed, jitter, tuple(batch_runs), tuple(kernel.trace.events),
                     scenario.world, world, makespan, status, error, arbiter.tape if arbiter else None,
                     tuple(arbiter.decisions) if arbiter else (), wall_clock_exceeded=wall_clock,
                     source=scenario if scenario.agent is not None else None, agent=turns.outcome)


def _failures_of(scenario: Scenario) -> Callable[[ToolCall], FailureModel | None]:
    """The injected-failure model of a call: its own, else its tool's."""
    def failures(call: ToolCall) -> FailureModel | None:
        return scenario.call_failures.get(call.id, scenario.tool_failures.get(call.name))

    return failures


class _Driver:
    """Runs the user's scheduler generator, checking every yield and the returned value."""

    def __init__(self, scheduler: Scheduler, batch: Batch, ctx: SchedulerContext) -> None:
        self.scheduler, self.batch, self.ctx = scheduler, batch, ctx
        self.results: list[CallResult] = []
        self.status = RunStatus.COMPLETED
        self.error: str | None = None
        self.crashed = False

    def drive(self) -> Generator[simpy.Event, Any, None]:
        try:
            produced = self.scheduler(self.batch, self.ctx)
        except WallClockExceeded:
            raise
        except Exception as exc:
            self._fail(RunStatus.SCHEDULER_ERROR, _describe(exc))
            return
        if isinstance(produced, Generator):
            try:
                returned = yield from self._steps(produced)
            except _Contained:
                return
        else:
            returned = produced  # a plain function that returned its results without waiting
        self._accept(returned)

    def _steps(self, gen: Generator[Any, Any, Any]) -> Generator[simpy.Event, Any, Any]:
        send: Any = None
        throw: BaseException | None = None
        while True:
            try:
                item = gen.throw(throw) if throw is not None else gen.send(send)
            except StopIteration as stop:
                return stop.value
            except WallClockExceeded:
                raise
            except Exception as exc:
                self._fail(RunStatus.SCHEDULER_ERROR, _describe(exc))
                raise _Contained from None
            if not isinstance(item, simpy.Event):
                gen.close()
                self._fail(RunStatus.CONTRACT_ERROR, f"scheduler yielded {_short(item)}, not a SimPy event")
                raise _Contained
            try:
                send, throw = (yield item), None
            except Exception as exc:  # a failed event: hand the exception to the scheduler
                if self.crashed:  # the process is dead: nothing of the scheduler runs any more
                    gen.close()
                    raise _Contained from None
                send, throw = None, exc

    def _accept(self, returned: Any) -> None:
        if not isinstance(returned, Sequence) or isinstance(returned, str | bytes):
            self._fail(RunStatus.CONTRACT_ERROR, f"scheduler returned {_short(returned)}, not a list of CallResult")
            return
        bad = [i for i, r in enumerate(returned) if not isinstance(r, CallResult)]
        if bad:
            self._fail(RunStatus.CONTRACT_ERROR,
                       f"scheduler returned {_short(returned[bad[0]])} at position {bad[0]}, not a CallResult")
            return
        self.results = list(returned)
        self.ctx.kernel.record("report", order=[r.call_id for r in self.results])

    def crash(self, process: simpy.Process) -> None:
        """The runtime died mid-turn: no results, the scheduler never runs again, and every call in
        flight stops (one whose tool ignores cancellation, e.g. a request already sent, lands anyway)."""
        self.crashed = True
        self.status, self.error = RunStatus.CRASHED, "the runtime crashed mid-batch"
        self.results = []
        self.ctx.crashed = True
        for handle in self.ctx.handles:
            if not handle.triggered:
                self.ctx.cancel(handle, outcome=Outcome.UNKNOWN, reason="runtime crashed")
        if process.is_alive:
            process.interrupt("runtime crashed")

    def _fail(self, status: RunStatus, error: str) -> None:
        self.status, self.error = status, error
        self.ctx.kernel.record("scheduler_failed", status=status.value, error=error)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
