"""The Perfetto trace follows the Chrome trace-event format, marks each violation with an instant
event carrying its explanation, and links the racing touches with flow arrows."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from harness import find_scenario, get_scheduler, run
from harness.oracles import check
from harness.report.explain import explain
from harness.report.perfetto import chrome_trace

#: Per phase, the fields the trace-event format requires (besides ph, name, pid, tid).
REQUIRED = {"X": {"ts", "dur"}, "i": {"ts", "s"}, "I": {"ts"}, "B": {"ts"}, "E": {"ts"}, "C": {"ts", "args"},
            "M": {"args"}, "s": {"ts", "id", "cat"}, "t": {"ts", "id", "cat"}, "f": {"ts", "id", "cat"}}
METADATA = {"process_name", "process_labels", "process_sort_index", "thread_name", "thread_sort_index"}


def validate(trace: dict[str, Any]) -> None:
    """Check a trace against the trace-event format (JSON object form): what every viewer needs."""
    assert json.loads(json.dumps(trace)) == trace, "not plain JSON"
    assert isinstance(trace["traceEvents"], list) and trace.get("displayTimeUnit") in (None, "ms", "ns")
    slices: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for event in trace["traceEvents"]:
        ph = event["ph"]
        assert ph in REQUIRED, event
        assert isinstance(event["name"], str) and isinstance(event["pid"], int) and isinstance(event["tid"], int)
        missing = REQUIRED[ph] - set(event)
        assert not missing, (missing, event)
        if ph != "M":
            assert isinstance(event["ts"], int | float) and event["ts"] >= 0, event
        if ph == "M":
            assert event["name"] in METADATA and isinstance(event["args"], dict), event
        if ph == "X":
            assert isinstance(event["dur"], int | float) and event["dur"] >= 0, event
            slices.setdefault((event["pid"], event["tid"]), []).append((event["ts"], event["ts"] + event["dur"]))
        if ph == "i":
            assert event["s"] in ("g", "p", "t"), event
        if ph == "f":
            assert event.get("bp", "e") == "e", event
        if "args" in event:
            assert isinstance(event["args"], dict), event
    flows: dict[Any, list[dict[str, Any]]] = {}
    for event in trace["traceEvents"]:
        if event["ph"] in ("s", "t", "f"):
            flows.setdefault(event["id"], []).append(event)
    for flow_id, steps in flows.items():
        assert steps[0]["ph"] == "s" and steps[-1]["ph"] == "f", flow_id
        assert Counter(e["ph"] for e in steps)["s"] == 1 == Counter(e["ph"] for e in steps)["f"], flow_id
        assert len({(e["cat"], e["name"]) for e in steps}) == 1, flow_id
        assert [e["ts"] for e in steps] == sorted(e["ts"] for e in steps), flow_id
        for e in steps:  # a flow event binds to the slice that encloses it on its thread
            assert any(a <= e["ts"] <= b for a, b in slices.get((e["pid"], e["tid"]), [])), e


def test_edit_then_test_trace_marks_the_torn_read() -> None:
    result = run(find_scenario("edit-then-test"), get_scheduler("parallel"), 1)
    verdicts = check(result)
    trace = chrome_trace(result, verdicts)
    validate(trace)
    events = trace["traceEvents"]
    marks = [e for e in events if e.get("cat") == "violation"]
    violation = next(v for verdict in verdicts for v in verdict.violations)
    assert [(e["ph"], e["s"], e["name"], e["ts"]) for e in marks] == [("i", "g", "violation: torn-read", 266_000)]
    assert marks[0]["args"]["explanation"] == explain(violation, result)
    assert marks[0]["args"]["racing_touches"] == [
        "write-fix truncate /repo/src/app.py at 0 ms", "run-tests read /repo/src/app.py at 210 ms",
        "write-fix write /repo/src/app.py at 266 ms"]
    tids = {e["args"]["name"].split()[0]: e["tid"] for e in events if e["name"] == "thread_name"}
    flows = sorted((e["id"], e["ph"], e["tid"], e["ts"]) for e in events if e["ph"] in ("s", "f"))
    # truncate -> read, read -> write: two arrows, each an "s" and an "f" with the same id
    assert flows == [(1001, "f", tids["run-tests"], 210_000), (1001, "s", tids["write-fix"], 0),
                     (1002, "f", tids["write-fix"], 265_999), (1002, "s", tids["run-tests"], 210_000)]
    races = [(e["name"], e["tid"], e["ts"]) for e in events if e.get("cat") == "race" and e["ph"] == "i"]
    assert races == [("torn-read: truncate /repo/src/app.py", tids["write-fix"], 0),
                     ("torn-read: read /repo/src/app.py", tids["run-tests"], 210_000),
                     ("torn-read: write /repo/src/app.py", tids["write-fix"], 266_000)]


def test_every_violation_gets_an_instant_even_without_touches() -> None:
    result = run(find_scenario("interrupt-midbatch"), get_scheduler("parallel"), 1)
    verdicts = check(result)
    trace = chrome_trace(result, verdicts)
    validate(trace)
    marks = [e for e in trace["traceEvents"] if e.get("cat") == "violation"]
    assert [m["name"] for m in marks] == ["violation: grace-exceeded"] * 2
    assert all(m["args"]["explanation"].startswith("The user interrupted at 1500 ms") for m in marks)
    assert not [e for e in trace["traceEvents"] if e["ph"] in ("s", "f")]


def test_a_plain_trace_is_valid_too() -> None:
    validate(chrome_trace(run(find_scenario("config-clobber"), get_scheduler("parallel"), 3)))
    result = run(find_scenario("config-clobber"), get_scheduler("parallel"), 3)
    validate(chrome_trace(result, check(result)))
