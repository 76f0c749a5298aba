"""A run as Chrome trace-event JSON, which ui.perfetto.dev and chrome://tracing open.

Owns the mapping: one thread per call (named by id and tool), a complete event ("X") per attempt,
an instant event ("i") per touch, a global instant per interrupt; timestamps in microseconds of
virtual time. It never re-runs anything.
"""

from __future__ import annotations

from typing import Any

from harness.run import RunResult

_US = 1000  # trace-event timestamps are microseconds; virtual time is milliseconds


def chrome_trace(result: RunResult) -> dict[str, Any]:
    tids = {call.id: i + 1 for i, call in enumerate(result.scenario.calls)}
    tools = {call.id: call.name for call in result.scenario.calls}
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0,
         "args": {"name": f"{result.scenario.name} / {result.scheduler} / seed {result.seed}"}},
    ]
    for call_id, tid in tids.items():
        events.append({"ph": "M", "name": "thread_name", "pid": 1, "tid": tid,
                       "args": {"name": f"{call_id} ({tools[call_id]})"}})
        events.append({"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": tid, "args": {"sort_index": tid}})
    open_attempts: dict[tuple[str, int], int] = {}
    for e in result.trace:
        ev = e["ev"]
        if ev == "start":
            open_attempts[(e["call"], e["attempt"])] = e["t"]
        elif ev == "end":
            start = open_attempts.pop((e["call"], e["attempt"]))
            events.append({"ph": "X", "name": f"{tools[e['call']]} #{e['attempt']}", "cat": "call", "pid": 1,
                           "tid": tids[e["call"]], "ts": start * _US, "dur": (e["t"] - start) * _US,
                           "args": {"outcome": e["outcome"], "error": e.get("error"),
                                    "detached": bool(e.get("detached")), "fault": e.get("fault")}})
        elif ev == "touch":
            events.append({"ph": "i", "s": "t", "name": f"{e['op']} {e['target']}", "cat": "touch", "pid": 1,
                           "tid": tids[e["call"]], "ts": e["t"] * _US, "args": {"digest": e.get("digest")}})
        elif ev in ("interrupt", "abandon", "note"):
            events.append({"ph": "i", "s": "g" if ev == "interrupt" else "t", "name": ev, "cat": ev, "pid": 1,
                           "tid": tids.get(e.get("call", ""), 0), "ts": e["t"] * _US,
                           "args": {k: v for k, v in e.items() if k not in ("t", "seq", "ev")}})
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "metadata": {"fingerprint": result.fingerprint, "makespan_ms": result.makespan_ms}}
