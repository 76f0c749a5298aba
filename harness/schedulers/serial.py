"""`serial`: one call at a time, in model order. The reference every other policy is measured against.

Rule: start call i+1 only after call i has settled; report in model order. Source: the behaviour
of every runtime with parallel tool calls switched off.
"""

from __future__ import annotations

from harness.model import Batch, CallResult
from harness.schedulers.context import SchedulerContext, SchedulerProcess


class Serial:
    name = "serial"
    description = "one call at a time in model order (the safe, slow reference)"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        results: list[CallResult] = []
        for call in batch:
            result = yield ctx.start(call)
            results.append(result)
        return results
