"""Task-level comparison: on a loop scenario `compare` reports, per scheduler, how often the agent
reached its final answer, the time to that answer (model think time included), the rounds used and
the tool calls made (issue 12, item 6)."""

from __future__ import annotations

import json
import subprocess
import sys

from harness.report.compare import summarise
from harness.sweep import grid, sweep


def test_the_summary_of_a_loop_scenario_has_the_task_figures() -> None:
    rows = sweep(grid(["sales-report", "max-round-exceeded"], ["serial", "parallel"], range(1, 4)))
    summary = summarise(rows, ["serial", "parallel"])
    sales = summary["scenarios"]["sales-report"]
    for name in ("serial", "parallel"):
        task = sales[name]["task"]
        assert task["answered_rate"] == 1.0 and task["endings"] == {"final_answer": 3}
        assert task["rounds_mean"] == 4.0 and task["tool_calls_mean"] == 4.0
    # End to end, think time included: parallel's two queries in one round save 1500 ms of 6550.
    assert sales["serial"]["task"]["time_to_answer_p50_ms"] == 6550.0
    assert sales["parallel"]["task"]["time_to_answer_p50_ms"] == 5050.0
    stuck = summary["scenarios"]["max-round-exceeded"]["parallel"]["task"]
    assert stuck["answered_rate"] == 0.0 and stuck["time_to_answer_p50_ms"] is None
    assert set(stuck["endings"]) == {"max_round"}


def test_a_plain_scenario_has_no_task_figures() -> None:
    rows = sweep(grid(["config-clobber"], ["serial"], range(1, 3)))
    assert "task" not in summarise(rows, ["serial"])["scenarios"]["config-clobber"]["serial"]


def test_compare_prints_the_task_table() -> None:
    done = subprocess.run([sys.executable, "-c", "from harness.cli import main; main()", "compare", "sales-report",
                           "--schedulers", "serial,parallel", "--runs", "3"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "sales-report: the task, end to end" in done.stdout
    as_json = subprocess.run([sys.executable, "-c", "from harness.cli import main; main()", "compare", "sales-report",
                              "--schedulers", "parallel", "--runs", "2", "--format", "json"], capture_output=True,
                             text=True, timeout=120, check=False)
    task = json.loads(as_json.stdout)["scenarios"]["sales-report"]["parallel"]["task"]
    assert task["answered_rate"] == 1.0
