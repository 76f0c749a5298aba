"""The data of a run's Gantt chart: lanes of calls, one bar per attempt, touches, the racing touches
of each violation (marked and labelled), shaded faults and grace periods, marked lines for
interrupts, timeouts and crashes, violating calls.

Owns turning a trace into drawable series (`plots.draw_gantt` draws them; tests read them) and the
lane layout: one lane per call up to `LANE_LIMIT` calls; beyond it, the calls a violation names keep
their own lanes, the others share lanes (a call goes into the first lane free when it starts, so
there are as many shared lanes as calls running at once), and what still does not fit is one
aggregate lane drawn as a count of running calls. Attempts of one call that overlap (a detached
attempt still running under its retry) stack inside the lane. It never draws and never re-runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from harness.oracles.verdict import Verdict
from harness.report.explain import explain
from harness.report.races import racing_touches
from harness.run import RunResult

#: Lanes drawn at most; a run with more calls packs them (see the module docstring).
LANE_LIMIT = 30


def violating_calls(verdicts: Sequence[Verdict], call_ids: Iterable[str]) -> list[str]:
    """Call ids named anywhere in the witnesses of violated verdicts."""
    known = set(call_ids)
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, str) and value in known:
            found.add(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)

    for verdict in verdicts:
        for violation in verdict.violations:
            walk(dict(violation.witness))
    return sorted(found)


def gantt_data(result: RunResult, verdicts: Sequence[Verdict] = (), *, lane_limit: int = LANE_LIMIT) -> dict[str, Any]:
    calls = [call.id for call in result.scenario.calls]
    starts: dict[tuple[str, int], dict[str, Any]] = {}
    bars: list[dict[str, Any]] = []
    touches: list[dict[str, Any]] = []
    shaded: list[dict[str, Any]] = []
    lines: list[dict[str, Any]] = []
    end_of_run = max((e["t"] for e in result.trace), default=0)
    for e in result.trace:
        ev = e["ev"]
        if ev == "start":
            starts[(e["call"], e["attempt"])] = {"call": e["call"], "attempt": e["attempt"], "start": e["t"],
                                                 "end": None, "outcome": None, "fault": False, "detached": False}
        elif ev == "abandon":
            # An attempt abandoned in the instant it was started never ran: it has no bar.
            if (e["call"], e["attempt"]) in starts:
                starts[(e["call"], e["attempt"])]["abandoned"] = e["t"]
            if e.get("outcome") == "timeout":
                lines.append({"kind": "timeout", "t": e["t"], "call": e["call"]})
        elif ev == "end":
            if (e["call"], e["attempt"]) not in starts:
                continue
            bar = starts.pop((e["call"], e["attempt"]))
            bar.update(end=e["t"], outcome=e["outcome"], fault=bool(e.get("fault")))
            abandoned = bar.pop("abandoned", None)
            if abandoned is not None and abandoned < e["t"]:
                # The part after the scheduler gave up runs detached: drawn faded, shaded grey.
                bars.append({**bar, "end": abandoned})
                bars.append({**bar, "start": abandoned, "detached": True})
                shaded.append({"kind": "detached", "start": abandoned, "end": e["t"], "call": e["call"]})
            else:
                bars.append(bar)
        elif ev == "touch":
            touches.append({"t": e["t"], "call": e["call"], "op": e["op"], "target": e["target"]})
        elif ev == "interrupt":
            lines.append({"kind": "interrupt", "t": e["t"]})
            shaded.append({"kind": "grace", "start": e["t"], "end": e["t"] + e["grace_ms"]})
        elif ev == "crash":
            lines.append({"kind": "crash", "t": e["t"]})
        elif ev == "batch" and e["index"] > 0:
            lines.append({"kind": "batch", "t": e["t"]})
    for bar in starts.values():  # still running when the run stopped
        bar.pop("abandoned", None)
        bars.append({**bar, "end": end_of_run})
    for bar in bars:
        if bar["fault"]:
            shaded.append({"kind": "fault", "start": bar["start"], "end": bar["end"], "call": bar["call"]})

    violations: list[dict[str, Any]] = []
    racing: list[dict[str, Any]] = []
    for verdict in verdicts:
        for violation in verdict.violations:
            index = len(violations)
            found = racing_touches(violation, result)
            violations.append({"label": violation.label, "oracle": verdict.oracle,
                               "explanation": explain(violation, result),
                               "calls": sorted({t["call"] for t in found})})
            racing.extend({**t, "violation": index, "label": f"{violation.label}: {t['role']}"} for t in found)
    violating = violating_calls(verdicts, calls)

    lanes, lane_of, aggregate = _layout(calls, bars, violating, racing, lane_limit)
    rows = _stack(bars, lane_of, aggregate)
    for item in (*touches, *racing):
        item["lane"] = lane_of.get(item["call"], aggregate["lane"] if aggregate else None)
    return {"title": f"{result.scenario.name} / {result.scheduler} / seed {result.seed} "
                     f"(makespan {result.makespan_ms} ms)",
            "lanes": lanes, "lane_rows": rows, "bars": bars, "touches": touches, "racing": racing,
            "shaded": shaded, "lines": lines, "violating": violating, "violations": violations,
            "packed": lanes != calls, "aggregate": aggregate}


def _layout(calls: list[str], bars: list[dict[str, Any]], violating: list[str], racing: list[dict[str, Any]],
            limit: int) -> tuple[list[str], dict[str, int], dict[str, Any] | None]:
    """Lane names, each call's lane, and the aggregate lane (None when every call has a lane)."""
    if len(calls) <= limit:
        return list(calls), {call: i for i, call in enumerate(calls)}, None
    racers = {t["call"] for t in racing}
    featured = ([call for call in calls if call in racers]
                + [call for call in calls if call in set(violating) - racers])[: limit // 2]
    span: dict[str, tuple[int, int]] = {}
    for bar in bars:
        start, end = span.get(bar["call"], (bar["start"], bar["end"]))
        span[bar["call"]] = (min(start, bar["start"]), max(end, bar["end"]))
    lanes = list(featured)
    lane_of = {call: i for i, call in enumerate(featured)}
    free_at: list[int] = []  # per shared lane: when its last call ends
    room = limit - len(featured) - 1  # one lane is kept for the aggregate
    rest: list[str] = []
    for call in sorted((c for c in calls if c in span and c not in lane_of), key=lambda c: (span[c], calls.index(c))):
        start, end = span[call]
        slot = next((i for i, t in enumerate(free_at) if t <= start), None)
        if slot is None and len(free_at) < room:
            free_at.append(end)
            lanes.append(f"shared lane {len(free_at)}")
            slot = len(free_at) - 1
        if slot is None:
            rest.append(call)
            continue
        free_at[slot] = end
        lane_of[call] = len(featured) + slot
    if not rest:
        return lanes, lane_of, None
    lanes.append(f"{len(rest)} more calls")
    edges = sorted([(span[c][0], 1) for c in rest] + [(span[c][1], -1) for c in rest])
    steps: list[list[int]] = []
    running = 0
    for t, change in edges:
        running += change
        if steps and steps[-1][0] == t:
            steps[-1][1] = running
        else:
            steps.append([t, running])
    return lanes, lane_of, {"lane": len(lanes) - 1, "calls": rest, "steps": steps,
                            "peak": max((s[1] for s in steps), default=0)}


def _stack(bars: list[dict[str, Any]], lane_of: dict[str, int], aggregate: dict[str, Any] | None) -> list[int]:
    """Give each bar its lane and a row inside it (overlapping attempts of one call stack); returns
    the rows of each lane."""
    ends: dict[int, list[int]] = {}
    for bar in sorted(bars, key=lambda b: (b["start"], b["end"])):
        lane = lane_of.get(bar["call"], aggregate["lane"] if aggregate else -1)
        bar["lane"] = lane
        if aggregate is not None and lane == aggregate["lane"]:
            bar["row"] = 0
            continue
        rows = ends.setdefault(lane, [])
        row = next((i for i, end in enumerate(rows) if end <= bar["start"]), None)
        if row is None:
            rows.append(bar["end"])
            row = len(rows) - 1
        rows[row] = bar["end"]
        bar["row"] = row
    count = max(lane_of.values(), default=-1) + 1 + (1 if aggregate else 0)
    return [max(1, len(ends.get(lane, []))) for lane in range(count)]
