"""The Gantt chart's data: racing touches marked and labelled, violating calls, marked lines for
interrupts, timeouts and crashes, stacked attempts, and lanes that stay legible at 200 calls."""

from __future__ import annotations

import itertools
from pathlib import Path

from harness import find_scenario, get_scheduler, run
from harness.oracles import check
from harness.report import plots
from harness.report.gantt import LANE_LIMIT, gantt_data
from tests.helpers import scenario
from tests.oracles.schedulers import TimesOut


def test_edit_then_test_marks_and_labels_the_racing_touches() -> None:
    result = run(find_scenario("edit-then-test"), get_scheduler("parallel"), 1)
    data = gantt_data(result, check(result))
    assert data["lanes"] == ["write-fix", "run-tests"] and not data["packed"]
    assert data["violating"] == ["run-tests", "write-fix"]
    assert [(t["label"], t["call"], t["t"], t["lane"]) for t in data["racing"]] == [
        ("torn-read: truncate", "write-fix", 0, 0), ("torn-read: read", "run-tests", 210, 1),
        ("torn-read: write", "write-fix", 266, 0)]
    assert data["violations"] == [{"label": "torn-read", "oracle": "serializability",
                                   "calls": ["run-tests", "write-fix"],
                                   "explanation": data["violations"][0]["explanation"]}]
    assert data["violations"][0]["explanation"].startswith("run-tests read /repo/src/app.py at 210 ms")


def test_timeouts_interrupts_and_crashes_are_marked_lines() -> None:
    ticket = run(find_scenario("duplicate-ticket"), TimesOut(300), 1)
    data = gantt_data(ticket, check(ticket))
    assert {"kind": "timeout", "t": 300, "call": "open-ticket"} in data["lines"]
    # the detached rest of the abandoned attempt does not overlap its first part: one row
    assert data["lane_rows"] == [1] and [b["row"] for b in data["bars"]] == [0, 0]
    assert [(t["label"], t["t"]) for t in data["racing"]] == [("ghost-effect: effect", 450)]
    interrupted = run(find_scenario("interrupt-midbatch"), get_scheduler("parallel"), 1)
    assert {"kind": "interrupt", "t": 1500} in gantt_data(interrupted, check(interrupted))["lines"]
    crashed = scenario([("a", "web_search", {"query": "x"}), ("b", "web_search", {"query": "y"})],
                       faults={"crash": {"at_ms": 500}}, tools={"web_search": {"latency": {"fixed": 1000}}})
    assert {"kind": "crash", "t": 500} in gantt_data(run(crashed, get_scheduler("parallel"), 1))["lines"]


def test_two_hundred_calls_stay_legible(tmp_path: Path) -> None:
    calls = [(f"q{i:03d}", "web_search", {"query": str(i)}) for i in range(200)]
    calls.insert(100, ("w", "write_file", {"path": "a.txt", "content": "new"}))
    calls.insert(150, ("r", "read_file", {"path": "a.txt"}))
    sc = scenario(calls, files={"/repo/a.txt": "old"}, max_concurrency=8,
                  tools={"web_search": {"latency": {"uniform": [100, 3000]}}})
    result = run(sc, get_scheduler("parallel"), 1)
    data = gantt_data(result, check(result))
    assert data["packed"] and len(data["lanes"]) <= LANE_LIMIT
    # the racing calls keep lanes of their own, named, first
    assert data["lanes"][:2] == ["w", "r"] and {t["lane"] for t in data["racing"]} == {0, 1}
    # every bar is somewhere; calls sharing a lane never overlap in it
    aggregate = data["aggregate"]
    assert aggregate is not None and aggregate["lane"] == len(data["lanes"]) - 1
    assert data["lanes"][-1] == f"{len(aggregate['calls'])} more calls"
    by_lane: dict[int, list[tuple[int, int]]] = {}
    for bar in data["bars"]:
        assert 0 <= bar["lane"] < len(data["lanes"])
        if bar["lane"] != aggregate["lane"]:
            by_lane.setdefault(bar["lane"], []).append((bar["start"], bar["end"]))
    for spans in by_lane.values():
        spans.sort()
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
    assert {b["call"] for b in data["bars"] if b["lane"] == aggregate["lane"]} == set(aggregate["calls"])
    assert aggregate["peak"] == max(count for _, count in aggregate["steps"]) > 0
    plots.draw_gantt(data, tmp_path / "gantt.png")
    assert (tmp_path / "gantt.png").stat().st_size > 10_000
