"""`resource_keys`: seed 002's metadata scheduler.

Rule: walk the batch in model order. Read-only calls run in parallel, but wait for every earlier
write of the batch ("读排在写后面"). A write locks the resource keys it declares (`file:<abs
path>`; a tool that declares none locks `tool:<name>`) and starts after the previous call on the
same key has *ended, whether it failed or not*, so writes to one key are chained in model order;
when a predecessor failed, the result says "previous write failed". Calls with external side effects
run one at a time, in model order. Results in model order.

Known weaknesses it keeps: keys come from declared metadata, so a tool that lies (a "read-only"
terminal that writes) or a path alias (symlink, hard link, case) slips through; and a write waits for
earlier writes only, not for an earlier read of its key still running (write-after-read: the read
sees the write's truncate or its new content, a `torn-read` or `future-read`).
"""

from __future__ import annotations

from harness.model import Batch
from harness.scheduling.context import SchedulerContext
from harness.scheduling.plan import Plan, PlanScheduler
from harness.tools.spec import SideEffect


class ResourceKeys(PlanScheduler):
    name = "resource_keys"
    description = "reads parallel after earlier writes; writes chained per resource key; external effects serial"
    source = "seed 002 (metadata: read-only, resource key, idempotent)"

    def plan(self, batch: Batch, ctx: SchedulerContext) -> Plan:
        after: dict[str, tuple[str, ...]] = {}
        chained: dict[str, tuple[str, ...]] = {}
        tails: dict[str, str] = {}
        last_external: str | None = None
        writes: list[str] = []
        # A read waits for every write before it: the first len(writes) calls of the writes' list
        # (a prefix wait, linear in the batch; listed as edges it would be quadratic).
        reads_after: dict[str, int] = {}
        for call in batch:
            declared = ctx.declared(call)
            if declared is not None and declared.read_only:
                after[call.id] = ()
                if writes:
                    reads_after[call.id] = len(writes)
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
        return Plan(after, chained=chained, summary=f"{len(writes)} writes, {len(batch) - len(writes)} reads",
                    prefix=tuple(writes), after_prefix=reads_after)
