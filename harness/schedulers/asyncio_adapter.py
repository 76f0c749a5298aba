"""`from_asyncio`: a runtime's real asyncio executor, run unchanged on the virtual clock.

Owns the bridge. The user's `async def execute(tool_calls, tools)` runs on an asyncio event loop
whose clock is the SimPy clock: `asyncio.sleep`, `asyncio.wait_for`, `asyncio.gather`,
`asyncio.Semaphore` and friends behave as they do in production, in virtual milliseconds. `tools` maps
each tool name to an `async def tool(**arguments)` that runs the matching call of the batch in the
simulation and returns its value (or raises `ToolFailed`); a cancelled await (a `wait_for` timeout)
abandons the call, whose effect may still land if the tool ignores cancellation. `execute` returns
one item per call: a `CallResult`, a dict like seed 003's (`{"id": ..., "success": bool, "result":
..., "error": ...}`), or the tool's value itself; without an id, items are paired with calls by
position. The loop never sleeps
in real time and never touches I/O. It never decides an order itself: the user's code does.

    async def execute(tool_calls, tools):                      # seed 003, unchanged
        async def one(tc):
            try:
                args = json.loads(tc.function.arguments)
                return {"id": tc.id, "success": True,
                        "result": await asyncio.wait_for(tools[tc.function.name](**args), timeout=10)}
            except Exception as error:
                return {"id": tc.id, "success": False, "error": str(error)}
        return await asyncio.gather(*(one(tc) for tc in tool_calls))

    scheduler = from_asyncio(execute)
"""

from __future__ import annotations

import asyncio
import json
import math
from asyncio import events
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import simpy

from harness.model import Batch, CallResult, Outcome, ToolCall
from harness.schedulers.adapters import OpenAIToolCall, openai_tool_calls
from harness.schedulers.context import CallHandle, SchedulerContext, SchedulerProcess

Execute = Callable[[list[OpenAIToolCall], Mapping[str, Callable[..., Awaitable[Any]]]], Awaitable[Sequence[Any]]]


class ToolFailed(Exception):
    """Raised by a bridged tool whose call ended in an error (the message is the tool's)."""


class _NoIO:
    """The selector of a loop with nothing to select: asked to wait, it returns at once."""

    def select(self, timeout: float | None = None) -> list[Any]:
        return []

    def close(self) -> None:
        pass

    def get_map(self) -> dict[Any, Any]:
        return {}


class VirtualLoop(asyncio.BaseEventLoop):
    """An asyncio loop whose `time()` is the simulation's (seconds); stepped by the bridge."""

    def __init__(self, ctx: SchedulerContext) -> None:
        super().__init__()
        self._selector = _NoIO()
        self._ctx = ctx

    def time(self) -> float:
        return self._ctx.now / 1000.0

    def _process_events(self, event_list: list[Any]) -> None:
        pass

    def _write_to_self(self) -> None:
        pass

    # The bridge drives these private parts of BaseEventLoop; they are stable across 3.11-3.13.
    def step(self) -> None:
        events._set_running_loop(self)
        try:
            self._run_once()  # type: ignore[attr-defined]
        finally:
            events._set_running_loop(None)

    @property
    def has_ready(self) -> bool:
        return bool(self._ready)  # type: ignore[attr-defined]

    def next_timer_ms(self) -> int | None:
        live = [h.when() for h in self._scheduled if not h.cancelled()]  # type: ignore[attr-defined]
        return math.ceil(min(live) * 1000 - 1e-9) if live else None


class _Toolbox(Mapping[str, Callable[..., Awaitable[Any]]]):
    """`tools[name](**arguments)`: runs the batch's matching call in the simulation."""

    def __init__(self, batch: Batch, ctx: SchedulerContext, wake: Callable[[], None]) -> None:
        self.batch, self.ctx, self.wake = batch, ctx, wake
        self.handles: dict[str, list[CallHandle]] = {}
        self._names = sorted({call.name for call in batch})

    def __getitem__(self, name: str) -> Callable[..., Awaitable[Any]]:
        if name not in self._names:
            raise KeyError(name)

        async def tool(**arguments: Any) -> Any:
            return await self._run(self._match(name, arguments))

        tool.__name__ = name
        return tool

    def __iter__(self) -> Any:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def _match(self, name: str, arguments: dict[str, Any]) -> ToolCall:
        """The first call of the batch with this name and these arguments that has not run yet; if
        all have, the last one again (a retry)."""
        same = [c for c in self.batch if c.name == name and c.parsed_arguments() == arguments]
        if not same:
            same = [c for c in self.batch if c.name == name]
        fresh = [c for c in same if c.id not in self.handles]
        return fresh[0] if fresh else same[-1]

    async def _run(self, call: ToolCall) -> Any:
        attempt = len(self.handles.get(call.id, [])) + 1
        handle = self.ctx.start(call, attempt=attempt)
        self.handles.setdefault(call.id, []).append(handle)
        future: asyncio.Future[CallResult] = asyncio.get_running_loop().create_future()

        def settle(event: simpy.Event) -> None:
            if not future.done() and isinstance(event.value, CallResult):
                future.set_result(event.value)
            self.wake()

        handle.callbacks.append(settle)
        try:
            result = await future
        except asyncio.CancelledError:
            self.ctx.cancel(handle, reason="cancelled by the asyncio executor")
            raise
        if result.outcome is not Outcome.OK:
            raise ToolFailed(result.error or result.outcome.value)
        return result.value


class FromAsyncio:
    def __init__(self, execute: Execute, name: str, description: str) -> None:
        self.execute, self.name, self.description = execute, name, description

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        loop = VirtualLoop(ctx)
        wake: list[simpy.Event] = [ctx.env.event()]

        def signal() -> None:
            if not wake[0].triggered:
                wake[0].succeed()

        tools = _Toolbox(batch, ctx, signal)
        task = loop.create_task(_as_coroutine(self.execute(openai_tool_calls(batch), tools)))
        while True:
            loop.step()
            if task.done():
                break
            if loop.has_ready:
                continue
            waits: list[simpy.Event] = [wake[0]]
            timer = loop.next_timer_ms()
            if timer is not None:
                waits.append(ctx.sleep(max(0, timer - ctx.now)))
            yield ctx.any_of(waits)
            if wake[0].triggered:
                wake[0] = ctx.env.event()
        loop.close()
        return _results(batch, tools, task.result())


async def _as_coroutine(awaitable: Awaitable[Sequence[Any]]) -> Sequence[Any]:
    return await awaitable


_ENVELOPE = {"id", "tool_call_id", "success", "result", "error", "content"}


def _results(batch: Batch, tools: _Toolbox, items: Sequence[Any]) -> list[CallResult]:
    results = []
    for position, item in enumerate(items):
        if isinstance(item, CallResult):
            results.append(item)
            continue
        # A mapping with envelope keys describes the result; anything else is the tool's value itself.
        envelope = isinstance(item, Mapping) and bool(_ENVELOPE & set(item))
        data = item if envelope else {"result": item}
        call_id = data.get("id") or data.get("tool_call_id")
        if not isinstance(call_id, str):
            call_id = batch.calls[position].id if position < len(batch) else f"unpaired-{position}"
        handles = tools.handles.get(call_id, [])
        start = handles[0].started_ms if handles else 0
        end = max((h.result.end_ms for h in handles if h.triggered), default=start)
        failed = data.get("success") is False or data.get("error") is not None
        error = data.get("error")
        results.append(CallResult(call_id, Outcome.ERROR if failed else Outcome.OK,
                                  None if failed else data.get("result", data.get("content")),
                                  None if not failed else (error if isinstance(error, str) else json.dumps(error)),
                                  len(handles), start, end))
    return results


def from_asyncio(execute: Execute, *, name: str | None = None, description: str = "") -> FromAsyncio:
    """A scheduler from a runtime's `async def execute(tool_calls, tools)`, run on virtual time."""
    return FromAsyncio(execute, name or str(getattr(execute, "__name__", "asyncio")),
                       description or "an asyncio executor on the virtual clock")
