"""Hangs diagnosed (harness.run.hang, harness.report.hang): every unfinished call and what it
waits on, read from the live simulation at the hang: a lock held by another call (and the cycle), a
depends_on predecessor never started, an asyncio primitive nobody sets, a thread's wait; in the text,
JSON and HTML reports, the liveness witness and a failing check_scheduler; and the diagnosis changes
no run's trace or fingerprint."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import find_scenario, get_scheduler, run
from harness.bridges import from_threads
from harness.oracles import check
from harness.report.hang import hang_lines
from harness.run import RunResult, RunStatus
from harness.testing import SchedulerCheckFailed, check_scheduler
from tests.report import crew_hang_schedulers as crew_hangs
from tests.report import hang_schedulers as hangs

HERE = "tests/report/hang_schedulers.py"


def _waits(result: RunResult) -> list[str]:
    assert result.status is RunStatus.HANG
    diagnosis = result.batches[-1].waits
    assert diagnosis is not None
    return diagnosis.lines()


def _normal(lines: list[str]) -> list[str]:
    """Source paths as the test tree spells them, wherever pytest runs from."""
    return [line.replace(str(Path(HERE).resolve()), HERE) for line in lines]


def test_two_locks_taken_in_opposite_order() -> None:
    result = run(find_scenario("edit-then-test"), hangs.OppositeLocks(), 1)
    assert _normal(_waits(result)) == [
        f"write-fix (not started): waits for a turn at locks['file:/repo/b'] (a lock), held by run-tests  "
        f"at {HERE}:29 (worker)",
        f"run-tests (not started): waits for a turn at locks['file:/repo/a'] (a lock), held by write-fix  "
        f"at {HERE}:29 (worker)",
        f"scheduler (waiting): waits for all of: the process of write-fix; the process of run-tests  "
        f"at {HERE}:36 (__call__)",
        "deadlock: write-fix waits for locks['file:/repo/b'], held by run-tests; run-tests waits for "
        "locks['file:/repo/a'], held by write-fix",
    ]
    hang = next(v for verdict in check(result) for v in verdict.violations if v.label == "hang")
    assert hang.witness["deadlock"] == list(result.batches[-1].waits.cycle)  # type: ignore[union-attr]
    assert len(hang.witness["waits"]) == 3
    from harness.report.explain import explain

    assert ("It is a deadlock: write-fix waits for locks['file:/repo/b'], held by run-tests; run-tests waits for "
            "locks['file:/repo/a'], held by write-fix.") in explain(hang, result)


def test_a_depends_on_predecessor_never_started() -> None:
    result = run(find_scenario("fix-then-test-dag"), hangs.ForgetsTheRoots(), 1)
    assert _normal(_waits(result)) == [
        "write-fix (not started): no process of the scheduler's is waiting to start it",
        "run-tests (not started): waits for all of: done['write-fix']: its depends_on predecessor write-fix to "
        f"settle (write-fix never started)  at {HERE}:50 (runner)",
        f"scheduler (waiting): waits for all of: the process of run-tests  at {HERE}:56 (__call__)",
    ]


def test_a_bridged_asyncio_runtime_awaiting_an_event_never_set() -> None:
    result = run(find_scenario("edit-then-test"), hangs.never_ready, 1)
    lines = _normal(_waits(result))
    assert lines == [
        "scheduler (waiting): waits for its asyncio executor, whose tasks wait as listed",
        f"executor (task): awaits asyncio.gather() of 2 awaitables, 2 still pending  at {HERE}:71 (waits_for_ready)",
        f"run-tests (task): awaits asyncio.Event.wait() on gate (an Event nobody sets)  at {HERE}:68 (one)",
        f"write-fix (task): awaits asyncio.Event.wait() on gate (an Event nobody sets)  at {HERE}:68 (one)",
    ]
    task = next(w for w in result.batches[-1].waits.waits if w.who == "write-fix")  # type: ignore[union-attr]
    assert task.stack[-2].endswith(":68 (one)") and task.stack[-1].endswith("(wait)")  # the awaited primitive


def test_a_threaded_runtime_waiting_on_an_event_never_set() -> None:
    result = run(find_scenario("edit-then-test"), from_threads(hangs.lock_then_wait, name="threads-wait"), 1)
    lines = _normal(_waits(result))
    assert lines[0] == "scheduler (waiting): waits for its threaded executor, whose threads wait as listed"
    assert f"write-fix (thread): waits in Event.wait() on go  at {HERE}:85 (one)" in lines
    assert f"run-tests (thread): waits in Event.wait() on go  at {HERE}:85 (one)" in lines
    assert any(line.startswith("thread MainThread (thread): waits in Future.result()") for line in lines)


def test_a_built_in_policy_past_the_time_bound() -> None:
    result = run(find_scenario("stuck-extract"), get_scheduler("parallel"), 1)
    assert _waits(result) == ["extract (running): started at 0 ms and still running when the run stopped; its next "
                              "step was due at 3600000 ms, past the 600000 ms time bound",
                              "scheduler (waiting): waits for all of: the result of extract (attempt 1, still running)"]


@pytest.mark.parametrize("scheduler", [hangs.OppositeLocks(), hangs.ForgetsTheRoots(), hangs.never_ready,
                                       get_scheduler("parallel")])
def test_the_diagnosis_changes_no_run(scheduler: object, monkeypatch: pytest.MonkeyPatch) -> None:
    name = "fix-then-test-dag" if isinstance(scheduler, hangs.ForgetsTheRoots) else (
        "stuck-extract" if getattr(scheduler, "name", "") == "parallel" else "edit-then-test")
    diagnosed = run(find_scenario(name), scheduler, 1)  # type: ignore[arg-type]
    # `harness.run` the attribute is the function; the module is what the run loop reads.
    monkeypatch.setattr(importlib.import_module("harness.run.batch"), "diagnose", lambda ctx, process, *rest: None)
    plain = run(find_scenario(name), scheduler, 1)  # type: ignore[arg-type]
    assert diagnosed.batches[-1].waits is not None and plain.batches[-1].waits is None
    assert diagnosed.trace == plain.trace and diagnosed.fingerprint == plain.fingerprint


def test_a_diagnosis_that_cannot_read_something_is_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.run import hang as waits

    def broken(self: object) -> None:
        raise RuntimeError("unreadable")

    monkeypatch.setattr(waits._Inspector, "diagnose", broken)
    result = run(find_scenario("edit-then-test"), hangs.OppositeLocks(), 1)
    assert result.status is RunStatus.HANG and result.batches[-1].waits is None
    assert hang_lines(result) == []


def invoke(*args: str) -> tuple[int, str]:
    from harness.cli import main

    ran = CliRunner().invoke(main, list(args))
    return ran.exit_code, ran.stdout


def test_run_text_json_and_html_show_the_diagnosis(tmp_path: Path) -> None:
    spec = "tests.report.hang_schedulers:OppositeLocks"
    code, out = invoke("run", "edit-then-test", "--scheduler", spec, "--out", str(tmp_path))
    assert code == 3
    assert "hang in batch 0 (stopped at 10 ms, idle): what each unfinished call waits on" in out
    assert "  deadlock: write-fix waits for locks['file:/repo/b'], held by run-tests;" in out
    page = (tmp_path / "index.html").read_text()
    assert "What the hung batch waited on" in page and "held by run-tests" in page
    code, out = invoke("run", "edit-then-test", "--scheduler", spec, "--format", "json")
    document = json.loads(out)
    waits = document["batches"][0]["waits"]
    assert [w["who"] for w in waits["waits"]] == ["write-fix", "run-tests", "scheduler"]
    assert waits["waits"][0]["stack"][-1].endswith("hang_schedulers.py:29 (worker)")
    assert len(waits["deadlock"]) == 2
    hang = next(v for verdict in document["verdicts"] for v in verdict["violations"] if v["label"] == "hang")
    assert hang["witness"]["deadlock"] == waits["deadlock"]


def test_check_scheduler_failure_says_what_each_call_waits_on() -> None:
    with pytest.raises(SchedulerCheckFailed) as failed:
        check_scheduler(hangs.OppositeLocks(), scenarios=["edit-then-test"], generated=False, swarm=False)
    text = failed.value.failures[0].text
    assert "hang in batch 0" in text and "deadlock: write-fix waits for locks['file:/repo/b']" in text
    # An instance has no command line: the failure says how to get one, and prints none that cannot run.
    assert "give it by name" in text and "reproduce:" not in text


def test_explore_and_replay_show_the_diagnosis(tmp_path: Path) -> None:
    spec = "tests.report.hang_schedulers:OppositeLocks"
    code, out = invoke("explore", "edit-then-test", "--scheduler", spec, "--runs", "3", "--save-dir", str(tmp_path))
    assert code == 3
    assert "FOUND hang" in out and "  deadlock: write-fix waits for locks['file:/repo/b']" in out
    saved = next(tmp_path.glob("*.json"))
    code, out = invoke("replay", str(saved), "--trust-module", "tests.report.hang_schedulers")
    assert code == 3
    assert "hang in batch 0 (stopped at 10 ms, idle)" in out and "held by run-tests" in out


# -- a deadlock across agents ------------------------------------------------------------------------


def _turn(agent: str, first: str, second: str) -> dict[str, object]:
    """An agent whose one turn writes `first` then `second`."""
    return {"name": agent, "model": {"task": f"write {first} then {second}", "think": {"fixed": 100}, "rules": [
        {"name": "write", "when": {"round": 1}, "action": "tool_call", "calls": [
            {"id": f"w-{first}", "name": "write_file", "arguments": json.dumps({"path": first, "content": agent})},
            {"id": f"w-{second}", "name": "write_file", "arguments": json.dumps({"path": second, "content": agent})}]},
        {"name": "answer", "when": {"round": 2}, "action": "final_answer", "text": "done"}]}}


CROSSED = {"name": "crossed-writes", "world": {"cwd": "/repo", "files": {"/repo/a.txt": "a\n", "/repo/b.txt": "b\n"}},
           "tools": {"write_file": {"latency": {"fixed": 100}}},
           "agents": [_turn("left", "a.txt", "b.txt"), _turn("right", "b.txt", "a.txt")]}


@pytest.mark.parametrize(("scheduler", "cycle"), [
    (crew_hangs.BatchLocks(),
     "the scheduler of batch 0 (left) waits for locks['file:/repo/b.txt'], held by the scheduler of batch 1 (right); "
     "the scheduler of batch 1 (right) waits for locks['file:/repo/a.txt'], held by the scheduler of batch 0 (left)"),
    (crew_hangs.FirstCallLocks(),
     "left/w-a.txt waits for locks['file:/repo/b.txt'], held by right/w-b.txt; "
     "right/w-b.txt waits for locks['file:/repo/a.txt'], held by left/w-a.txt"),
])
def test_a_deadlock_across_agents_is_named_once_and_the_witness_lists_what_the_report_lists(
        scheduler: object, cycle: str) -> None:
    """Each agent's scheduler (or call) holds a lock the other's needs. The report named no cycle (each
    batch's diagnosis looked for one among its own calls only, and called the other agent's scheduler
    "a process at ...") and listed both agents' calls, where the witness had only the last batch's."""
    from harness.report.explain import explain
    from harness.scenario import scenario_from_data

    result = run(scenario_from_data(CROSSED), scheduler, 1)  # type: ignore[arg-type]
    assert result.status is RunStatus.HANG and [b.agent for b in result.batches] == ["left", "right"]
    lines = hang_lines(result)
    assert [line for line in lines if "deadlock" in line] == [f"  deadlock across batches 0 and 1: {cycle}"]
    assert lines[-1] == f"  deadlock across batches 0 and 1: {cycle}"
    hang = next(v for verdict in check(result) for v in verdict.violations if v.label == "hang")
    assert hang.witness["batches"] == [0, 1] and "; ".join(hang.witness["deadlock"]) == cycle
    ids = {call.id for call in result.scenario.calls}
    listed = {line.split()[0] for line in lines if line.startswith("  ") and line.split()[0] in ids}
    unfinished = {*hang.witness["pending"], *hang.witness["never_started"], *hang.witness["skipped"]}
    assert listed == unfinished == {"left/w-a.txt", "left/w-b.txt", "right/w-b.txt", "right/w-a.txt"}
    waits = [f"batch {b.index}: {w.line()}" for b in result.batches for w in b.waits.waits]  # type: ignore[union-attr]
    assert hang.witness["waits"] == waits
    assert explain(hang, result).startswith("The schedulers of batches 0 and 1 (one turn of each agent still running)")
    from rich.console import Console

    from harness import __version__
    from harness.report.run_text import render_run

    console = Console(record=True, width=400, color_system=None)
    render_run(result, console, version=__version__, verdicts=check(result))
    text = console.export_text()
    assert text.count("deadlock across batches 0 and 1") == 1
    assert "  left       stopped after 1 round, 2 tool calls" in text  # a count of one is singular
