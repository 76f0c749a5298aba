"""`grouped`: seed 003's `group_tool_calls` + `execute_tool_batch`.

Rule: split the batch by `TOOL_METADATA[name]["parallel_safe"]` (unknown tools are not safe): run
all parallel-safe calls first, concurrently, then the rest one by one, and return the results in
that order — parallel group first, then the sequential ones. Here "parallel-safe" is the declared
`read_only` of a non-interactive tool.

Known weaknesses it keeps, on purpose: it reorders. A read that follows a write in model order runs
*before* it (a stale read), and results do not come back in model order (the protocol oracle's
`out-of-order`).
"""

from __future__ import annotations

from harness.model import Batch
from harness.scheduling.context import SchedulerContext
from harness.scheduling.plan import Plan, PlanScheduler


class Grouped(PlanScheduler):
    name = "grouped"
    description = "parallel-safe calls first (concurrently), then the rest one by one; reorders"
    source = "seed 003 (group_tool_calls)"

    def plan(self, batch: Batch, ctx: SchedulerContext) -> Plan:
        safe: list[str] = []
        rest: list[str] = []
        for call in batch:
            declared = ctx.declared(call)
            is_safe = declared is not None and declared.read_only and not declared.interactive
            (safe if is_safe else rest).append(call.id)
        after: dict[str, tuple[str, ...]] = {call_id: () for call_id in safe}
        previous: tuple[str, ...] = tuple(safe)
        for call_id in rest:
            after[call_id] = previous
            previous = (call_id,)
        return Plan(after, report="plan", order=tuple(safe + rest),
                    summary=f"parallel {safe}, then sequential {rest}")
