"""The runtime's side of an approval: before starting a call, ask the scripted user (see
`harness.scheduling.approvals`), wait at most a timeout, and give the result to report instead of running
the call when the user denied it or never answered (`gate`); the bridges' form of it, where the tool
itself asks (`asked_by_the_tool`); and the error result of a call not started (`refused`).

Owns that wait only. It never starts a call and never judges one (the `approvals` oracle does).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import simpy

from harness.model import CallResult, Outcome, ToolCall
from harness.scheduling.approvals import Approval
from harness.scheduling.context import SchedulerContext


def gate(ctx: SchedulerContext, call: ToolCall, timeout_ms: int, *,
         stop: simpy.Event | None = None) -> Generator[simpy.Event, Any, CallResult | None]:
    """The runtime's approval step before starting `call`: when the run requires one
    (`ctx.needs_approval`), ask and wait at most `timeout_ms`. Returns None when the call may start
    (approved, or no approval needed, or `stop` fired first: the caller re-checks its own stop
    conditions), else the error result to report instead of running it (denied, or no answer in
    time, which counts as denied)."""
    if not ctx.needs_approval(call):
        return None
    answered = ctx.approval(call)
    timer = ctx.sleep(timeout_ms, "approval-timeout")
    waits = [answered, timer] if stop is None else [answered, timer, stop]
    yield ctx.any_of(waits)
    if answered.triggered:
        approval = answered.value
        if isinstance(approval, Approval) and approval.approved:
            return None
        return refused(ctx, call, f"denied by the user: {call.name} was not run")
    if stop is not None and stop.triggered and not timer.processed:
        return None
    return refused(ctx, call, f"no answer from the user within {timeout_ms} ms, treated as denied: "
                              f"{call.name} was not run")


def asked_by_the_tool(ctx: SchedulerContext, call: ToolCall) -> simpy.Process:
    """The bridges' gate: a runtime run unchanged has no approval step the harness can see, so its
    tools ask, as hermes' terminal tool asks inside the tool (seed 001's approval.py). A process whose
    value is None (go) or the refused result, after at most `approval_timeout_ms`."""
    return ctx.env.process(gate(ctx, call, ctx.execution.approval_timeout_ms))


def refused(ctx: SchedulerContext, call: ToolCall, reason: str) -> CallResult:
    """An error result for a call the runtime did not start, with the reason the model reads."""
    if not ctx.crashed:
        ctx.kernel.record("skip", call=call.id, reason=reason)
    return CallResult(call.id, Outcome.ERROR, None, reason, 0, ctx.now, ctx.now)
