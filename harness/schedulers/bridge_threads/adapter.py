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
thread switches like call steps, and tapes replay them. When the executor returns, raises, the run
hangs or the runtime crashes, every thread still alive is released (`ThreadReleased` unwinds it) and
its OS thread joined: no real thread outlives its batch. It never decides an order itself.

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
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import simpy

from harness.model import Batch, Outcome, ToolCall
from harness.schedulers.adapters import OpenAIToolCall, openai_tool_calls
from harness.schedulers.bridge_asyncio.asking import Asking
from harness.schedulers.bridge_asyncio.calls import ToolFailed
from harness.schedulers.bridge_threads import primitives
from harness.schedulers.bridge_threads.patches import Installation
from harness.schedulers.bridge_threads.reaper import Reaper
from harness.schedulers.bridge_threads.results import read_results
from harness.schedulers.bridge_threads.turnstile import DONE, BridgeThread, Turnstile, current
from harness.schedulers.context import CallHandle, SchedulerContext, SchedulerProcess
from harness.schedulers.naming import origin_name
from harness.schedulers.waits import Wait, thread_waits

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
        #: Each call's latest approval request, made by its tool (see `harness.schedulers.bridge_asyncio.asking`).
        self.asking: dict[str, Asking] = {}
        self._names = sorted({call.name for call in batch})
        self._by_id = {call.id: call for call in batch}

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
        me = current()
        if me is None or me.turnstile is not self.turnstile:
            raise RuntimeError("bridged tools are called from the executor's own threads")
        if self.ctx.needs_approval(call):  # the tool asks the user first (harness.schedulers.approvals)
            asking = self.asking[call.id] = Asking(self.ctx, call)
            refused = asking.wait_in_thread(self.turnstile, me)
            if refused is not None:
                raise ToolFailed(refused.error or "denied by the user")
        handle = self.ctx.start(call, attempt=len(self.handles.get(call.id, [])) + 1)
        self.handles.setdefault(call.id, []).append(handle)
        if not handle.triggered:
            handle.callbacks.append(lambda _event: self.turnstile.wake(me))
            while not handle.triggered:
                self.turnstile.park(me)
        result = handle.result
        if result.outcome is not Outcome.OK:
            raise ToolFailed(result.error or result.outcome.value)
        return result.value


class _BatchRun:
    """One batch: the turnstile, its patches and the SimPy process that drives it."""

    def __init__(self, owner: FromThreads, batch: Batch, ctx: SchedulerContext) -> None:
        self.ctx = ctx
        # Order-first runs: thread switches are the arbiter's choices. The context keeps its arbiter
        # private (schedulers never choose orders); a bridge must offer its switches to it.
        self.arbiter = ctx._arbiter
        self.waiting = False
        self.wake: simpy.Event = ctx.env.event()
        self.turnstile = Turnstile(lambda: ctx.kernel.now, self._signal, lambda: ctx.kernel.steps)
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
        self.closed = False
        self.main = self.turnstile.spawn(main, "MainThread")
        self.stopped_waits: list[Wait] = []

    def _interrupted(self, _event: simpy.Event) -> None:
        self.flag.set()

    def _signal(self) -> None:
        # Not once released: the reaper releases threads because the run is stopping, and waking
        # the driver then would keep it going.
        if self.waiting and not self.closed and not self.wake.triggered:
            self.wake.succeed()

    def _stopped(self, why: str) -> None:
        # What each thread waits on, read before they are released: the run's hang diagnosis reports it.
        self.stopped_waits = thread_waits(self.turnstile, {call.id: call for call in self.ctx.batch})
        self.ctx.note(f"threads: the run stops with threads waiting ({why}); releasing them")
        self.close()

    def drive(self) -> SchedulerProcess:
        ctx, turnstile = self.ctx, self.turnstile
        while self.main.state != DONE and not self.closed:
            runnable = turnstile.runnable()
            if runnable:
                thread = runnable[0] if self.arbiter is None else (yield from self._choose(runnable))
                turnstile.run(thread)
                continue
            waits = [self.wake]
            deadline = turnstile.next_deadline()
            if deadline is not None:
                # Never negative: a deadline the clock has already reached (or passed) expires at once.
                waits.append(ctx.sleep(max(0, deadline - ctx.now), "thread-wait"))
            self.waiting = True
            self.reaper.arm()
            yield waits[0] if len(waits) == 1 else ctx.any_of(waits)
            self.reaper.disarm()
            self.waiting = False
            if self.wake.triggered:
                self.wake = ctx.env.event()
            turnstile.expire()
        if self.closed:
            yield ctx.env.event()  # released by the reaper: the run is over, nothing more happens here
        for thread in turnstile.threads:
            if thread.error is not None and thread is not self.main:
                ctx.note(f"thread {thread.name} died: {type(thread.error).__name__}: {thread.error}")
        if self.main.error is not None:
            raise self.main.error
        return read_results(self.outcome[0], self.tools.batch, ctx, self.tools.handles,  # type: ignore[no-any-return]
                            self.tools.asking)

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
        self.reaper.disarm()
        try:
            stuck = self.turnstile.release_all()
            if stuck:
                self.ctx.note(f"threads: {', '.join(stuck)} would not end; left as daemon threads")
        finally:
            self.patches.close()
            # Untie the batch from the run's cycles (the turnstile unties its own): refcounting frees it.
            self.reaper.on_stop = _no_stop
            if self.ctx.interrupt.callbacks and self._interrupted in self.ctx.interrupt.callbacks:
                self.ctx.interrupt.callbacks.remove(self._interrupted)
            # The real pool registers its workers for an exit-time join; these are over already.
            registry: Any = futures_thread._threads_queues
            for worker in [t for t in registry if isinstance(t, primitives.Thread)]:
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
            return (yield from batch_run.drive())
        finally:
            batch_run.close()


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
    name (`acme.runtime.execute`: see `harness.schedulers.naming`). `grace_ms` declares the interrupt
    grace the runtime promises (hermes: 3 s after a poll of up to 5 s), which swarm's interrupts allow."""
    return FromThreads(execute, name or origin_name(execute, "threads"),
                       description or "a thread-based executor on the virtual clock", grace_ms)
