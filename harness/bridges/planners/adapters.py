"""Adapters: a third-party gate or planner function becomes a scheduler in one line.

Owns the OpenAI `tool_calls` shape handed to user functions (objects with `.id`, `.type`,
`.function.name`, `.function.arguments`, the raw JSON string) and `from_gate` / `from_plan`. The
resulting schedulers are plan-based, so they compose with every execution policy. By default
(`world_view=True`) the user's function runs inside `world_view.WorldView`: `os`, `os.path`,
`pathlib` and `open` answer from the run's world as it is when the batch starts (the runtime
process's cwd, the world's HOME, symlinks, hard links, case folding), read-only. It never
interprets what the user's function decides beyond the shapes below.

    scheduler = from_gate(my_should_parallelize)            # True: all parallel, False: serial
    scheduler = from_plan(lambda calls: [[calls[0], calls[1]], [calls[2]]])
    scheduler = from_plan(hermes_plan)                      # [("parallel", [c1, c2]), ("sequential", [c3])]
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from harness.bridges.naming import origin_name
from harness.bridges.planners.world_view import call_in_world
from harness.model import Batch, ToolCall
from harness.scheduling.context import SchedulerContext
from harness.scheduling.execution import ExecutionPolicy
from harness.scheduling.plan import Plan, PlanError, PlanScheduler


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
    """The batch's calls in the OpenAI shape: a new list each time, of objects made once per batch
    (frozen, without a `__dict__`: nobody can tell them from new ones but by identity), since a bridged
    batch is most often the last one again (a run of one scenario after another: ~7 us of a run). A
    run hands its scheduler a private copy of the batch, so the latest batch is recognised by its calls'
    fields (the copies share their strings: compared by identity first, in C)."""
    global _last
    last = _last
    if last[0] is not batch:  # a batch is frozen, and so are its calls: the same batch, the same objects
        fields = tuple(map(_fields, batch.calls))
        made = last[1] if fields == last[2] else tuple(
            OpenAIToolCall(call_id, OpenAIFunction(name, arguments)) for call_id, name, arguments in fields)
        last = _last = (batch, made, fields)  # assigned at once: safe across threads
    return list(last[1])


_fields = attrgetter("id", "name", "arguments")
#: The latest batch, its calls, and their fields (the batch is held, so its identity cannot be reused
#: while cached).
_last: tuple[Batch | None, tuple[OpenAIToolCall, ...], tuple[tuple[str, str, str], ...] | None] = (None, (), None)


GateFn = Callable[[list[OpenAIToolCall]], bool]
PlanFn = Callable[[list[OpenAIToolCall]], Any]

#: hermes' segment tags (`_plan_tool_batch_segments` returns `("parallel" | "sequential", calls)`).
_SEGMENT_TAGS = {"parallel": True, "sequential": False}


#: The keyword hermes' dispatcher passes the terminal's live working directory under
#: (`_plan_tool_batch_segments(tool_calls, execution_cwd=...)`).
EXECUTION_CWD = "execution_cwd"


def _cwd_keyword(fn: Callable[..., Any], keyword: str | None) -> str | None:
    """The keyword `fn` is given the terminal's live cwd under: `keyword` if named (`fn` must take
    it), else `execution_cwd` when `fn` has a parameter of that name, else none."""
    try:
        parameters = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # a builtin or C callable without a signature: pass nothing unasked
        parameters = None
    if keyword is None:
        return EXECUTION_CWD if parameters is not None and EXECUTION_CWD in parameters else None
    takes_any = parameters is not None and any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    if parameters is not None and keyword not in parameters and not takes_any:
        raise ValueError(f"cwd_keyword={keyword!r}: {origin_name(fn, 'the function')} takes no argument "
                         f"{keyword!r} (its parameters: {', '.join(parameters) or 'none'})")
    return keyword


def _ask(fn: Callable[..., Any], batch: Batch, ctx: SchedulerContext, world_view: bool,
         cwd_keyword: str | None = None) -> Any:
    """The user's function on the batch, seeing the world if asked, and the terminal's live cwd
    (`ctx.cwd`: where relative paths of the batch's tools will land) under `cwd_keyword` if it takes one."""
    calls = openai_tool_calls(batch)
    keywords = {cwd_keyword: ctx.cwd} if cwd_keyword is not None else None
    if not world_view:
        return fn(calls, **(keywords or {}))
    # The context deliberately has no public door to the world (schedulers see declared metadata
    # only); the world view is the one read-only reader of it, for code that calls `os` itself.
    world = ctx._world
    return call_in_world(fn, calls, fs=world.fs, cwd=ctx.process_cwd, home=ctx.home, users=ctx.users,
                         keywords=keywords)


class _Gate(PlanScheduler):
    def __init__(self, fn: GateFn, name: str, max_workers: int | None, description: str,
                 execution: ExecutionPolicy | None, world_view: bool, cwd_keyword: str | None = None) -> None:
        super().__init__(execution)
        self.fn, self.max_workers, self.world_view = fn, max_workers, world_view
        self.cwd_keyword = cwd_keyword
        self.name = name
        self.description = description

    def plan(self, batch: Batch, ctx: SchedulerContext) -> Plan:
        if _ask(self.fn, batch, ctx, self.world_view, self.cwd_keyword):
            return Plan.parallel(batch, cap=self.max_workers, summary="gate: parallel")
        return Plan.serial(batch, summary="gate: serial")


def _call_id(item: Any, batch: Batch, owner: str) -> str:
    """A call named in a plan: a tool call, its id, or its position in the batch."""
    if isinstance(item, OpenAIToolCall | ToolCall):
        return item.id
    if isinstance(item, str):
        return item
    if isinstance(item, int) and not isinstance(item, bool) and 0 <= item < len(batch.calls):
        return batch.calls[item].id
    raise PlanError(f"{owner} named a call as {item!r}: expected a tool call, its id or its position in the batch")


def _tagged(item: Any) -> tuple[bool, Sequence[Any]] | None:
    """`(parallel, calls)` if `item` is a hermes-style segment — `(True | False, calls)` or
    `("parallel" | "sequential", calls)` — else None (a plain segment: a list of calls)."""
    if not isinstance(item, Sequence) or isinstance(item, str) or len(item) != 2:
        return None
    tag, calls = item
    if not isinstance(calls, Sequence) or isinstance(calls, str):
        return None
    if isinstance(tag, bool):
        return tag, calls
    if isinstance(tag, str) and tag in _SEGMENT_TAGS:
        return _SEGMENT_TAGS[tag], calls
    if isinstance(tag, str) and calls and all(isinstance(c, OpenAIToolCall | ToolCall) for c in calls):
        # `(tag, calls)` with an unknown tag: say so, rather than complain that a list is no call.
        raise PlanError(f"segment tag {tag!r}: expected True, False, 'parallel' or 'sequential'")
    return None


def segments_of(decided: Sequence[Any], batch: Batch, owner: str = "planner") -> list[list[str]]:
    """Ordered segments of call ids from what a planner returned: plain segments (each runs in
    parallel) and hermes-style `(parallel, calls)` pairs, where a sequential pair means one call at
    a time, in its order."""
    segments: list[list[str]] = []
    for item in decided:
        tagged = _tagged(item)
        if tagged is not None:
            parallel, calls = tagged
            ids = [_call_id(c, batch, owner) for c in calls]
            segments.extend([ids] if parallel else [[i] for i in ids])
        elif isinstance(item, Sequence) and not isinstance(item, str):
            segments.append([_call_id(c, batch, owner) for c in item])
        else:
            raise PlanError(f"{owner} returned a segment {item!r}: expected a list of calls or a "
                            "(parallel, calls) pair")
    return [segment for segment in segments if segment]


class _Planner(PlanScheduler):
    def __init__(self, fn: PlanFn, name: str, cap: int | None, description: str,
                 execution: ExecutionPolicy | None, world_view: bool, cwd_keyword: str | None = None) -> None:
        super().__init__(execution)
        self.fn, self.cap, self.world_view = fn, cap, world_view
        self.cwd_keyword = cwd_keyword
        self.name = name
        self.description = description

    def plan(self, batch: Batch, ctx: SchedulerContext) -> Plan:
        decided = _ask(self.fn, batch, ctx, self.world_view, self.cwd_keyword)
        if isinstance(decided, Mapping):  # dependency edges: id -> ids it waits for
            return Plan({c.id: tuple(decided.get(c.id, ())) for c in batch}, cap=self.cap,
                        summary="dependency edges")
        if not isinstance(decided, Sequence) or isinstance(decided, str):
            raise PlanError(f"{self.name} returned {type(decided).__name__}: expected a list of segments "
                            "or a mapping of dependency edges")
        return Plan.segments(batch, segments_of(decided, batch, self.name), cap=self.cap)


def from_gate(fn: GateFn, *, name: str | None = None, max_workers: int | None = None,
              description: str = "", execution: ExecutionPolicy | None = None,
              world_view: bool = True, cwd_keyword: str | None = None) -> PlanScheduler:
    """A scheduler from `fn(tool_calls) -> bool`: True runs the whole batch in parallel (at most
    `max_workers` at once), False runs it serially in model order. Results are in model order.

    With `world_view` (the default), `fn` runs with `os`, `os.path`, `pathlib` and `open` answering
    from the run's world at the start of the batch, read-only (see `harness.bridges.planners.world_view`);
    a write is a scheduler error. A function with a parameter `execution_cwd` (hermes' dispatcher
    passes it) is given the terminal's live working directory there, the directory the batch's
    relative paths land in (`os.getcwd()` stays the process's); `cwd_keyword` names another
    parameter for it. The scheduler is `name`, else `fn`'s module and qualified name
    (`acme.policy.should_parallelize`: see `harness.bridges.naming`)."""
    return _Gate(fn, name or origin_name(fn, "gate"), max_workers,
                 description or "a gate function: all parallel or all serial", execution, world_view,
                 _cwd_keyword(fn, cwd_keyword))


def from_plan(fn: PlanFn, *, name: str | None = None, cap: int | None = None, description: str = "",
              execution: ExecutionPolicy | None = None, world_view: bool = True,
              cwd_keyword: str | None = None) -> PlanScheduler:
    """A scheduler from `fn(tool_calls)` returning ordered segments or a mapping of dependency edges
    (id -> ids it waits for). A segment is a list of calls (tool calls, ids or positions), which run
    in parallel once the previous segment settled, or a hermes-style pair `(parallel, calls)` with
    `parallel` a bool or `"parallel"` / `"sequential"`: a sequential pair runs its calls one at a
    time, in order. Results are in model order. `world_view`, `execution_cwd` (`cwd_keyword`) and the
    name as for `from_gate`."""
    return _Planner(fn, name or origin_name(fn, "planner"), cap,
                    description or "a planner function: ordered segments", execution, world_view,
                    _cwd_keyword(fn, cwd_keyword))
