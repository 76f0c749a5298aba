"""The tools a bridged executor calls: `tools[name](...)` runs the batch's matching call.

Owns the `Toolbox` (one per batch: a mapping from tool name to an async callable), the matching of
an invocation to a call of the batch (by name and arguments, keyword or positional, preferring the
call the task last read, then calls not yet started, in model order), the attempt numbering, the
idempotency key an executor passes (`idempotency_key=...`, when no call has an argument of that
name) and the awaiting of a started call from asyncio. A cancelled await abandons the call (a
`wait_for` timeout: `cancelled`; after the user interrupt: `unknown`, since the effect may land).
Called in a bridge thread the loop handed work to (a sync tool under `asyncio.to_thread`), a tool
blocks that thread until the call ends and returns the value instead of an awaitable. A tool the
scenario declares `sync` (a plain function, like `requests.get`) called directly on the event loop
blocks the loop for the whole call and returns the value (see `blocking`); declared `blocking_ms` of
synchronous work is done on the caller's thread (the loop: held) before the call begins. A tool
called from a thread the bridge does not run (anyio's worker) fails with the fix, and the hang
witness names the thread. Also owns
the registry dispatchers that stand in for a runtime's module-level tool table. It never
decides an order or reports results.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from asyncio import events
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping, MutableMapping
from contextvars import ContextVar
from heapq import heappush
from typing import Any, Protocol

import simpy
from simpy.events import NORMAL, PENDING

from harness.bridges.asyncio.asking import Asking
from harness.bridges.asyncio.blocking import UNBRIDGED_FIX, Blocker, LoopFrozen
from harness.bridges.asyncio.calls import ScenarioLimits, ToolFailed, _current_task, last_read
from harness.bridges.asyncio.threads import host_of
from harness.bridges.threads.turnstile import BridgeThread
from harness.bridges.threads.turnstile import current as bridge_thread
from harness.model import Batch, CallResult, Outcome, ToolCall
from harness.scheduling.context import CallHandle, SchedulerContext

__all__ = ["KEY_ARGUMENT", "BridgedTool", "Registry", "ToolFailed", "Toolbox", "current"]


class ToolboxHost(Protocol):
    """What a toolbox reads of its run (the bridge's `RunState` is one): declared here so that the
    bridge imports this module and never the other way round."""

    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...
    @property
    def blocker(self) -> Blocker: ...
    @property
    def closed(self) -> bool: ...
    @property
    def thread_calls(self) -> list[CallHandle]: ...
    @property
    def thread_ident(self) -> int: ...
    @property
    def wake(self) -> simpy.Event: ...
    def signal(self) -> None: ...


#: The toolbox of the batch whose executor task (or a task it spawned) is running.
current: ContextVar[Toolbox | None] = ContextVar("harness_bridge_toolbox", default=None)

#: The keyword an executor passes an idempotency key with (unless a call has an argument so named).
KEY_ARGUMENT = "idempotency_key"


class Toolbox(Mapping[str, Callable[..., Awaitable[Any]]]):
    """`tools[name](**arguments)`: runs the batch's matching call in the simulation."""

    def __init__(self, batch: Batch, ctx: SchedulerContext, state: ToolboxHost) -> None:
        self.batch, self.ctx, self.state = batch, ctx, state
        #: Every handle started per call id, in start order (attempt n is handles[n - 1]).
        self.handles: dict[str, list[CallHandle]] = {}
        #: Calls an invocation has been matched to (claimed when the coroutine is made).
        self._claimed: dict[str, int] = {}
        #: The task awaiting each unsettled handle (for the leftover report).
        self.waiting: dict[CallHandle, asyncio.Task[Any] | None] = {}
        #: The calls of each tool, in model order, and the arguments of the calls of tools with several
        #: calls, parsed once when an invocation is first matched against them (read-only: a tool
        #: with one call never needs them, see `match`).
        self._named: dict[str, list[ToolCall]] = {}
        self._parsed: dict[str, dict[str, Any] | None] | None = None
        for call in batch:
            self._named.setdefault(call.name, []).append(call)
        #: Each tool's `sync` and `blocking_ms` as the scenario declares them (read per invocation otherwise).
        self._specs: dict[str, tuple[bool, int]] = {}
        self._limits: ScenarioLimits | None = None
        #: Calls the user did not approve: their tool refused them before they started.
        self.refused: set[str] = set()
        #: Each call's latest approval request, made by its tool (see `asking`).
        self.asking: dict[str, Asking] = {}
        #: The coroutines `tools[name](...)` returned, with their call, in the order made, and how many
        #: of them have begun running.
        self.made: list[tuple[ToolCall, Coroutine[Any, Any, Any]]] = []
        self._begun = 0

    @property
    def limits(self) -> ScenarioLimits:
        """The scenario's limits, as a runtime would read them from its settings (read when asked)."""
        if self._limits is None:
            self._limits = ScenarioLimits.of(self.ctx)
        return self._limits

    def __getitem__(self, name: str) -> Callable[..., Awaitable[Any]]:
        if name not in self._named:
            raise KeyError(name)
        # Made per lookup, never kept: a tool kept by its toolbox would hold it in a cycle (see
        # `RunState._let_go`: a run is freed by reference counting). `BridgedTool(name, self)`, without
        # its Python `__init__` (once per tool call).
        tool = _new(BridgedTool)
        tool.name, tool._toolbox = name, self
        tool.__name__ = tool.__qualname__ = name
        return tool

    def _spec(self, name: str) -> tuple[bool, int]:
        """(sync, blocking_ms) of the tool `name`, as the scenario declares it (False, 0: undeclared)."""
        found = self._specs.get(name)
        if found is None:
            spec = self.ctx._catalogue.get(name)
            found = self._specs[name] = (False, 0) if spec is None else (bool(spec.sync), spec.blocking_ms)
        return found

    def is_sync(self, name: str) -> bool:
        """Whether the real tool `name` is a plain function (the scenario declares it `sync`): then
        `tools[name](...)` returns its value, blocking the caller (on the loop: the whole loop), and a
        runtime's glue should hand the runtime a plain function for it."""
        return self._spec(name)[0]

    def _blocking_ms(self, name: str) -> int:
        return self._spec(name)[1]

    def on_loop(self) -> bool:
        """Whether the caller is the run's bridged code stepping on its loop (not the simulation
        running while the loop is held)."""
        state = self.state
        return events._get_running_loop() is state.loop and state.blocker.active

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._named))

    def __len__(self) -> int:
        return len(self._named)

    def invoke(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Awaitable[Any]:
        named = self._named.get(name)
        if named is not None and len(named) == 1 and KEY_ARGUMENT not in kwargs:
            call, key = named[0], None  # what `match` chooses for a tool's only call, without the call
        else:
            call, key = self.match(name, args, kwargs)
        self._claimed[call.id] = self._claimed.get(call.id, 0) + 1
        coroutine = self._run(call, key)
        self.made.append((call, coroutine))
        return coroutine

    def drop_unawaited(self) -> list[ToolCall]:
        """The calls whose coroutine the executor made and never awaited (e.g. `gather` never reached
        because building its arguments raised), closed so that Python does not warn about them on
        stderr: the calls never ran, which the trace says instead."""
        if self._begun == len(self.made):  # every coroutine made has run: none is left unawaited
            return []
        dropped = [(call, c) for call, c in self.made if inspect.getcoroutinestate(c) == inspect.CORO_CREATED]
        for _, coroutine in dropped:
            coroutine.close()
        return [call for call, _ in dropped]

    def match(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[ToolCall, str | None]:
        named = self._named.get(name)
        if not named:
            raise KeyError(name)
        key: str | None = None
        if KEY_ARGUMENT in kwargs and not any(KEY_ARGUMENT in (self._parsed_of()[c.id] or {}) for c in named):
            kwargs = dict(kwargs)
            raw = kwargs.pop(KEY_ARGUMENT)
            key = None if raw is None else str(raw)
        if len(named) == 1:  # the tool's only call: whatever the arguments and reads, the one chosen below
            return named[0], key
        parsed = self._parsed_of()
        same = [c for c in named if _binds(parsed[c.id], args, kwargs)] or named
        # The call this very task last read (a retry reads it again); a value inherited from the task
        # that made this one is not evidence: a runtime that reads every call and then spawns a task
        # per call (LangGraph's ToolNode) hands them all the batch's last call.
        read = last_read()
        chosen = next((c for c in same if c.id == read), None)
        if chosen is None:
            fresh = [c for c in same if c.id not in self._claimed]
            chosen = fresh[0] if fresh else same[-1]
        return chosen, key

    def _parsed_of(self) -> dict[str, dict[str, Any] | None]:
        parsed = self._parsed
        if parsed is None:
            parsed = self._parsed = {call.id: call.parsed_arguments() for call in self.batch}
        return parsed

    def invoke_blocking(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], thread: BridgeThread) -> Any:
        """`tools[name](...)` in a bridge thread: start the matching call and park the thread on the
        turnstile until the call ends (the loop and other threads go on meanwhile). A thread cannot be
        cancelled, so neither can its call: a runtime that stops waiting for the thread's future leaves
        the call running (and the oracles see it)."""
        turnstile = thread.turnstile
        turnstile.check(thread)  # the run is over: unwind rather than start a call
        call, key = self.match(name, args, kwargs)
        self._claimed[call.id] = self._claimed.get(call.id, 0) + 1
        blocking_ms = self._blocking_ms(name)
        if blocking_ms:  # the tool's synchronous work: this thread only is busy meanwhile
            turnstile.park(thread, self.ctx.now + blocking_ms)
        if self.ctx.needs_approval(call):  # the tool asks the user first (harness.scheduling.approvals)
            asking = self.asking[call.id] = Asking(self.ctx, call)
            refused = asking.wait_in_thread(turnstile, thread)
            if refused is not None:
                self.refused.add(call.id)
                raise ToolFailed(refused.error or "denied by the user")
        handles = self.handles.setdefault(call.id, [])
        handle = self.ctx.start(call, attempt=len(handles) + 1, idempotency_key=key)
        handles.append(handle)
        if not handle.triggered:
            handle.callbacks.append(lambda _event: turnstile.wake(thread))
            self.waiting[handle] = None
            self.state.thread_calls.append(handle)
            try:
                while not handle.triggered:
                    turnstile.park(thread)
            finally:
                self.waiting.pop(handle, None)
        return _value(handle.result)

    def _check_frozen(self) -> None:
        """A task of the same loop iteration as a blocking call that never returned would, on a real
        loop, never run: it starts nothing either."""
        frozen = self.state.blocker.frozen
        if frozen is not None:
            raise LoopFrozen(f"the event loop is held for good by {frozen}")

    def invoke_on_loop(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A sync tool called directly on the event loop: start the matching call and hold the loop
        until it ends (`Blocker.hold`: the simulation goes on, the loop's other tasks and timers
        wait), then return its value or raise its failure, as the runtime's plain function would."""
        ctx, blocker = self.ctx, self.state.blocker
        self._check_frozen()
        call, key = self.match(name, args, kwargs)
        self._claimed[call.id] = self._claimed.get(call.id, 0) + 1
        what = f"the sync tool {name} ({call.id})"
        blocking_ms = self._blocking_ms(name)
        if blocking_ms:
            blocker.hold(ctx.kernel.delay(blocking_ms, "blocking"), f"{what}: its blocking work", "sync-tool")
        if ctx.needs_approval(call):  # the tool asks the user first (harness.scheduling.approvals)
            asking = self.asking[call.id] = Asking(ctx, call)
            blocker.hold(asking.process, f"{what} asking the user", "sync-tool")
            refused = asking.process.value
            if isinstance(refused, CallResult):
                self.refused.add(call.id)
                raise ToolFailed(refused.error or "denied by the user")
        handles = self.handles.setdefault(call.id, [])
        handle = ctx.start(call, attempt=len(handles) + 1, idempotency_key=key)
        handles.append(handle)
        self.waiting[handle] = asyncio.current_task()
        try:
            blocker.hold(handle, what, "sync-tool")
        finally:
            self.waiting.pop(handle, None)
        return _value(handle.result)

    async def _run(self, call: ToolCall, key: str | None) -> Any:
        self._begun += 1
        ctx, state = self.ctx, self.state
        if state.blocker.frozen is not None:
            self._check_frozen()
        blocking_ms = (self._specs.get(call.name) or self._spec(call.name))[1]
        if blocking_ms and self.on_loop():  # synchronous work before the tool's first await: holds the loop
            state.blocker.hold(ctx.kernel.delay(blocking_ms, "blocking"),
                               f"the tool {call.name} ({call.id}): its blocking work", "tool-work")
        # The tool asks the user first (harness.scheduling.approvals); never without a scripted user.
        if ctx._approvals is not None and ctx.needs_approval(call):
            asking = self.asking[call.id] = Asking(ctx, call)
            try:
                refused = await _settled_value(asking.process, state)
            except asyncio.CancelledError:
                # The executor stopped awaiting the tool (its `wait_for` timed out, the user interrupt)
                # while the user had not answered: the tool stops waiting and the call never runs.
                if not state.closed:
                    asking.give_up()
                raise
            if isinstance(refused, CallResult):
                self.refused.add(call.id)
                raise ToolFailed(refused.error or "denied by the user")
        handles = self.handles.setdefault(call.id, [])
        handle = ctx.start(call, attempt=len(handles) + 1, idempotency_key=key)
        handles.append(handle)
        loop = events.get_running_loop()
        future: asyncio.Future[CallResult] = asyncio.Future(loop=loop)

        def settle(event: simpy.Event) -> None:
            # Straight from the call's handle: the value it settled with, set on the future the tool awaits.
            value = event._value
            if not future.done() and isinstance(value, CallResult):
                future.set_result(value)
            wake = state.wake
            if wake._value is PENDING:
                # `state.signal()`, inline (once per settled call): the wake event succeeds, pushed as
                # SimPy's `env.schedule` pushes it.
                wake._ok, wake._value = True, None
                env = wake.env
                heappush(env._queue, (env._now, NORMAL, next(env._eid), wake))

        if handle.callbacks is None:  # already settled and processed
            settle(handle)
        else:
            handle.callbacks.append(settle)
        self.waiting[handle] = _current_task(loop)
        try:
            result = await future
        except asyncio.CancelledError:
            if not state.closed:
                # After the user interrupt the runtime is going down: the call's effect may still
                # land, so its honest outcome is unknown; before it, asyncio's plain cancellation.
                interrupted = ctx.interrupted
                ctx.cancel(handle, outcome=Outcome.UNKNOWN if interrupted else Outcome.CANCELLED,
                           reason=("interrupted: the executor's task was cancelled; effect unknown" if interrupted
                                   else "cancelled by the asyncio executor"))
            raise
        finally:
            self.waiting.pop(handle, None)
        return result.value if result.outcome is Outcome.OK else _value(result)


async def _settled_value(event: simpy.Event, state: ToolboxHost) -> Any:
    """Await a SimPy event from the executor's loop: its value once it is processed."""
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    def settle(done: simpy.Event) -> None:
        if not future.done():
            future.set_result(done.value)
        state.signal()

    if event.callbacks is None:
        settle(event)
    else:
        event.callbacks.append(settle)
    return await future


def _value(result: CallResult) -> Any:
    """What a bridged tool gives its caller: the value, or the call's failure raised."""
    if result.outcome is Outcome.OK:
        return result.value
    if result.outcome is Outcome.TIMEOUT:
        raise TimeoutError(result.error or "timed out")
    raise ToolFailed(result.error or result.outcome.value)


def _binds(parsed: dict[str, Any] | None, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether `tool(*args, **kwargs)` asks for exactly a call's arguments, `parsed` (positional ones
    bound to the argument names in the order the model wrote them)."""
    if parsed is None:
        return False
    if not args:  # the common case: keywords only
        return kwargs == parsed
    names = list(parsed)
    if len(args) > len(names):
        return False
    bound = dict(zip(names, args, strict=False))
    if set(bound) & set(kwargs):
        return False
    return {**bound, **kwargs} == parsed


class BridgedTool:
    """`tools[name]`: calling it matches the invocation to a call of the batch (in the caller's
    context, so identical calls made together get distinct calls) and returns the awaitable."""

    def __init__(self, name: str, toolbox: Toolbox | None = None) -> None:
        # Keep in step with `Toolbox.__getitem__`, which makes one without this call.
        self.name, self._toolbox = name, toolbox
        self.__name__ = self.__qualname__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        toolbox = self._toolbox if self._toolbox is not None else current.get()  # not `or`: a Mapping's len()
        thread = bridge_thread()
        if thread is not None:
            host = host_of(thread)
            if host is not None:
                # A sync tool in work the loop handed to a thread: block the thread until the call ends
                # and return its value, as the runtime's sync tool function would. Without a context to
                # name the batch (`run_in_executor` does not copy it), the batch whose task handed the
                # thread its work, else the run's latest batch.
                owner: Any = host.owner
                if toolbox is None or toolbox.state is not owner:
                    handed = host.toolbox_of(thread)
                    toolbox = handed if isinstance(handed, Toolbox) else owner.toolbox
                if toolbox is not None:
                    return toolbox.invoke_blocking(self.name, args, kwargs, thread)
        if toolbox is None:
            raise RuntimeError(f"tool {self.name!r} was called outside a bridged executor (no batch is running)")
        state = toolbox.state
        if not state.closed and threading.get_ident() != state.thread_ident:
            # A real thread beside the loop (anyio's worker): outside the virtual clock, and nothing
            # would tell the loop when it is done. Named in the hang witness; waits for the run to end.
            name = threading.current_thread().name
            state.blocker.foreign_call(name, self.name)
            raise RuntimeError(f"tool {self.name!r} was called from the thread {name!r}, which the harness's "
                               f"bridge does not run (a real thread, outside the virtual clock): {UNBRIDGED_FIX}")
        if (toolbox._specs.get(self.name) or toolbox._spec(self.name))[0] and toolbox.on_loop():  # `is_sync`
            # A plain function called on the event loop: it blocks the loop until the call ends.
            return toolbox.invoke_on_loop(self.name, args, kwargs)
        return toolbox.invoke(self.name, args, kwargs)

    def __repr__(self) -> str:
        return f"<bridged tool {self.name}>"


class Registry:
    """A runtime's module-level tool table (seed 003's `TOOL_REGISTRY`), pointed at the simulation
    while a run is open: every entry becomes a dispatcher to the running batch's toolbox."""

    def __init__(self, table: MutableMapping[str, Any]) -> None:
        self.table = table
        self._saved: dict[str, Any] | None = None

    @property
    def names(self) -> frozenset[str]:
        """The tools the runtime's table knows (its own keys, not the harness's catalogue)."""
        return frozenset(self._saved if self._saved is not None else self.table)

    def install(self) -> None:
        if self._saved is None:
            self._saved = dict(self.table)
            for name in self._saved:
                self.table[name] = BridgedTool(name)

    def restore(self) -> None:
        if self._saved is not None:
            self.table.update(self._saved)
            self._saved = None


_new = object.__new__
