"""`from_threads`: a runtime's real thread-based executor, run unchanged on the virtual clock.

Owns the scheduler: the user's plain sync `execute(tool_calls, tools)` (or `execute(tool_calls,
tools, interrupted)`) runs in a bridge thread; `tools[name](**arguments)` — or `tools(tool_call)` for
exactly that call — runs the batch's call in the simulation and blocks the calling thread until the
call ends, returning its value or raising `ToolFailed`; `interrupted` is a `threading.Event`-like
flag set at the user interrupt's virtual time. Inside, `threading`, `queue`, `time` and
`concurrent.futures` (its real `ThreadPoolExecutor`, `wait`, `as_completed`) work on the turnstile:
one thread runs at a time and switches only where it blocks, timeouts count virtual time. Which
runnable thread goes next is the lowest in creation order in plain runs and a choice of the run's
arbiter (`@thread:NNN` on the tape) in order-first runs, so explore, PCT and exhaustive search order
thread switches like call steps, and tapes replay them. Threads the executor leaves behind when it
returns or raises (a pool shut down without waiting: the call a worker runs, the queued calls it starts
next) are not tidied away: they run on in virtual time, as in a real process, while the run's later
batches run and up to `RUN_ON_MS` after its last one (`harness.bridges.leftovers`), so what they do
lands in the run and the oracles judge it (`orphaned-call`, `start-after-interrupt`). Then, or at once
when no thread left can do anything more (idle workers waiting for work nobody submits), or when the
run hangs or the runtime crashes, every thread still alive is released (`ThreadReleased` unwinds it)
and its OS thread joined: no real thread outlives its run. It never decides an order itself.

    def execute(tool_calls, tools, interrupted):            # seed 000's shape, plain concurrent.futures
        with ThreadPoolExecutor(max_workers=8) as pool:
            futures = [pool.submit(tools, tc) for tc in tool_calls]
            ...
        return [{"tool_call_id": tc.id, "content": f.result()} for tc, f in zip(tool_calls, futures)]

    scheduler = from_threads(execute)
"""

from __future__ import annotations

import concurrent.futures.thread as futures_thread
import inspect
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from functools import partial
from heapq import heappush
from operator import attrgetter
from typing import Any

import simpy
from simpy.events import NORMAL, PENDING

from harness.bridges.asyncio.asking import Asking
from harness.bridges.asyncio.calls import ToolFailed
from harness.bridges.leftovers import RUN_ON_MS, left_running
from harness.bridges.naming import origin_name
from harness.bridges.planners.adapters import OpenAIToolCall, openai_tool_calls
from harness.bridges.threads import primitives
from harness.bridges.threads import thread as bridged_thread
from harness.bridges.threads.patches import Installation
from harness.bridges.threads.pools import number_pools, stop_numbering
from harness.bridges.threads.reaper import Reaper
from harness.bridges.threads.results import read_results
from harness.bridges.threads.turnstile import (
    DONE,
    RUNNABLE,
    BridgeThread,
    Turnstile,
    _by_ident,
    _get_ident,
    green,
)
from harness.diagnosis.threads import thread_waits
from harness.diagnosis.wait import Wait
from harness.model import Batch, CallResult, Outcome, ToolCall
from harness.scheduling.context import CallHandle, SchedulerContext, SchedulerProcess

Execute = Callable[..., Sequence[Any]]


class InterruptFlag(primitives.Event):
    """The user interrupt as a `threading.Event`: `is_set()`, `wait(timeout)`. The bridge sets it at
    the interrupt's virtual time; setting or clearing it from the executor changes nothing else."""

    __slots__ = ()

    def __init__(self) -> None:
        self._serial = 0
        self._flag = False
        self._waiters = []


class ThreadTools(Mapping[str, Callable[..., Any]]):
    """`tools[name](**arguments)` runs the first call of the batch with that name and those arguments
    not run yet (the last one again once all have: a retry); `tools(tool_call)` runs that very call
    (an OpenAI tool call, a `ToolCall` or its id). Either blocks the calling thread until the call
    ends and returns its value, or raises `ToolFailed`."""

    def __init__(self, batch: Batch, ctx: SchedulerContext, turnstile: Turnstile) -> None:
        self.batch, self.ctx, self.turnstile = batch, ctx, turnstile
        self.handles: dict[str, list[CallHandle]] = {}
        #: Each call's latest approval request, made by its tool (see `harness.bridges.asyncio.asking`).
        self.asking: dict[str, Asking] = {}
        #: The calls a thread is inside (running, or asking the user), in the order they went in: the
        #: simulation will wake their threads.
        self.in_flight: list[str] = []
        calls = batch.calls  # (mapped in C: no comprehension's frame at every batch)
        self._names = sorted(set(map(_name_of, calls)))
        self._by_id = dict(zip(map(_id_of, calls), calls, strict=True))

    def __getitem__(self, name: str) -> Callable[..., Any]:
        if name not in self._names:
            raise KeyError(name)

        def tool(**arguments: Any) -> Any:
            return self._run(self._match(name, arguments))

        tool.__name__ = name
        return tool

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __call__(self, tool_call: OpenAIToolCall | ToolCall | str) -> Any:
        call_id = tool_call if isinstance(tool_call, str) else tool_call.id
        if call_id not in self._by_id:
            raise KeyError(f"no call {call_id!r} in this batch")
        return self._run(self._by_id[call_id])

    def _match(self, name: str, arguments: dict[str, Any]) -> ToolCall:
        same = [c for c in self.batch if c.name == name and c.parsed_arguments() == arguments]
        if not same:
            same = [c for c in self.batch if c.name == name]
        fresh = [c for c in same if c.id not in self.handles]
        return fresh[0] if fresh else same[-1]

    def _run(self, call: ToolCall) -> Any:
        me = _by_ident.get(_get_ident())  # `current()`, inlined: every call comes here
        turnstile, ctx, call_id = self.turnstile, self.ctx, call.id
        if me is None or me.turnstile is not turnstile:
            raise RuntimeError("bridged tools are called from the executor's own threads")
        # A thread released at the end of its run starts nothing more (a pool worker catches
        # `ThreadReleased` into its future and would take the next queued call).
        if me.killed:
            turnstile.check(me)
        self.in_flight.append(call_id)
        try:
            # The tool asks the user first (harness.scheduling.approvals); `needs_approval`'s guard, inlined.
            if ctx._approvals is not None and ctx.needs_approval(call):
                asking = self.asking[call_id] = Asking(ctx, call)
                refused = asking.wait_in_thread(turnstile, me)
                if refused is not None:
                    raise ToolFailed(refused.error or "denied by the user")
                if me.killed:
                    turnstile.check(me)
            started = self.handles.get(call_id)
            handle = ctx.start(call, attempt=1 if started is None else len(started) + 1)
            if started is None:  # (after `start`: a call it refused has no entry)
                self.handles[call_id] = [handle]
            else:
                started.append(handle)
            if handle._value is PENDING:  # `triggered`, without the property
                handle.callbacks.append(partial(_wake_on_end, turnstile, me))
                while handle._value is PENDING:
                    turnstile.park(me)
        finally:
            self.in_flight.remove(call_id)
        result: CallResult = handle._value  # `handle.result` without two properties: it has settled
        if result.outcome is not Outcome.OK:
            raise ToolFailed(result.error or result.outcome.value)
        return result.value


_name_of, _id_of = attrgetter("name"), attrgetter("id")
_new = object.__new__


def _wake_on_end(turnstile: Turnstile, thread: BridgeThread, _event: simpy.Event) -> None:
    """A started call's callback (with `functools.partial`: no closure a call): it wakes its thread."""
    turnstile.wake(thread)


class _BatchRun:
    """One batch: the turnstile, its patches and the SimPy process that drives it (`FromThreads.__call__`
    runs `_drive_until`, then `results`)."""

    def __init__(self, owner: FromThreads, batch: Batch, ctx: SchedulerContext) -> None:
        self.ctx = ctx
        # Order-first runs: thread switches are the arbiter's choices. The context keeps its arbiter
        # private (schedulers never choose orders); a bridge must offer its switches to it.
        self.arbiter = ctx._arbiter
        self.wake: simpy.Event = ctx.env.event()
        # The turnstile tells the driver a thread became runnable only while the driver waits for that
        # (its `on_wake` is `_signal` then, else None): no call at every other wake.
        self.turnstile = Turnstile(lambda: ctx.kernel.now, None, lambda: ctx.kernel.steps)
        self.turnstile.yields_switch = self.arbiter is not None
        self.turnstile.direct = self.arbiter is None
        self.tools = ThreadTools(batch, ctx, self.turnstile)
        self.flag = InterruptFlag()
        if ctx.interrupt.triggered:
            self.flag._flag = True
        else:
            ctx.interrupt.callbacks.append(self._interrupted)
        self.outcome: list[Any] = []
        calls = openai_tool_calls(batch)
        takes_flag = owner.takes_flag
        execute = owner.execute

        def main() -> None:
            self.outcome.append(execute(calls, self.tools, self.flag) if takes_flag else execute(calls, self.tools))

        self.reaper = Reaper(ctx.kernel, self._stopped)
        self.patches = Installation(owner.namespaces, ctx.machine)
        number_pools(self.turnstile, ctx)
        self.closed = False
        self.main = self.turnstile.spawn(main, "MainThread")
        self.stopped_waits: list[Wait] = []
        #: The process that drives the threads the executor left behind (see `hand_on`).
        self.running_on: simpy.Process | None = None

    def _interrupted(self, _event: simpy.Event) -> None:
        self.flag.set()

    def _signal(self) -> None:
        # Once: the driver resumes and makes a new `wake` before it waits again. Not once released (see
        # `close`): the reaper releases threads because the run is stopping, and waking the driver then
        # would keep it going.
        self.turnstile.on_wake = None
        # `self.wake.succeed()`, inline, and `env.schedule(wake)` (SimPy's own push) without its two Python
        # calls (once per wake the driver waits for; the wake is always pending here: a new one each wait).
        wake = self.wake
        wake._ok, wake._value = True, None
        env = wake.env
        heappush(env._queue, (env._now, NORMAL, next(env._eid), wake))

    def _stopped(self, why: str) -> None:
        # What each thread waits on, read before they are released: the run's hang diagnosis reports it.
        self.stopped_waits = thread_waits(self.turnstile, {call.id: call for call in self.ctx.batch})
        self.ctx.note(f"threads: the run stops with threads waiting ({why}); releasing them")
        self.close()

    def results(self) -> list[CallResult]:
        """Once the executor's own thread has ended (the batch was not released): what it returned, as
        results, or what it raised, raised."""
        ctx = self.ctx
        for thread in self.turnstile.threads:
            if thread.error is not None and thread is not self.main:
                ctx.note(f"thread {thread.name} died: {type(thread.error).__name__}: {thread.error}")
        if self.main.error is not None:
            raise self.main.error
        return read_results(self.outcome[0], self.tools.batch, ctx, self.tools.handles,  # type: ignore[no-any-return]
                            self.tools.asking)

    def _drive_until(self, done: Callable[[], bool] | None) -> Generator[simpy.Event, Any, None]:
        """Run the batch's threads, one at a time, waiting on the simulation (a call, a timeout) when
        none is runnable, until `done()` (None: until the executor's own thread has ended) or the
        threads are released."""
        ctx, turnstile, reaper, main = self.ctx, self.turnstile, self.reaper, self.main
        plain = self.arbiter is None
        # The driver's every step inlines `turnstile.run` (on greenlets), `first_runnable()`, the guards of
        # `next_deadline` and `expire`, `reaper.arm()` and `disarm()`, and `wake.triggered`.
        green_run = green.run if turnstile.green else None
        watch = reaper._watch
        while not (main.state == DONE if done is None else done()) and not self.closed:
            if plain:
                if turnstile.ready:
                    for first in turnstile.threads:
                        if first.state == RUNNABLE:
                            break
                    else:
                        first = None
                    if first is not None:
                        if green_run is not None:
                            green_run(turnstile, first, _by_ident, _get_ident())
                        else:
                            turnstile.run(first)
                        continue
            else:
                runnable = turnstile.runnable()
                if runnable:
                    turnstile.run((yield from self._choose(runnable)))
                    continue
            deadline = turnstile.next_deadline() if turnstile.timed else None
            wake = self.wake
            # Never negative: a deadline the clock has already reached (or passed) expires at once.
            wait = wake if deadline is None else ctx.any_of(
                [wake, ctx.sleep(max(0, deadline - ctx.now), "thread-wait")])
            turnstile.on_wake = self._signal  # (a bound method each time: kept, it would tie a cycle)
            if not reaper.fired:
                if not reaper.armed:
                    reaper.armed = True
                    watch.armed.append(reaper)
                if not watch._scheduled:
                    watch._schedule(reaper.kernel, reaper.kernel.env._now)
            yield wait
            if reaper.armed:
                reaper.armed = False
                watch.armed.remove(reaper)
            turnstile.on_wake = None
            if wake._value is not PENDING:
                # `ctx.env.event()`, without its two Python calls (SimPy's Event keeps PENDING as its
                # class's `_value` until triggered).
                wake = self.wake = _new(simpy.Event)
                wake.env, wake.callbacks = ctx.env, []
            if turnstile.timed:
                turnstile.expire()

    # -- what the executor left behind ----------------------------------------------------------

    def hand_on(self) -> None:
        """The executor's thread has ended (it returned or raised): threads it left that can still do
        something run on in a process of their own, else everything is released now. A hung batch
        (the executor never ended), a crashed runtime or released threads run on no more."""
        if self.closed or self.main.state != DONE or self.ctx.crashed or not self._could_act():
            self.close()
            return
        self.ctx.at_end_of_run(self.end)
        self.running_on = self.ctx.env.process(self._run_on())

    def _could_act(self) -> bool:
        """Whether a thread still alive can do anything more: it is runnable, waits with a timeout, is
        inside a tool (its call will end and wake it), or waits on the interrupt flag before the
        interrupt. The rest (idle pool workers on their work queue) wait for good."""
        turnstile = self.turnstile
        if not turnstile.live:  # (its count of threads not ended: no list of them made)
            return False
        if turnstile.runnable() or turnstile.next_deadline() is not None or self.tools.in_flight:
            return True
        return bool(self.flag._waiters) and not self.ctx.interrupt.triggered

    def _run_on(self) -> Generator[simpy.Event, Any, None]:
        # What they do in this very instant first (workers told to exit by `shutdown` just end); the
        # note, once one of them is still at work when time would pass.
        noted = False

        def done() -> bool:
            nonlocal noted
            if not self._could_act():
                return True
            if not noted and not self.turnstile.runnable():
                noted = True
                self._note_left()
            return False

        yield from self._drive_until(done)
        self.close()

    def _note_left(self) -> None:
        # Calls, not thread names: a pool's worker names carry a process-wide counter.
        ended = "raised" if self.main.error is not None else "returned"
        inside = self.tools.in_flight
        self.ctx.note(f"threads: execute {ended} with {len(self.turnstile.alive())} thread(s) still alive"
                      + (f", inside {', '.join(inside)}" if inside else "") + f" ({left_running('released')})")

    def end(self) -> None:
        """The run's batches are over: the threads still running on get up to `RUN_ON_MS` of virtual
        time more (or until the run's bounds stop the kernel), then are released."""
        if self.closed:
            return
        kernel = self.ctx.kernel
        try:
            if not self.ctx.crashed and self.running_on is not None:
                timer = kernel.delay(RUN_ON_MS, "run-on")
                kernel.run_until(simpy.AnyOf(kernel.env, [self.running_on, timer]))
        finally:
            self.close()

    def _choose(self, runnable: list[BridgeThread]) -> Any:
        """Ask the arbiter which runnable thread goes next: a step that takes no time and must come
        before any timer fires (`latest` is now), ordered against the calls' own steps."""
        assert self.arbiter is not None
        now = self.ctx.now
        asks = [(thread, self.arbiter.step(thread.entry, 1, earliest=now, latest=now)) for thread in runnable]
        self.reaper.arm()
        yield self.ctx.any_of([granted for _, granted in asks])
        self.reaper.disarm()
        return next(thread for thread, granted in asks if granted.triggered)

    def close(self) -> None:
        """Release every thread still alive, then the patches. Idempotent."""
        if self.closed:
            return
        self.closed = True
        self.turnstile.on_wake = None  # the driver is not woken by the threads released now
        self.reaper.disarm()
        try:
            stuck = self.turnstile.release_all()
            if stuck:
                self.ctx.note(f"threads: {', '.join(stuck)} would not end; left as daemon threads")
        finally:
            self.patches.close()
            stop_numbering(self.turnstile)
            # Untie the batch from the run's cycles (the turnstile unties its own): refcounting frees it.
            self.reaper.on_stop = _no_stop
            if self.ctx.interrupt.callbacks and self._interrupted in self.ctx.interrupt.callbacks:
                self.ctx.interrupt.callbacks.remove(self._interrupted)
            # The real pool registers its workers for an exit-time join; these are over already. (While
            # batches are open bridged workers are not registered at all, see `_Workers`.)
            registry: Any = futures_thread._threads_queues
            if registry.data:
                for worker in [t for t in registry if isinstance(t, bridged_thread.Thread)]:
                    registry.pop(worker, None)


def _no_stop(_why: str) -> None:
    """A closed batch's reaper callback."""


class FromThreads:
    def __init__(self, execute: Execute, name: str, description: str, grace_ms: int | None = None) -> None:
        self.execute, self.name, self.description = execute, name, description
        if grace_ms is not None and (isinstance(grace_ms, bool) or not isinstance(grace_ms, int) or grace_ms < 0):
            raise ValueError(f"grace_ms must be a non-negative integer of milliseconds, got {grace_ms!r}")
        #: The interrupt grace the runtime promises (None: none declared; see `harness.explore.swarm`).
        self.grace_ms = grace_ms
        self.takes_flag = _positional_count(execute) >= 3
        function = getattr(execute, "__func__", execute)
        namespace = getattr(function, "__globals__", None)
        #: The executor module's globals, whose `from time import sleep`-style names are patched too.
        self.namespaces = (namespace,) if isinstance(namespace, dict) else ()

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        batch_run = _BatchRun(self, batch, ctx)
        try:
            # `batch_run.drive()`, inlined: one generator fewer for every step of the driver to pass through.
            yield from batch_run._drive_until(None)
            if batch_run.closed:
                yield ctx.env.event()  # released by the reaper: the run is over, nothing more happens here
            return batch_run.results()
        finally:
            batch_run.hand_on()


def _positional_count(execute: Callable[..., Any]) -> int:
    try:
        parameters = inspect.signature(execute).parameters.values()
    except (TypeError, ValueError):
        return 2
    if any(p.kind is p.VAR_POSITIONAL for p in parameters):
        return 3
    return sum(1 for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def from_threads(execute: Execute, *, name: str | None = None, description: str = "",
                 grace_ms: int | None = None) -> FromThreads:
    """A scheduler from a runtime's sync `execute(tool_calls, tools[, interrupted])`, run with its
    threads on the turnstile and the virtual clock, named `name`, else `execute`'s module and qualified
    name (`acme.runtime.execute`: see `harness.bridges.naming`). `grace_ms` declares the interrupt
    grace the runtime promises (hermes: 3 s after a poll of up to 5 s), which swarm's interrupts allow."""
    return FromThreads(execute, name or origin_name(execute, "threads"),
                       description or "a thread-based executor on the virtual clock", grace_ms)
