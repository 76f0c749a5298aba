"""`dag`: seed 003's dependency graph.

Rule: a call that declares data dependencies (`depends_on` in the scenario: it needs their output)
starts once they have settled; everything independent runs at once. Results in model order.

Known weakness it keeps: only *declared* data dependencies count. Two independent-looking writes to
one file, or a read of a file a sibling writes, run together.
"""

from __future__ import annotations

from harness.model import Batch
from harness.scheduling.context import SchedulerContext
from harness.scheduling.plan import Plan, PlanScheduler


class Dag(PlanScheduler):
    name = "dag"
    description = "calls wait for their declared data dependencies; independent calls run in parallel"
    source = "seed 003 (DAG of dependent steps)"

    def plan(self, batch: Batch, ctx: SchedulerContext) -> Plan:
        after = {call.id: ctx.depends_on(call) for call in batch}
        edges = sum(len(d) for d in after.values())
        return Plan(after, summary=f"{edges} declared dependencies")
