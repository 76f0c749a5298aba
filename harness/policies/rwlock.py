"""`rwlock`: Codex's fair reader/writer lock.

Rule: every call takes one lock in model order (FIFO, fair): tools that support parallel calls
(declared read-only, not interactive) take it shared, every other tool exclusively. A shared holder
waits for the exclusive holder before it; an exclusive one waits for everything before it. Results
in model order. This yields the same schedule as `partition` without its cap, reached through a lock
instead of a planner.
"""

from __future__ import annotations

from harness.model import Batch
from harness.policies.partition import concurrency_safe
from harness.scheduling.context import SchedulerContext
from harness.scheduling.plan import Plan, PlanScheduler


class RwLock(PlanScheduler):
    name = "rwlock"
    description = "fair FIFO reader/writer lock: parallel-capable tools shared, others exclusive"
    source = "Codex"

    def plan(self, batch: Batch, ctx: SchedulerContext) -> Plan:
        after: dict[str, tuple[str, ...]] = {}
        last_exclusive: str | None = None
        since: list[str] = []  # shared holders since the last exclusive one
        for call in batch:
            if concurrency_safe(call, ctx):
                after[call.id] = (last_exclusive,) if last_exclusive else ()
                since.append(call.id)
            else:
                after[call.id] = tuple(since) or ((last_exclusive,) if last_exclusive else ())
                last_exclusive, since = call.id, []
        return Plan(after, summary="fair reader/writer lock in model order")
