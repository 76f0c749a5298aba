"""`lanes`: openai-agents-python's category lanes.

Rule: each tool belongs to a category (its declared `category`: shell, write, read, external, …);
calls of one category run one at a time in model order, categories run concurrently with each
other. Results in model order.

Known weakness it keeps: a shell call and a file edit are in different lanes, so `terminal` and
`patch` on the same file overlap.
"""

from __future__ import annotations

from harness.model import Batch
from harness.scheduling.context import SchedulerContext
from harness.scheduling.plan import Plan, PlanScheduler


class Lanes(PlanScheduler):
    name = "lanes"
    description = "serial within a tool category, categories concurrent"
    source = "openai-agents-python"

    def plan(self, batch: Batch, ctx: SchedulerContext) -> Plan:
        last: dict[str, str] = {}
        after: dict[str, tuple[str, ...]] = {}
        for call in batch:
            declared = ctx.declared(call)
            lane = declared.category if declared is not None else f"unknown:{call.name}"
            after[call.id] = (last[lane],) if lane in last else ()
            last[lane] = call.id
        return Plan(after, summary=f"{len(set(last))} lanes")
