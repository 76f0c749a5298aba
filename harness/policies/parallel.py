"""`parallel`: every call at once.

Rule: start all calls at the same instant; report in model order (LangGraph ToolNode, AutoGen)
or, with `order="completion"`, in the order they finish (smolagents, goose) — the
results-paired-with-the-wrong-call bug of REFERENCE.md pattern 4. An optional `max_workers` caps
concurrency with a FIFO semaphore, as thread pools do. When the scenario scripts a user
(`[approvals]`), each `needs_confirmation` call waits for its own approval (the others do not wait
for it) and is not run when denied, unanswered, or interrupted while asking.
"""

from __future__ import annotations

from collections.abc import Generator
from operator import attrgetter
from typing import Any, Literal

import simpy

from harness.model import Batch, CallResult, ToolCall
from harness.scheduling.approval_gate import gate
from harness.scheduling.context import SchedulerContext, SchedulerProcess


class Parallel:
    description = "every call at once; results in model order (order=completion: as they finish)"

    def __init__(self, order: Literal["model", "completion"] = "model", max_workers: int | None = None) -> None:
        if order not in ("model", "completion"):
            raise ValueError(f"order must be 'model' or 'completion', got {order!r}")
        if max_workers is not None and max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers}")
        self.order = order
        self.max_workers = max_workers
        self.name = "parallel" if order == "model" else "parallel_completion_order"
        if max_workers is not None:
            self.name += f"[max_workers={max_workers}]"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        finished: list[CallResult] = []
        pool = ctx.resource(self.max_workers) if self.max_workers else None
        runs: list[simpy.Event]
        # (Without a scripted user no call needs approval: `needs_approval` is not asked call by call.)
        if pool is None and (not ctx.scripted_user or not any(ctx.needs_approval(call) for call in batch)):
            # Nothing to wait for before a call starts: its handle is what settles with its result
            # (a process per call would add two events each and change nothing else).
            runs = [ctx.start(call) for call in batch]
        else:
            runs = [ctx.env.process(self._run(call, ctx, pool)) for call in batch]
        if self.order == "completion":
            for run in runs:
                run.callbacks.append(lambda event: finished.append(event.value))
        yield ctx.all_of(runs)
        if self.order == "completion":
            return finished
        values = list(map(_VALUE, runs))  # each run's `value` (all triggered), read from C
        return [value for value in values if isinstance(value, CallResult)]

    @staticmethod
    def _run(
        call: ToolCall, ctx: SchedulerContext, pool: simpy.Resource | None
    ) -> Generator[simpy.Event, Any, CallResult]:
        if ctx.needs_approval(call):
            # Asking takes time: an interrupt meanwhile (the user pressed Esc at the prompt) means no
            # start, as every careful runtime does (the calls it started at once never needed to check).
            denied = yield from gate(ctx, call, ctx.execution.approval_timeout_ms, stop=ctx.interrupt)
            if denied is not None:
                return denied
            if ctx.interrupted:
                return ctx.skip(call)
        if pool is None:
            result: CallResult = yield ctx.start(call)
            return result
        with pool.request() as slot:
            yield slot
            result = yield ctx.start(call)
            return result


_VALUE = attrgetter("_value")
