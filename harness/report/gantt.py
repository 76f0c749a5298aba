"""The data of a run's Gantt chart: one lane per call, one bar per attempt, touches, shaded faults
and interrupts, violating calls.

Owns turning a trace into drawable series (`plots.draw_gantt` draws them; tests read them). It never
draws and never re-runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from harness.oracles.verdict import Verdict
from harness.run import RunResult


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


def gantt_data(result: RunResult, verdicts: Sequence[Verdict] = ()) -> dict[str, Any]:
    lanes = [call.id for call in result.scenario.calls]
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
        bars.append({**bar, "end": end_of_run})
    for bar in bars:
        if bar["fault"]:
            shaded.append({"kind": "fault", "start": bar["start"], "end": bar["end"], "call": bar["call"]})
    return {"title": f"{result.scenario.name} / {result.scheduler} / seed {result.seed} "
                     f"(makespan {result.makespan_ms} ms)",
            "lanes": lanes, "bars": bars, "touches": touches, "shaded": shaded, "lines": lines,
            "violating": violating_calls(verdicts, lanes)}
