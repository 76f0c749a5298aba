"""`resource_keys`: seed 002's metadata scheduler.

Rule: walk the batch in model order. Read-only calls run in parallel, but when the batch has a
write, every read waits for every write of the batch (note 002: "同一批调用里只要出现写操作，所有读操作都
排在写操作之后", reads after writes; so its reference order is `writes-first`, and serializability
judges it against that order). A write locks the resource keys it declares (`file:<abs path>`; a
tool that declares none locks `tool:<name>`) and starts after the previous call on the same key has
*ended, whether it failed or not*, so writes to one key are chained in model order; when a
predecessor failed, the result says "previous write failed". Calls with external side effects run
one at a time, in model order. Results in model order.

Known weaknesses it keeps: keys come from declared metadata, so a tool that lies (a "read-only"
terminal that writes) or a path alias (symlink, hard link, case) slips through.
"""

from __future__ import annotations

from harness.model import Batch
from harness.scheduling.context import SchedulerContext
from harness.scheduling.plan import Plan, PlanScheduler
from harness.tools.spec import SideEffect


class ResourceKeys(PlanScheduler):
    name = "resource_keys"
    description = "reads parallel after the batch's writes; writes chained per resource key; external effects serial"
    source = "seed 002 (metadata: read-only, resource key, idempotent)"
    #: Reads run after the batch's writes, as note 002 intends (`harness.oracles.reference`).
    reference_order = "writes-first"

    def plan(self, batch: Batch, ctx: SchedulerContext) -> Plan:
        after: dict[str, tuple[str, ...]] = {}
        chained: dict[str, tuple[str, ...]] = {}
        tails: dict[str, str] = {}
        last_external: str | None = None
        writes: list[str] = []
        reads: list[str] = []
        for call in batch:
            declared = ctx.declared(call)
            if declared is not None and declared.read_only:
                after[call.id] = ()
                reads.append(call.id)
                continue
            if declared is not None and declared.side_effect is SideEffect.EXTERNAL:
                deps = [last_external] if last_external else []
                last_external = call.id
            else:
                keys = ctx.resource_keys(call) or (f"tool:{call.name}",)
                deps = [tails[k] for k in keys if k in tails]
                for key in keys:
                    tails[key] = call.id
                if deps:
                    chained[call.id] = tuple(dict.fromkeys(deps))
            after[call.id] = tuple(dict.fromkeys(deps))
            writes.append(call.id)
        # Every read waits for every write of the batch: the whole writes' list as a prefix (a prefix
        # wait, linear in the batch; listed as edges it would be quadratic).
        reads_after = dict.fromkeys(reads, len(writes)) if writes else {}
        return Plan(after, chained=chained, summary=f"{len(writes)} writes, {len(reads)} reads",
                    prefix=tuple(writes), after_prefix=reads_after)
