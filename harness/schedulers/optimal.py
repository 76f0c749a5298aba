"""`optimal`: the fastest schedule that is still model-order serializable — a lower bound.

Rule: it cheats on purpose. It replays the batch in model order with the tools' real semantics to
learn each call's true footprint (what it reads and writes, the shared cwd and ledgers included),
then lets every call start as soon as all earlier calls that conflict with it (one writes what the
other touches) have settled, and keeps interactive tools alone. With no cap of its own, its makespan
is the length of the longest conflict chain: `makespan(policy) / makespan(optimal)` measures how
much a real policy over-serialises. Not a policy a runtime could ship: it knows behaviour.
"""

from __future__ import annotations

from harness.model import Batch
from harness.schedulers.context import SchedulerContext
from harness.schedulers.plan import Plan, PlanScheduler


class Optimal(PlanScheduler):
    name = "optimal"
    description = "conflict-aware lower bound from the tools' real footprints (not shippable: it knows behaviour)"
    source = "harness (measuring stick)"

    def plan(self, batch: Batch, ctx: SchedulerContext) -> Plan:
        footprints = ctx.real_footprints()
        after: dict[str, tuple[str, ...]] = {}
        for i, call in enumerate(batch):
            reads, writes = footprints[call.id]
            declared = ctx.declared(call)
            alone = declared is not None and (declared.interactive or declared.exclusive)
            deps = []
            for earlier in batch.calls[:i]:
                e_reads, e_writes = footprints[earlier.id]
                e_declared = ctx.declared(earlier)
                e_alone = e_declared is not None and (e_declared.interactive or e_declared.exclusive)
                if alone or e_alone or writes & (e_reads | e_writes) or reads & e_writes:
                    deps.append(earlier.id)
            after[call.id] = tuple(deps)
        return Plan(after, summary="conflict graph from real footprints")
