"""`serial`: one call at a time, in model order. The reference every other policy is measured against.

Rule: start call i+1 only after call i has settled; report in model order. On a user interrupt it
does what hermes-agent does: calls not yet started are skipped with a `cancelled` result, the running
call gets the grace period and is then abandoned. When the scenario scripts a user (`[approvals]`),
a `needs_confirmation` call waits for the approval first and is not run when denied or unanswered
(`approval_timeout_ms`). Source: every runtime with parallel tool calls switched off.
"""

from __future__ import annotations

from harness.model import Batch, CallResult
from harness.scheduling.approval_gate import gate
from harness.scheduling.context import SchedulerContext, SchedulerProcess


class Serial:
    name = "serial"
    description = "one call at a time in model order (the safe, slow reference)"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        results: list[CallResult] = []
        asking = ctx.scripted_user  # without a scripted user no call needs approval (`needs_approval`)
        for call in batch:
            if ctx.interrupted:
                results.append(ctx.skip(call))
                continue
            if asking and ctx.needs_approval(call):  # (asked here first: `gate` is a generator)
                denied = yield from gate(ctx, call, ctx.execution.approval_timeout_ms, stop=ctx.interrupt)
                if denied is not None:
                    results.append(denied)
                    continue
                if ctx.interrupted:  # the user interrupted while the approval was pending
                    results.append(ctx.skip(call))
                    continue
            result = yield ctx.settle(ctx.start(call))
            results.append(result)
        return results
