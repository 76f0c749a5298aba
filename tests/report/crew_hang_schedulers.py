"""Schedulers that deadlock across agents: each takes locks from one table the whole run shares (as a
runtime serving several agents from one process keeps one), in model order, so two agents naming two
files in opposite orders each hold what the other needs."""

from __future__ import annotations

import weakref
from collections.abc import Generator
from typing import Any

import simpy

from harness.model import Batch, CallResult
from harness.scheduling import SchedulerContext

#: A run-wide lock table (one per simulation), as a runtime serving several agents keeps one per process.
_RUN_LOCKS: weakref.WeakKeyDictionary[simpy.Environment, dict[str, simpy.Resource]] = weakref.WeakKeyDictionary()


class BatchLocks:
    """Locks every file its batch names, in model order, from the run-wide table, holds them all, then
    runs the batch: two agents naming two files in opposite orders deadlock, scheduler against scheduler."""

    name = "batch-locks"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, list[CallResult]]:
        locks = _RUN_LOCKS.setdefault(ctx.env, {})
        held = []
        for call in batch:
            for key in ctx.resource_keys(call):
                request = locks.setdefault(key, ctx.resource(1)).request()
                yield request
                held.append(request)
        handles = [ctx.start(call) for call in batch]
        yield ctx.all_of(handles)
        for request in held:
            request.resource.release(request)
        return [handle.result for handle in handles]


class FirstCallLocks:
    """Runs the batch's first call in a worker that first takes the locks of every file of the batch, in
    model order, from the run-wide table: across two agents, call against call."""

    name = "first-call-locks"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, list[CallResult]]:
        locks = _RUN_LOCKS.setdefault(ctx.env, {})
        keys = [key for call in batch for key in ctx.resource_keys(call)]

        def worker(call: Any) -> Generator[Any, Any, CallResult]:
            held = []
            for key in keys:
                request = locks.setdefault(key, ctx.resource(1)).request()
                yield request
                held.append(request)
                yield ctx.sleep(1)
            result: CallResult = yield ctx.start(call)
            for request in held:
                request.resource.release(request)
            return result

        first = ctx.env.process(worker(batch.calls[0]))
        yield first
        return [first.value]
