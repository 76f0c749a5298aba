"""Words for the trace events of approvals and checkpoints, as timelines show them.

Owns one line per `approval_requested`, `approval`, `checkpoint_begin`, `snapshot_read`, `checkpoint` and
`rollback` event (see
`harness.scheduling.approvals` and `harness.scheduling.checkpoints`). It never judges them: the
`approvals` and `checkpoints` oracles do.
"""

from __future__ import annotations

from harness.sim.trace import TraceEvent

GATE_EVENTS = frozenset({"approval_requested", "approval", "checkpoint_begin", "snapshot_read", "checkpoint",
                         "rollback"})


def describe_gate(event: TraceEvent) -> str:
    """One line for an approval or checkpoint event."""
    ev = event["ev"]
    again = f" (request {event['request']})" if event.get("request", 1) != 1 else ""
    if ev == "approval_requested":
        return "asks the user for approval" + again + (" (auto-approved: no [approvals])" if event.get("mode") else "")
    if ev == "approval":
        return f"the user answers {event['answer']}" + again
    named = f"checkpoint {event['checkpoint']}" + (f" '{event['label']}'" if event.get("label") else "")
    if ev == "checkpoint_begin":
        return f"{named} begins: copying {event['files']} files"
    if ev == "snapshot_read":
        copied = f" ({str(event['digest'])[:8]})" if event.get("digest") else " (gone)"
        return f"checkpoint {event['checkpoint']} copies {event['target']}{copied}"
    if ev == "checkpoint":
        return f"{named} taken (file tree {str(event['digest'])[:8]})"
    scope = f" ({', '.join(event['paths'])})" if event.get("paths") is not None else ""
    whole = "" if event.get("digest") == event.get("restored") else ": the restore is incomplete"
    return f"rolled back to {named}{scope}{whole}"
