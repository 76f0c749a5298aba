"""Hand-written schedulers that hang, for the hang-diagnosis tests: their line numbers are in
tests/report/test_hang.py's expectations, so edit this file only together with it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Generator
from typing import Any

from harness.bridges import from_asyncio
from harness.model import Batch, CallResult
from harness.scheduling import SchedulerContext


class OppositeLocks:
    """Each of the first two calls takes both locks, in opposite orders: the textbook deadlock."""

    name = "opposite-locks"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, list[CallResult]]:
        locks = {"file:/repo/a": ctx.resource(1), "file:/repo/b": ctx.resource(1)}

        def worker(call: Any, first: str, second: str) -> Generator[Any, Any, CallResult]:
            with locks[first].request() as held:
                yield held
                yield ctx.sleep(10)
                with locks[second].request() as also:
                    yield also
                    result: CallResult = yield ctx.start(call)
                    return result

        one, two = batch.calls[0], batch.calls[1]
        workers = [ctx.env.process(worker(one, "file:/repo/a", "file:/repo/b")),
                   ctx.env.process(worker(two, "file:/repo/b", "file:/repo/a"))]
        results = yield ctx.all_of(workers)
        return [results[w] for w in workers]


class ForgetsTheRoots:
    """Waits for each call's depends_on predecessors to settle, but starts only calls that have some:
    a call whose predecessor is never started waits for ever."""

    name = "forgets-the-roots"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, list[CallResult]]:
        done = {call.id: ctx.env.event() for call in batch}

        def runner(call: Any) -> Generator[Any, Any, CallResult]:
            yield ctx.all_of([done[d] for d in ctx.depends_on(call)])
            result: CallResult = yield ctx.start(call)
            done[call.id].succeed(result)
            return result

        runners = [ctx.env.process(runner(call)) for call in batch if ctx.depends_on(call)]
        yield ctx.all_of(runners)
        return [r.value for r in runners]


ready = asyncio.Event()  # made per run below; module level only so the diagnosis can name a global


async def waits_for_ready(tool_calls: Any, tools: Any) -> list[Any]:
    """Runs the calls once `ready` is set, which nothing ever does."""
    gate = asyncio.Event()

    async def one(tc: Any) -> Any:
        await gate.wait()
        return await tools[tc.function.name](**json.loads(tc.function.arguments))

    return await asyncio.gather(*(one(tc) for tc in tool_calls))


never_ready = from_asyncio(waits_for_ready, name="never-ready")


def lock_then_wait(tool_calls: Any, tools: Any) -> list[Any]:
    """Each worker thread waits for `go`, an Event nothing sets (a thread-based executor)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    go = threading.Event()

    def one(tc: Any) -> Any:
        go.wait()
        return tools(tc)

    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(one, tool_calls))
