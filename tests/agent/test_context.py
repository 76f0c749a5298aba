"""Seed 004's context management (sections 3.3 and 5.3): observations compressed by their own lines,
failures and the last two rounds kept when the window is full, what goes archived and found again by
the loop's `recall` tool, and the task report (per-tool counts, estimated tokens)."""

from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner

from harness import find_scenario, get_scheduler, run
from harness.agent.runtime import estimate_tokens
from harness.agent.spec import Message
from harness.agent.taskloop import ContextWindow, observed
from harness.cli import main
from harness.model import CallResult, Outcome
from harness.scenario import ScenarioError, scenario_from_data


def test_a_full_window_drops_old_successes_first_then_old_failures_never_the_last_two_rounds() -> None:
    window = ContextWindow(size=5, observation_chars=600)
    window.pin(Message("system", "s"))
    window.add(Message("tool", "ok 1"), 1)
    window.add(Message("tool", "failed 1"), 1, failure=True)
    window.add(Message("tool", "ok 2"), 2)
    window.add(Message("tool", "ok 3"), 3)
    assert [m.content for m in window.messages] == ["s", "ok 1", "failed 1", "ok 2", "ok 3"]
    window.add(Message("tool", "ok 3b"), 3)  # full: round 1's success goes, its failure stays
    assert [m.content for m in window.messages] == ["s", "failed 1", "ok 2", "ok 3", "ok 3b"]
    window.add(Message("tool", "ok 4"), 4)  # rounds 3 and 4 are the last two: round 2's success goes
    assert [m.content for m in window.messages] == ["s", "failed 1", "ok 3", "ok 3b", "ok 4"]
    window.add(Message("tool", "ok 4b"), 4)  # no old success is left: round 1's failure goes now
    assert [m.content for m in window.messages] == ["s", "ok 3", "ok 3b", "ok 4", "ok 4b"]
    window.add(Message("tool", "ok 4c"), 4)  # nothing older is left: the last two rounds give way, oldest first
    assert [m.content for m in window.messages] == ["s", "ok 3b", "ok 4", "ok 4b", "ok 4c"]
    assert [(r, m.content) for r, m in window.archive] == [(1, "ok 1"), (2, "ok 2"), (1, "failed 1"), (3, "ok 3")]
    assert window.dropped == 4


def test_a_long_text_value_is_compressed_by_its_own_lines() -> None:
    log = "\n".join([f"INFO request {i} ok" for i in range(200)]
                    + ["Error: Database connection pool exhausted", "total errors: 236"])
    result = CallResult("logs", Outcome.OK, log, None, 1, 0, 3000)
    text, compressed = observed(result, 600)
    body = json.loads(text)
    assert compressed and body["call_id"] == "logs"
    assert body["value"] == "Error: Database connection pool exhausted\ntotal errors: 236 ...(truncated)"
    short = CallResult("s", Outcome.OK, "a\nb", None, 1, 0, 1)
    assert observed(short, 600) == (json.dumps({"call_id": "s", "outcome": "ok", "value": "a\nb"}, indent=1), False)


RECALLING: dict[str, Any] = {
    "name": "recalls", "world": {}, "tools": {"web_search": {"latency": {"fixed": 100}}},
    "loop": {"policy": "taskloop", "context_messages": 5},
    "model": {"task": "find, then recall what was found", "rules": [
        {"when": {"round": r}, "action": "tool_call",
         "calls": [{"id": f"s{r}", "name": "web_search", "arguments": {"query": f"q{r}"}}]} for r in (1, 2, 3)] + [
        {"when": {"round": 4}, "action": "tool_call",
         "calls": [{"id": "back", "name": "recall", "arguments": {"round": 1}}]},
        {"when": {"ok": "back"}, "action": "final_answer",
         "text": "{back.value.archived} archived; round 1 said {back.value.messages.1.content}"},
    ]},
}


def test_the_recall_tool_finds_what_the_window_archived_without_the_scheduler() -> None:
    result = run(scenario_from_data(RECALLING, "recalls.toml"), get_scheduler("parallel"), 1)
    outcome = result.agent
    assert outcome is not None and outcome.status == "final_answer"
    archived, _, said = outcome.answer.partition(" archived; round 1 said ")
    assert int(archived) > 0 and json.loads(said)["call_id"] == "s1"  # round 1's observation, whole
    assert [c.id for c in result.scenario.calls] == ["s1", "s2", "s3"]  # recall never reached the scheduler
    assert dict(outcome.per_tool) == {"web_search": 3}


def test_recall_is_the_loops_own_tool_under_taskloop_only() -> None:
    data = {**RECALLING, "loop": "run_agent"}
    try:
        scenario_from_data(data, "recalls.toml")
    except ScenarioError as exc:
        assert "model.rules[3].calls[0].name: expected a known tool" in str(exc)
    else:
        raise AssertionError("recall accepted under run_agent")


def test_the_task_report_counts_calls_per_tool_and_estimates_tokens() -> None:
    result = run(find_scenario("sales-report"), get_scheduler("parallel"), 1)
    outcome = result.agent
    assert outcome is not None
    assert dict(outcome.per_tool) == {"query_sales_data": 2, "calc_growth_rate": 1, "save_daily_report": 1}
    assert sum(n for _, n in outcome.per_tool) == outcome.tool_calls
    assert outcome.prompt_tokens > outcome.completion_tokens > 0
    document = json.loads(CliRunner().invoke(main, ["run", "sales-report", "--scheduler", "parallel",
                                                    "--format", "json"]).output)
    assert document["agent"]["tokens"] == {"prompt": outcome.prompt_tokens, "completion": outcome.completion_tokens,
                                           "estimated": True}
    text = CliRunner().invoke(main, ["run", "sales-report", "--scheduler", "parallel"]).output
    assert "task report  query_sales_data 2, calc_growth_rate 1, save_daily_report 1; about" in text
    assert estimate_tokens("abcdefgh") == 2 and estimate_tokens("销售额") == 3 and estimate_tokens("") == 0
