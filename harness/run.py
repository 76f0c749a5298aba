"""`run(scenario, scheduler, seed)`: one deterministic simulation, start to finish.

Owns the run loop: build the world, give each batch of the scenario to the scheduler as a SimPy
process, contain whatever the scheduler does (raise, yield garbage, never return), let calls the
scheduler abandoned run out, and package trace, results and the final world as a `RunResult`. A run
is a pure function of (scenario, scheduler, seed, harness version). It never judges the results
(oracles do) and never prints.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Generator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import simpy

from harness.agent.runner import LoopTurns, StaticTurns, Turns
from harness.agent.runtime import Outcome as AgentOutcome
from harness.faults.failures import FailureModel
from harness.model import Batch, CallResult, Outcome, ToolCall
from harness.realtime import (
    WallClockExceeded,
    aborts,
    interrupt_swallowed,
    per_run_limit,
    sigint_mark,
    wall_clock_watchdog,
)
from harness.scenario.spec import Interrupt, Scenario
from harness.schedulers.context import END_OF_RUN, Scheduler, SchedulerContext
from harness.schedulers.waits import Diagnosis, Peer, diagnose
from harness.sim.arbiter import Arbiter, Chooser, Decision
from harness.sim.collector import held_full_collections
from harness.sim.kernel import Kernel, StopReason
from harness.sim.trace import TraceEvent, canonical_json, fingerprint
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
    #: The agent whose turn this was (`[[agents]]` scenarios only).
    agent: str | None = None
    #: A hung batch: what each unfinished call waited on (harness.schedulers.waits; never traced).
    waits: Diagnosis | None = None


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
    #: How each agent's task ended, by name in the scenario's order (`[[agents]]` scenarios only).
    agents: Mapping[str, AgentOutcome] = field(default_factory=dict)
    #: An outside watchdog stopped the run (real time ran out): a harness driving many runs should stop too.
    wall_clock_exceeded: bool = False
    #: Each call's latest value that ended ok and was not abandoned: what `args_from` read. Oracles
    #: take it for a producer whose result was never reported (a crashed batch reports nothing). Not
    #: in the trace (its `end` event has the value's digest), so not in the fingerprint.
    produced: Mapping[str, Any] = field(default_factory=dict)

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


def scheduler_label(scheduler: object) -> tuple[str, str | None]:
    """The name a scheduler goes by in traces and reports, and what is wrong with its `name` (None if
    nothing): a `name` that is not a string (or that raises when read) is a contract error, and the
    run is labelled by the class instead."""
    fallback = f"<{type(scheduler).__name__}>"
    try:
        name = getattr(scheduler, "name", type(scheduler).__name__)
    except Exception as exc:
        return fallback, f"reading the scheduler's name raised {describe_error(exc)}"
    if type(name) is not str:
        return fallback, f"the scheduler's name is {type(name).__name__} {_short(name)}, not a string"
    return name, None


class _Contained(Exception):
    """Raised inside the driver to end a batch whose scheduler broke the contract."""


def run(scenario: Scenario, scheduler: Scheduler | str, seed: int, *, jitter: float = 0.0,
        chooser: Chooser | None = None) -> RunResult:
    """Run every batch of `scenario` under `scheduler` with random streams from `seed`.

    `scheduler` is a scheduler (called with a batch and a context: a built-in policy's instance,
    `from_asyncio(execute)`) or a name, resolved with `get_scheduler` as the CLI, `explore` and
    `check_scheduler` resolve it: a built-in policy (`"serial"`, `"hermes_segments"`) or
    `"package.module:attribute"`, imported and built under the import limit (600 s, never charged to
    the run's wall-clock limit: see `harness.schedulers.registry.build_scheduler`). An unknown name
    raises `UnknownSchedulerError` (a `LookupError` listing the valid names) before anything runs.

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
    limit = per_run_limit()
    if isinstance(scheduler, str):  # a name, as every other entry point takes it
        from harness.schedulers.registry import build_scheduler

        scheduler = build_scheduler(scheduler)
    held = held_full_collections(sum(len(batch.calls) for batch in scenario.batches))
    if not limit:
        with held:
            return _run(scenario, scheduler, seed, jitter, chooser)
    what = f"the run of {scenario.name!r} under {scheduler_label(scheduler)[0]}, seed {seed},"
    with wall_clock_watchdog(limit, what), held:
        result = _run(scenario, scheduler, seed, jitter, chooser)
    if result.wall_clock_exceeded:
        raise WallClockExceeded(result.error or "real time ran out", result)
    return result


def _run(scenario: Scenario, scheduler: Scheduler, seed: int, jitter: float, chooser: Chooser | None) -> RunResult:
    mark = sigint_mark()
    kernel = Kernel(seed, scenario.limits)
    world = World.from_state(scenario.world)
    name, name_problem = scheduler_label(scheduler)
    kernel.record("run", scenario=scenario.name, scheduler=name, seed=seed, jitter=jitter or None,
                  # Which chooser made the tape is not part of the run: any chooser that makes the same
                  # choices makes the same run, and a reproducer replays it with a plain Tape.
                  explorer="order-first" if chooser is not None else None)
    arbiter = Arbiter(kernel, chooser, {c.id: i for i, c in enumerate(scenario.calls)}) if chooser else None
    shared = Shared(kernel, world, scenario, jitter, arbiter)
    if scenario.agents:  # several agents at once, each turn by turn
        from harness.agent.crew import run_crew

        return run_crew(scenario, scheduler, seed, name, name_problem, shared, mark)
    # A loop scenario's batches come from its model, turn by turn; a plain one's are fixed.
    turns: Turns = (LoopTurns(scenario, kernel, arbiter.positions if arbiter else None)
                    if scenario.agent is not None else StaticTurns(scenario))
    batch_runs: list[BatchRun] = []
    contexts: list[SchedulerContext] = []
    user_interrupt = _UserInterrupt(kernel, scenario.interrupt)
    crash = crash_event(kernel, scenario.faults.crash_at_ms)
    session: dict[str, Any] = {}
    status, error = RunStatus.COMPLETED, None
    wall_clock = False
    batch = turns.next_batch(None)
    index = -1
    while batch is not None:
        index += 1
        current = turns.current
        interrupt = user_interrupt.arm(index)
        ctx = shared.context(current, batch, name, session, interrupt)
        contexts.append(ctx)
        driver = Driver(scheduler, ctx.batch, ctx, mark, name_problem)  # the scheduler's own copy
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
        except BaseException as exc:  # an event of the scheduler's own failed with nobody waiting
            if aborts(exc, mark):
                raise
            stop, driver.status, driver.error = StopReason.DONE, RunStatus.SCHEDULER_ERROR, describe_error(exc)
        if driver.stop is not None:  # the driver saw the budget spent on resumes SimPy never counts
            stop = driver.stop
        if interrupt_swallowed(mark):  # a Ctrl-C the scheduler's code caught and swallowed
            raise KeyboardInterrupt
        batch_runs.append(end_batch(kernel, index, batch, start, ctx, driver, stop))
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
    status, error, wall_clock = drain(kernel, contexts, [session], status, error, wall_clock, mark)
    kernel.record("quiesce", makespan=makespan)
    return RunResult(turns.realized(), name, seed, jitter, tuple(batch_runs), tuple(kernel.trace.events),
                     scenario.world, world, makespan, status, error, arbiter.tape if arbiter else None,
                     tuple(arbiter.decisions) if arbiter else (), wall_clock_exceeded=wall_clock,
                     source=scenario if scenario.agent is not None else None, agent=turns.outcome,
                     produced=dict(shared.produced))


class Shared:
    """What every runtime of a run shares: the kernel, the world, the run-wide rate windows, file
    locks and produced values, the exploration knobs. Makes each batch's scheduler context."""

    def __init__(self, kernel: Kernel, world: World, scenario: Scenario, jitter: float,
                 arbiter: Arbiter | None) -> None:
        self.kernel, self.world, self.scenario, self.jitter, self.arbiter = kernel, world, scenario, jitter, arbiter
        self.rate_windows: dict[str, list[int]] = {}
        self.file_locks: dict[str, simpy.Resource] = {}
        self.produced: dict[str, Any] = {}  # each call's latest value settled ok, what args_from reads
        #: A crew with subagents starts one for a `delegate` call (see `harness.agent.crew`).
        self.delegate: Callable[[Any, Any], simpy.Event] | None = None

    def context(self, current: Scenario, batch: Batch, name: str, session: dict[str, Any],
                interrupt: simpy.Event | None) -> SchedulerContext:
        scenario = self.scenario
        return SchedulerContext(self.kernel, self.world, current.catalogue, batch, name, current.call_latency,
                                max_concurrency=scenario.max_concurrency, tool_caps=scenario.tool_caps,
                                interrupt=interrupt if scenario.interrupt is not None else None,
                                grace_ms=scenario.interrupt.grace_ms if scenario.interrupt else 0, jitter=self.jitter,
                                failures=_failures_of(current),
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
    kernel.record("batch_end", index=index, status=driver.status.value, stop=stop.value,
                  reported=[r.call_id for r in driver.results], error=driver.error)
    return BatchRun(index, batch, start, kernel.now, tuple(driver.results), driver.status, stop, driver.error,
                    agent, waits)


def drain(kernel: Kernel, contexts: Sequence[SchedulerContext], sessions: Sequence[Mapping[str, Any]],
           status: RunStatus, error: str | None, wall_clock: bool, mark: int) -> tuple[RunStatus, str | None, bool]:
    """The end of a run: calls the scheduler abandoned run out (their effects belong in the world),
    then each runtime's end-of-run hooks (a bridge drains what its event loop left)."""
    if status in (RunStatus.COMPLETED, RunStatus.CRASHED):
        # Wait for abandoned calls only, not for background processes a scheduler left behind.
        running = [h.process for c in contexts for h in c.handles if h.process is not None and h.process.is_alive]
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


class Driver:
    """Runs the user's scheduler generator, checking every yield and the returned value.

    Whatever the scheduler's code raises — `SystemExit`, `GeneratorExit`, a `KeyboardInterrupt` it
    raised itself, a custom `BaseException` — ends the batch as a `scheduler-error`; only a real
    Ctrl-C and the wall-clock watchdog go through (see `harness.realtime.aborts`).
    """

    def __init__(self, scheduler: Scheduler, batch: Batch, ctx: SchedulerContext, mark: int = 0,
                 name_problem: str | None = None) -> None:
        self.scheduler, self.batch, self.ctx = scheduler, batch, ctx
        self.results: list[CallResult] = []
        self.status = RunStatus.COMPLETED
        self.error: str | None = None
        self.crashed = False
        self.mark = mark
        self.name_problem = name_problem
        #: Set when the driver itself stopped the batch at a kernel limit (see `_steps`).
        self.stop: StopReason | None = None
        #: The SimPy process driving the scheduler (where a hang diagnosis starts).
        self.process: simpy.Process | None = None

    def drive(self) -> Generator[simpy.Event, Any, None]:
        self.process = self.ctx.env.active_process
        if self.name_problem is not None:
            self._fail(RunStatus.CONTRACT_ERROR, self.name_problem)
            return
        try:
            produced = self.scheduler(self.batch, self.ctx)
        except WallClockExceeded:
            raise
        except BaseException as exc:
            if aborts(exc, self.mark):
                raise
            self._fail(RunStatus.SCHEDULER_ERROR, describe_error(exc))
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
        kernel = self.ctx.kernel
        send: Any = None
        throw: BaseException | None = None
        while True:
            try:
                item = gen.throw(throw) if throw is not None else gen.send(send)
            except StopIteration as stop:
                return stop.value
            except WallClockExceeded:
                raise
            except BaseException as exc:
                if aborts(exc, self.mark):
                    raise
                self._fail(RunStatus.SCHEDULER_ERROR, describe_error(exc))
                raise _Contained from None
            if not isinstance(item, simpy.Event):
                self._close(gen)
                self._fail(RunStatus.CONTRACT_ERROR, f"scheduler yielded {_short(item)}, not a SimPy event")
                raise _Contained
            if item.callbacks is None:
                # An event already processed resumes the generator at once, inside the same SimPy
                # step: a loop re-yielding one would spin forever without the kernel counting a step.
                # Every such resume counts against the event budget.
                kernel.steps += 1
                if kernel.steps >= kernel.limits.event_budget:
                    self._close(gen)
                    self.stop = StopReason.EVENT_BUDGET
                    raise _Contained
            try:
                send, throw = (yield item), None
            except Exception as exc:  # a failed event: hand the exception to the scheduler
                if self.crashed:  # the process is dead: nothing of the scheduler runs any more
                    gen.close()
                    raise _Contained from None
                send, throw = None, exc

    def _close(self, gen: Generator[Any, Any, Any]) -> None:
        """Close a generator the batch is done with; whatever its clean-up raises is already moot."""
        try:
            gen.close()
        except WallClockExceeded:
            raise
        except BaseException as exc:
            if aborts(exc, self.mark):
                raise

    def _accept(self, returned: Any) -> None:
        try:
            # The CallResults the harness settled calls with are valid by construction; only others
            # (built or altered by the scheduler) are checked field by field.
            made = {id(h._value) for h in self.ctx.handles if h.triggered}
            results, problem = _validated(returned, made)
        except WallClockExceeded:
            raise
        except BaseException as exc:  # a raising __len__, __iter__ or property of the scheduler's
            if aborts(exc, self.mark):
                raise
            results, problem = [], f"scheduler returned results that cannot be read ({describe_error(exc)})"
        if problem is not None:
            self._fail(RunStatus.CONTRACT_ERROR, problem)
            return
        self.results = results
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


def _validated(returned: Any, made: AbstractSet[int] = frozenset()) -> tuple[list[CallResult], str | None]:
    """The scheduler's results as plain `CallResult`s the oracles can trust, or what is wrong with
    them: not a sequence, an element that is not a `CallResult`, an id that is not a string, a value
    that is not JSON, a field of the wrong type. A subclass is copied field by field into a plain
    `CallResult`, so nothing of the scheduler's runs again once the batch is over."""
    if not isinstance(returned, Sequence) or isinstance(returned, str | bytes):
        return [], f"scheduler returned {_short(returned)}, not a list of CallResult"
    results: list[CallResult] = []
    for position, item in enumerate(list(returned)):
        if id(item) in made and type(item) is CallResult:
            results.append(item)
            continue
        if not isinstance(item, CallResult):
            return [], f"scheduler returned {_short(item)} at position {position}, not a CallResult"
        if type(item) is not CallResult:
            item = CallResult(item.call_id, item.outcome, item.value, item.error, item.attempts, item.start_ms,
                              item.end_ms, tuple(item.notes))
        problem = _field_problem(item)
        if problem is not None:
            return [], f"scheduler returned a CallResult at position {position} whose {problem}"
        results.append(item)
    return results, None


def _field_problem(result: CallResult) -> str | None:
    if type(result.call_id) is not str:
        return f"call_id is {type(result.call_id).__name__} {_short(result.call_id)}, not a string"
    if type(result.outcome) is not Outcome:
        return f"outcome is {type(result.outcome).__name__}, not an Outcome"
    if result.error is not None and type(result.error) is not str:
        return f"error is {type(result.error).__name__}, not a string"
    for field_name in ("attempts", "start_ms", "end_ms"):
        if type(getattr(result, field_name)) is not int:
            return f"{field_name} is {type(getattr(result, field_name)).__name__}, not an int"
    if type(result.notes) is not tuple or any(type(note) is not str for note in result.notes):
        return "notes are not a tuple of strings"
    value = result.value
    if value is None or type(value) in (str, int, float, bool):
        return None  # the common case, JSON as it is
    try:
        canonical_json(value)
    except (TypeError, ValueError, RecursionError) as exc:
        return f"value is not JSON ({type(exc).__name__}: {exc})"
    return None


def describe_error(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # an exception of the scheduler's whose __str__ raises
        text = "<unprintable>"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _short(value: object) -> str:
    try:
        text = repr(value)
    except Exception:  # a value of the scheduler's whose __repr__ raises
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 80 else text[:77] + "..."
