"""Hand-written schedulers for the likelihood tests (tests/report/test_likelihood.py), importable by
the CLI as `tests.report.likelihood_schedulers:NAME`."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from harness.model import Batch, CallResult
from harness.scheduling import SchedulerContext


class ReportsTimeout:
    """One call at a time, each abandoned after the scenario's `timeout_ms` and reported as a timeout,
    though a tool that ignores cancellation keeps running (asyncio.wait_for on a thread)."""

    name = "reports-timeout"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, list[CallResult]]:
        results = []
        for call in batch:
            timeout = ctx.execution.timeout_ms
            handle = ctx.start(call)
            result = yield (ctx.with_timeout(handle, timeout) if timeout is not None else handle)
            results.append(result)
        return results


class Staggered:
    """Starts the calls 700 ms apart without waiting for any of them, then waits for all."""

    name = "staggered"
    gap_ms = 700

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, list[CallResult]]:
        handles = []
        for i, call in enumerate(batch):
            if i:
                yield ctx.sleep(self.gap_ms)
            handles.append(ctx.start(call))
        yield ctx.all_of(handles)
        return [handle.result for handle in handles]
