"""Adapters: a third-party gate or planner function becomes a scheduler in one line.

Owns the OpenAI `tool_calls` shape handed to user functions (objects with `.id`, `.type`,
`.function.name`, `.function.arguments`, the raw JSON string) and `from_gate` / `from_plan`. The
resulting schedulers are plan-based, so they compose with every execution policy. It never
interprets what the user's function decides.

    scheduler = from_gate(my_should_parallelize)            # True: all parallel, False: serial
    scheduler = from_plan(lambda calls: [[calls[0], calls[1]], [calls[2]]])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.model import Batch
from harness.schedulers.context import SchedulerContext
from harness.schedulers.execution import ExecutionPolicy
from harness.schedulers.plan import Plan, PlanError, PlanScheduler


@dataclass(frozen=True, slots=True)
class OpenAIFunction:
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class OpenAIToolCall:
    """One entry of an OpenAI chat completion's `message.tool_calls`."""

    id: str
    function: OpenAIFunction
    type: str = "function"


def openai_tool_calls(batch: Batch) -> list[OpenAIToolCall]:
    return [OpenAIToolCall(call.id, OpenAIFunction(call.name, call.arguments)) for call in batch]


GateFn = Callable[[list[OpenAIToolCall]], bool]
PlanFn = Callable[[list[OpenAIToolCall]], Any]


class _Gate(PlanScheduler):
    def __init__(self, fn: GateFn, name: str, max_workers: int | None, description: str,
                 execution: ExecutionPolicy | None) -> None:
        super().__init__(execution)
        self.fn, self.max_workers = fn, max_workers
        self.name = name
        self.description = description

    def plan(self, batch: Batch, ctx: SchedulerContext) -> Plan:
        if self.fn(openai_tool_calls(batch)):
            return Plan.parallel(batch, cap=self.max_workers, summary="gate: parallel")
        return Plan.serial(batch, summary="gate: serial")


class _Planner(PlanScheduler):
    def __init__(self, fn: PlanFn, name: str, cap: int | None, description: str,
                 execution: ExecutionPolicy | None) -> None:
        super().__init__(execution)
        self.fn, self.cap = fn, cap
        self.name = name
        self.description = description

    def plan(self, batch: Batch, ctx: SchedulerContext) -> Plan:
        decided = self.fn(openai_tool_calls(batch))
        if isinstance(decided, Mapping):  # dependency edges: id -> ids it waits for
            return Plan({c.id: tuple(decided.get(c.id, ())) for c in batch}, cap=self.cap,
                        summary="dependency edges")
        if not isinstance(decided, Sequence) or isinstance(decided, str):
            raise PlanError(f"{self.name} returned {type(decided).__name__}: expected a list of segments "
                            "or a mapping of dependency edges")
        segments = [[item.id if isinstance(item, OpenAIToolCall) else item for item in segment]
                    for segment in decided]
        return Plan.segments(batch, segments, cap=self.cap)


def from_gate(fn: GateFn, *, name: str | None = None, max_workers: int | None = None,
              description: str = "", execution: ExecutionPolicy | None = None) -> PlanScheduler:
    """A scheduler from `fn(tool_calls) -> bool`: True runs the whole batch in parallel (at most
    `max_workers` at once), False runs it serially in model order. Results are in model order."""
    return _Gate(fn, name or str(getattr(fn, "__name__", "gate")), max_workers,
                 description or "a gate function: all parallel or all serial", execution)


def from_plan(fn: PlanFn, *, name: str | None = None, cap: int | None = None, description: str = "",
              execution: ExecutionPolicy | None = None) -> PlanScheduler:
    """A scheduler from `fn(tool_calls)` returning ordered segments (lists of tool calls or ids:
    each segment runs in parallel once the previous one settled) or a mapping of dependency edges
    (id -> ids it waits for). Results are in model order."""
    return _Planner(fn, name or str(getattr(fn, "__name__", "planner")), cap,
                    description or "a planner function: ordered segments", execution)
