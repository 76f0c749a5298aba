"""What a bridged executor is handed: tool-call objects and the scenario's limits.

Owns `BridgeToolCall`, a tool call that reads like an OpenAI `tool_calls` entry both ways — objects
(`tc.id`, `tc.function.name`, `tc.function.arguments`, the raw JSON string) and dicts
(`tc["id"]`, `tc["function"]["name"]`) — and in the flat shape seed 003 uses (`tc["name"]`,
`tc["arguments"]`, the parsed object); `json.dumps(tc)` gives the OpenAI dict. Reading a call marks
it as the one the current asyncio task works on, so a retry of one of two identical calls reaches the
right call. Owns `ScenarioLimits`, the timeouts and caps a runtime would be configured with, and
`ToolFailed`, what a bridged tool raises when its call failed (here, not with the toolbox, so the
thread bridge can share it without importing the toolbox, which imports the thread bridge). It never
runs anything.
"""

from __future__ import annotations

import asyncio
import asyncio.tasks
import json
import sys
from asyncio.events import _get_running_loop
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from harness.model import Batch, ToolCall
from harness.scheduling.context import SchedulerContext

#: The call code outside any asyncio task (a bridge thread, a loop callback) last read in this context:
#: the preferred match when a tool is invoked there with arguments several calls of the batch share. A
#: task's own reads are kept on the task (`LAST_READ`), never inherited by the tasks it makes: a call
#: another task read says nothing about this one.
reading: ContextVar[str | None] = ContextVar("harness_bridge_reading", default=None)
#: The attribute of an asyncio task that holds the call it last read (see `last_read`).
LAST_READ = "_harness_last_read"


class ToolFailed(Exception):
    """Raised by a bridged tool whose call ended in an error (the message is the tool's)."""


def _read(call_id: str) -> None:
    # A runtime reads a call's fields ~5 times per call (40 reads of bench_run's 8-call batch): in a
    # task, one attribute of the task, where a context variable cost a lookup, a comparison and (as
    # the read call changed) a copy of the context's mapping. The fields' getters do the in-task case
    # inline, without calling this (40 Python calls a run); keep them in step.
    loop = _get_running_loop()
    task: Any = None if loop is None else _current_task(loop)
    if task is not None:
        task._harness_last_read = call_id  # LAST_READ
        # What a copy of this context would inherit (a thread's work handed over by this task, a
        # callback): no read made outside a task, since this task read since.
        if reading.get() is not None:
            reading.set(None)
        return
    # Outside a task a runtime reads a call's fields several times in a row (`tc.function.name`, then
    # its arguments): setting an equal value again would only copy the context's mapping.
    if reading.get() != call_id:
        reading.set(call_id)


def last_read() -> str | None:
    """The call the caller last read: the running task's own last read, or, outside any task, the
    last read made outside a task in the caller's context (None: none)."""
    loop = _get_running_loop()
    task = None if loop is None else _current_task(loop)
    if task is not None:
        read: str | None = getattr(task, LAST_READ, None)
        return read
    return reading.get()


#: The dict by loop in which asyncio keeps the running tasks, which `current_task` reads (CPython
#: 3.11-3.13; 3.14 keeps them elsewhere): its `get`, else None.
_tasks_get: Callable[[asyncio.AbstractEventLoop | None], Any] | None = (
    asyncio.tasks._current_tasks.get  # type: ignore[attr-defined]
    if sys.version_info < (3, 14) and isinstance(getattr(asyncio.tasks, "_current_tasks", None), dict)
    else None)
#: `asyncio.current_task(loop)` without its Python frame where `_tasks_get` is, else the public function.
_current_task: Callable[[asyncio.AbstractEventLoop], asyncio.Task[Any] | None] = (
    _tasks_get if _tasks_get is not None else asyncio.current_task)
_reading_get = reading.get


class BridgeFunction(dict[str, Any]):
    """`{"name": ..., "arguments": "<raw JSON>"}`, also readable as attributes."""

    # Slots: without an instance dict, the two objects made per call cost a third less (copy and
    # pickle still work).
    __slots__ = ("_call_id",)

    def __init__(self, call: ToolCall) -> None:
        dict.__init__(self, name=call.name, arguments=call.arguments)
        self._call_id = call.id

    @property
    def name(self) -> str:
        # `_read(...)`, inline for a read in a task (see `_read`).
        task = None if _tasks_get is None else _tasks_get(_get_running_loop())
        if task is not None and _reading_get() is None:
            task._harness_last_read = self._call_id  # LAST_READ
        else:
            _read(self._call_id)
        return str(self["name"])

    @property
    def arguments(self) -> str:
        # `_read(...)`, inline for a read in a task (see `_read`).
        task = None if _tasks_get is None else _tasks_get(_get_running_loop())
        if task is not None and _reading_get() is None:
            task._harness_last_read = self._call_id  # LAST_READ
        else:
            _read(self._call_id)
        return str(self["arguments"])


class BridgeToolCall(dict[str, Any]):
    """One tool call of the batch: `{"id", "type", "function"}` as an OpenAI dict and object, plus
    the flat keys `name` and `arguments` (parsed when they are a JSON object, else the raw text)."""

    __slots__ = ("_call",)

    def __init__(self, call: ToolCall) -> None:
        dict.__init__(self, id=call.id, type="function", function=BridgeFunction(call))
        self._call = call

    @property
    def id(self) -> str:
        # `_read(...)`, inline for a read in a task (see `_read`).
        task = None if _tasks_get is None else _tasks_get(_get_running_loop())
        if task is not None and _reading_get() is None:
            task._harness_last_read = self._call.id  # LAST_READ
        else:
            _read(self._call.id)
        return self._call.id

    @property
    def type(self) -> str:
        return "function"

    @property
    def function(self) -> BridgeFunction:
        # `_read(...)`, inline for a read in a task (see `_read`).
        task = None if _tasks_get is None else _tasks_get(_get_running_loop())
        if task is not None and _reading_get() is None:
            task._harness_last_read = self._call.id  # LAST_READ
        else:
            _read(self._call.id)
        function: BridgeFunction = dict.__getitem__(self, "function")  # read once, not again by __getitem__
        return function

    def __getitem__(self, key: str) -> Any:
        # `_read(...)`, inline for a read in a task (see `_read`).
        task = None if _tasks_get is None else _tasks_get(_get_running_loop())
        if task is not None and _reading_get() is None:
            task._harness_last_read = self._call.id  # LAST_READ
        else:
            _read(self._call.id)
        return super().__getitem__(key)

    def __missing__(self, key: str) -> Any:
        # The flat shape (seed 003, many hand-written runtimes): not stored, so json.dumps(tc) and
        # dict(tc) stay the OpenAI dict.
        if key == "name":
            return self._call.name
        if key == "arguments":
            parsed = self._call.parsed_arguments()
            return parsed if parsed is not None else self._call.arguments
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __repr__(self) -> str:
        return f"BridgeToolCall({json.dumps(dict(self), default=dict)})"


def bridge_calls(batch: Batch) -> list[BridgeToolCall]:
    """The batch's calls as the executor is handed them: each as `BridgeToolCall(call)` makes it, without
    its two Python `__init__` calls (16 a run of bench_run's batch)."""
    made = []
    for call in batch:
        function = _new_dict(BridgeFunction)
        _init_dict(function, name=call.name, arguments=call.arguments)
        function._call_id = call.id
        tool_call = _new_dict(BridgeToolCall)
        _init_dict(tool_call, id=call.id, type="function", function=function)
        tool_call._call = call
        made.append(tool_call)
    return made


_new_dict, _init_dict = dict.__new__, dict.__init__


@dataclass(frozen=True)
class ScenarioLimits:
    """The limits the scenario configures, as a runtime would read them from its settings.

    Timeouts in milliseconds and seconds (`asyncio.wait_for` takes seconds); None where the scenario
    sets none. `max_concurrency` is the smaller of the scenario's cap and its execution policy's;
    `tool_caps` merges both the same way.
    """

    timeout_ms: int | None = None
    max_concurrency: int | None = None
    tool_caps: Mapping[str, int] = field(default_factory=dict)
    retries: int = 0
    backoff_ms: int = 1000
    idempotency_keys: bool = True
    grace_ms: int = 0
    batch_deadline_ms: int | None = None

    @property
    def timeout_s(self) -> float | None:
        return None if self.timeout_ms is None else self.timeout_ms / 1000

    @property
    def grace_s(self) -> float:
        return self.grace_ms / 1000

    @classmethod
    def of(cls, ctx: SchedulerContext) -> ScenarioLimits:
        policy = ctx.execution
        caps = [c for c in (policy.max_concurrency, ctx.max_concurrency) if c is not None]
        tool_caps = dict(ctx.tool_caps)
        for tool, cap in policy.tool_caps.items():
            tool_caps[tool] = min(cap, tool_caps.get(tool, cap))
        return cls(policy.timeout_ms, min(caps) if caps else None, dict(sorted(tool_caps.items())), policy.retries,
                   policy.backoff_ms, policy.idempotency_keys, ctx.grace_ms, policy.batch_deadline_ms)
