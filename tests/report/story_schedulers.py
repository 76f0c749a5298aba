"""User-written schedulers for the interleaving-story tests: their line numbers are in the golden
file (tests/report/golden/stories.txt), so edit this file only together with it."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from harness.model import Batch, CallResult
from harness.scheduling import SchedulerContext


class StartsAll:
    """Starts every call at once and waits for all of them (the `parallel` mistake, by hand)."""

    name = "starts-all"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, list[CallResult]]:
        handles = []
        for call in batch:
            handles.append(ctx.start(call))
        yield ctx.all_of(handles)
        return [handle.result for handle in handles]


class SerialSwapped:
    """Runs the calls one at a time in model order, then reports the first two values swapped: a bug
    that needs no reordering."""

    name = "serial-swapped"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, list[CallResult]]:
        results = []
        for call in batch:
            result = yield ctx.start(call)
            results.append(result)
        first, second = results[0], results[1]
        results[0] = CallResult(first.call_id, first.outcome, second.value, first.error, first.attempts,
                                first.start_ms, first.end_ms)
        results[1] = CallResult(second.call_id, second.outcome, first.value, second.error, second.attempts,
                                second.start_ms, second.end_ms)
        return results


async def gathers(tool_calls: Any, tools: Any) -> list[Any]:
    """An asyncio executor that runs every call at once (`from_asyncio`)."""
    import asyncio
    import json

    async def one(tc: Any) -> Any:
        return await tools[tc.function.name](**json.loads(tc.function.arguments))

    return await asyncio.gather(*(one(tc) for tc in tool_calls))


async def tasks_then_awaits(tool_calls: Any, tools: Any) -> list[Any]:
    """Makes a task per call, then awaits them in turn."""
    import asyncio
    import json

    tasks = [asyncio.create_task(tools[tc.function.name](**json.loads(tc.function.arguments))) for tc in tool_calls]
    return [await task for task in tasks]
