"""`partition`: Claude Code's concurrency-safe partitioning (also pydantic-ai's barriers).

Rule: walk the batch in model order; maximal runs of consecutive concurrency-safe calls (declared
read-only, not interactive) form one parallel group, capped at 10 at once; any other call runs alone
between groups. Results in request (model) order. Option (`partition_cancel`): a call that fails
cancels its running siblings ("Cancelled: parallel tool call … errored") and skips the rest of the
batch — REFERENCE.md pattern 5, cascading cancellation.
"""

from __future__ import annotations

from harness.model import Batch, ToolCall
from harness.scheduling.context import SchedulerContext
from harness.scheduling.execution import ExecutionPolicy
from harness.scheduling.plan import Plan, PlanScheduler

MAX_CONCURRENCY = 10


def concurrency_safe(call: ToolCall, ctx: SchedulerContext) -> bool:
    declared = ctx.declared(call)
    return declared is not None and declared.read_only and not declared.interactive and not declared.exclusive


class Partition(PlanScheduler):
    name = "partition"
    description = "consecutive concurrency-safe calls together (cap 10), anything else alone"
    source = "Claude Code, pydantic-ai, Codex"

    def plan(self, batch: Batch, ctx: SchedulerContext) -> Plan:
        segments: list[list[ToolCall]] = []
        for call in batch:
            if concurrency_safe(call, ctx) and segments and all(concurrency_safe(c, ctx) for c in segments[-1]):
                segments[-1].append(call)
            else:
                segments.append([call])
        return Plan.segments(batch, segments, cap=MAX_CONCURRENCY)


class PartitionCancel(Partition):
    name = "partition_cancel"
    description = "partition, and a failing call cancels its running siblings"
    source = "Claude Code (sibling cancellation)"

    def execution_for(self, ctx: SchedulerContext) -> ExecutionPolicy:
        return super().execution_for(ctx).merged(on_failure="cancel_siblings")
