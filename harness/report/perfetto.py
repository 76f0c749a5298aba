"""A run as Chrome trace-event JSON, which ui.perfetto.dev and chrome://tracing open.

Owns the mapping: one thread per call (named by id and tool), a complete event ("X") per attempt,
an instant event ("i") per touch, a global instant per interrupt; and, for each violation of the
verdicts given, a global instant event named by its label whose args hold its explanation in words
and its witness, a thread instant on each racing touch, and flow arrows ("s" to "f", one id per
arrow, bound to the attempts' slices) from each racing touch to the next. Timestamps are
microseconds of virtual time. It never re-runs anything and never judges (the verdicts and their
words come from the oracles and `explain`).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from harness.oracles.verdict import Verdict, Violation
from harness.report.explain import explain
from harness.report.races import racing_touches
from harness.run import RunResult

_US = 1000  # trace-event timestamps are microseconds; virtual time is milliseconds
#: Witness fields that say when a violation happened, best first (for violations without touches).
_WHEN = ("read_at_ms", "overwrite_at_ms", "landed_at_ms", "started_at_ms", "t", "returned_at_ms", "stopped_at_ms")


def chrome_trace(result: RunResult, verdicts: Sequence[Verdict] = ()) -> dict[str, Any]:
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
    spans: dict[str, list[tuple[int, int]]] = {}  # per call: its attempts' (start, end) in microseconds
    for e in result.trace:
        ev = e["ev"]
        if ev == "start":
            open_attempts[(e["call"], e["attempt"])] = e["t"]
        elif ev == "end":
            start = open_attempts.pop((e["call"], e["attempt"]))
            spans.setdefault(e["call"], []).append((start * _US, e["t"] * _US))
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
    makespan = max((e["t"] for e in result.trace), default=0)
    for (call, _), start in open_attempts.items():  # still running when the run stopped
        spans.setdefault(call, []).append((start * _US, makespan * _US))
    number = 0
    for verdict in verdicts:
        for violation in verdict.violations:
            number += 1
            events.extend(_violation_events(violation, verdict.oracle, number, result, tids, spans, makespan))
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "metadata": {"fingerprint": result.fingerprint, "makespan_ms": result.makespan_ms}}


def _violation_events(violation: Violation, oracle: str, number: int, result: RunResult, tids: Mapping[str, int],
                      spans: Mapping[str, list[tuple[int, int]]], makespan: int) -> list[dict[str, Any]]:
    words = explain(violation, result)
    touches = [t for t in racing_touches(violation, result) if t["call"] in tids]
    at = touches[-1]["t"] if touches else next(
        (violation.witness[k] for k in _WHEN if isinstance(violation.witness.get(k), int)), makespan)
    events: list[dict[str, Any]] = [{
        "ph": "i", "s": "g", "name": f"violation: {violation.label}", "cat": "violation", "pid": 1, "tid": 0,
        "ts": at * _US,
        "args": {"violation": number, "label": violation.label, "oracle": oracle, "explanation": words,
                 "witness": dict(violation.witness),
                 "racing_touches": [f"{t['call']} {t['op']} {t['target']} at {t['t']} ms" for t in touches]}}]
    for touch in touches:
        events.append({"ph": "i", "s": "t", "name": f"{violation.label}: {touch['role']} {touch['target']}",
                       "cat": "race", "pid": 1, "tid": tids[touch["call"]], "ts": touch["t"] * _US,
                       "args": {"violation": number, "explanation": words}})
    for k, (a, b) in enumerate(itertools.pairwise(touches)):
        flow = number * 1000 + k + 1
        name = f"{violation.label}: {a['role']} -> {b['role']}"
        events.append({"ph": "s", "id": flow, "name": name, "cat": "race", "pid": 1, "tid": tids[a["call"]],
                       "ts": _inside(a, spans)})
        events.append({"ph": "f", "bp": "e", "id": flow, "name": name, "cat": "race", "pid": 1,
                       "tid": tids[b["call"]], "ts": _inside(b, spans)})
    return events


def _inside(touch: Mapping[str, Any], spans: Mapping[str, list[tuple[int, int]]]) -> int:
    """The touch's timestamp, moved one microsecond inside its attempt's slice when it falls on the
    slice's end, so the flow binds to that slice (a flow event binds to the slice enclosing it)."""
    ts = int(touch["t"]) * _US
    for start, end in spans.get(touch["call"], []):
        if start <= ts <= end:
            return ts - 1 if ts == end and end > start else ts
    return ts
