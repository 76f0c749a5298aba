"""Agent events (the loop's event bus, recorded in the trace as `agent` events) and data-flow reads
(`input` events) as one line each, for timelines.

Owns their wording, in the style of seed 004's event stream (`[TOOL_FINISHED] ...`). It never
computes anything a JSON reader of the trace could not see.
"""

from __future__ import annotations

from harness.sim.trace import TraceEvent, canonical_json


def describe_agent(event: TraceEvent) -> str:
    kind = event.get("event", "?")
    round_ = f" round {event['round']}" if "round" in event else ""
    if kind == "AGENT_STARTED":
        return f"[AGENT_STARTED] {event.get('loop', '')} (max_round {event.get('max_round')}): {event.get('task', '')}"
    if kind == "PLANNER_DECISION":
        text = f"[PLANNER_DECISION]{round_} {event.get('type')}"
        if event.get("calls"):
            text += " " + ", ".join(f"{c} ({t})" for c, t in zip(event["calls"], event.get("tools", []), strict=False))
        if event.get("content"):
            text += f": {_short(event['content'])}"
        if event.get("problem"):
            text += f" [{event['problem']}]"
        if event.get("reason"):
            text += f" — {_short(event['reason'])}"
        return text
    if kind in ("TOOL_STARTED", "TOOL_FINISHED"):
        return f"[{kind}]{round_} {event.get('tool', '')}"
    if kind == "TOOL_ERROR":
        refused = " (refused: tool unavailable)" if event.get("refused") else ""
        return f"[TOOL_ERROR]{round_} {event.get('tool', '')}: {_short(str(event.get('error')))}{refused}"
    if kind == "CONTEXT_UPDATED":
        parts = [f"{event.get('role', event.get('change', ''))} message, {event.get('messages')} in context"]
        for key in ("compressed", "dropped", "disabled", "rejected"):
            if event.get(key) is not None:
                parts.append(f"{key} {event[key]}" if event[key] is not True else key)
        if event.get("hinted") is not None:
            parts.append(f"hint: {event['hinted']} may be unavailable")
        return f"[CONTEXT_UPDATED]{round_} " + ", ".join(parts)
    if kind == "HUMAN_CONFIRM_REQUIRED":
        return f"[HUMAN_CONFIRM_REQUIRED]{round_} {_short(str(event.get('question', '')))}"
    if kind == "AGENT_FINISHED":
        detail = event.get("answer") or event.get("detail") or ""
        return f"[AGENT_FINISHED]{round_} {event.get('status')}" + (f": {_short(str(detail), 100)}" if detail else "")
    return f"[{kind}] {canonical_json({k: v for k, v in event.items() if k not in ('t', 'seq', 'ev', 'event')})}"


def describe_input(event: TraceEvent) -> str:
    producers = ", ".join(event.get("producers", []))
    if event.get("found"):
        return f"reads {event['arg']} from {producers}"
    return f"reads {event['arg']} from {producers}: no value yet (null)"


def _short(text: str, limit: int = 80) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."
