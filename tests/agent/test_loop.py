"""The agent loop: seed 004's TaskLoop and seed 003's run_agent driving scripted models through the
scheduler under test (issue 12, items 1, 2 and 7)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from click.testing import CliRunner

from harness import find_scenario, get_scheduler, run
from harness.agent.spec import Message
from harness.agent.taskloop import ContextWindow, compress
from harness.cli import main
from harness.oracles import check
from harness.scenario import Scenario, ScenarioError, scenario_from_data


def under(name: str, loop: str | None = None) -> Scenario:
    scenario = find_scenario(name)
    assert scenario.agent is not None
    return scenario if loop is None else replace(scenario, agent=replace(scenario.agent, loop=loop))


def events(result: object, kind: str | None = None) -> list[dict[str, object]]:
    found = [e for e in result.trace if e["ev"] == "agent"]  # type: ignore[attr-defined]
    return [e for e in found if kind is None or e["event"] == kind]


def test_sales_report_cli_ends_with_the_answer_the_file_and_the_event_stream() -> None:
    out = CliRunner().invoke(main, ["run", "sales-report", "--loop", "taskloop", "--scheduler", "parallel"])
    assert out.exit_code == 0, out.output
    for shown in ("[AGENT_STARTED] taskloop", "[PLANNER_DECISION] round 1 tool_call", "[TOOL_STARTED]",
                  "[TOOL_FINISHED] round 2 calc_growth_rate", "[CONTEXT_UPDATED]",
                  "[AGENT_FINISHED] round 4 final_answer",
                  "10.84%", "reads current from q-this", "--loop taskloop"):
        assert shown in out.output, shown
    document = json.loads(CliRunner().invoke(main, ["run", "sales-report", "--scheduler", "parallel", "--format",
                                                    "json"]).output)
    assert document["agent"]["status"] == "final_answer" and "10.84%" in document["agent"]["answer"]
    assert "/srv/agent/reports/2025-05-19.md" in document["final_files"]


def test_sales_report_world_and_timing() -> None:
    result = run(under("sales-report"), get_scheduler("parallel"), 1)
    assert result.agent is not None and result.agent.status == "final_answer"
    report = result.world.read_text("/srv/agent/reports/2025-05-19.md")
    assert "环比增长 10.84%" in report and "284730.0" in report
    # 4 decisions of 800 ms think time + two 1500 ms queries side by side + 50 + 300 ms
    assert result.makespan_ms == 4 * 800 + 1500 + 50 + 300
    serial = run(under("sales-report"), get_scheduler("serial"), 1)
    assert serial.makespan_ms == result.makespan_ms + 1500  # the loop's time includes the scheduler's
    assert all(v.ok for v in check(result)) and all(v.ok for v in check(serial))


def test_failing_tool_is_disabled_after_three_identical_errors_and_the_loop_still_answers() -> None:
    result = run(under("tool-disabled"), get_scheduler("parallel"), 1)
    outcome = result.agent
    assert outcome is not None
    assert (outcome.status, outcome.rounds, outcome.tool_calls, outcome.unavailable) == \
        ("final_answer", 4, 3, ("query_crm",))
    assert outcome.rounds < 15 and "三次" in outcome.answer
    assert [c.id for c in result.scenario.calls] == ["crm", "crm@2", "crm@3"]  # re-emitted ids are derived
    disabled = [e for e in events(result, "CONTEXT_UPDATED") if e.get("disabled")]
    assert [(e["round"], e["disabled"]) for e in disabled] == [(3, "query_crm")]
    # seed 003's loop has no retry policy: it retries until its 8 steps run out
    plain = run(under("tool-disabled", "run_agent"), get_scheduler("parallel"), 1)
    assert plain.agent is not None and (plain.agent.status, plain.agent.tool_calls) == ("max_round", 8)


def _crm_twice(model: str = "two_customers", **loop: int) -> Scenario:
    """tool-disabled's failing CRM, asked about by a Python model of tests.agent.py_model (`two_customers`:
    two customers, then an answer)."""
    data = {"name": "crm-twice", "tools": {"query_crm": {"latency": {"fixed": 400},
                                                         "failure": {"rate": 1.0, "permanent": True,
                                                                     "message": "503 Service Unavailable"},
                                                         "does": [{"op": "wait"}]}},
            "loop": {"policy": "taskloop", **loop}, "model": f"tests.agent.py_model:{model}"}
    return scenario_from_data(data, "crm-twice.toml", trust=["tests.agent.py_model"])


def test_two_failures_of_a_tool_in_a_row_give_the_model_seed_004s_hint() -> None:
    """Seed 004's TOOL_ERROR subscriber: after two failed calls of one tool in a row, whatever their
    arguments, the model is told the tool may be unavailable; disabling waits for the same error three
    times with the same arguments."""
    result = run(_crm_twice(), get_scheduler("serial"), 1)
    assert result.agent is not None and result.agent.status == "final_answer"
    assert result.agent.answer == ("Tool query_crm may be unavailable: its last 2 calls failed (permanent failure: "
                                   "503 Service Unavailable); consider an alternative.")
    hinted = [(e["round"], e["hinted"]) for e in events(result, "CONTEXT_UPDATED") if e.get("hinted")]
    assert hinted == [(2, "query_crm")] and result.agent.unavailable == ()
    off = run(_crm_twice(failure_hint_after=0), get_scheduler("serial"), 1)
    assert off.agent is not None and off.agent.answer == "nothing"
    # tool-disabled: the hint in round 2, then the tool disabled in round 3, each told once.
    told = run(under("tool-disabled"), get_scheduler("parallel"), 1)
    changes = [(e["round"], "hinted" if e.get("hinted") else "disabled") for e in events(told, "CONTEXT_UPDATED")
               if e.get("hinted") or e.get("disabled")]
    assert changes == [(2, "hinted"), (3, "disabled")]


def test_a_stuck_or_failing_loop_stops_and_asks_the_user() -> None:
    """Seed 004's human on the loop: a model that calls the tool the loop disabled is stuck, and the loop
    stops and asks instead of refusing it round after round; failing rounds in a row can stop it too."""
    stuck = run(_crm_twice("keeps_calling"), get_scheduler("serial"), 1)
    assert stuck.agent is not None and (stuck.agent.status, stuck.agent.rounds) == ("ask_user", 4)
    assert stuck.agent.answer.startswith("I am stuck: the model called query_crm again after it was disabled")
    asked = [e for e in events(stuck, "HUMAN_CONFIRM_REQUIRED")]
    assert [(e["round"], e["by"]) for e in asked] == [(4, "loop")]
    failing = run(_crm_twice("keeps_calling", ask_after_failed_rounds=2), get_scheduler("serial"), 1)
    assert failing.agent is not None and (failing.agent.status, failing.agent.rounds) == ("ask_user", 2)
    assert failing.agent.answer == "Every tool call failed 2 rounds in a row. How should I go on?"
    going_on = run(_crm_twice("keeps_calling", ask_when_stuck=0, max_round=6), get_scheduler("serial"), 1)
    assert going_on.agent is not None and (going_on.agent.status, going_on.agent.tool_calls) == ("max_round", 3)
    assert all(v.ok for v in check(stuck)) and all(v.ok for v in check(going_on))


def test_invalid_output_and_unknown_tool_are_reprompted_then_the_model_recovers() -> None:
    result = run(under("unknown-tool-recovery"), get_scheduler("serial"), 1)
    assert result.agent is not None
    assert (result.agent.status, result.agent.invalid, result.agent.rounds) == ("final_answer", 2, 4)
    assert [c.id for c in result.scenario.calls] == ["q"]  # the unknown tool never ran
    rejected = [e.get("rejected") for e in events(result, "CONTEXT_UPDATED") if e.get("rejected")]
    assert rejected == ["unparseable", "unknown tool 'search_sales'"]
    # run_agent has no parser: the fenced JSON is returned as the answer
    plain = run(under("unknown-tool-recovery", "run_agent"), get_scheduler("serial"), 1)
    assert plain.agent is not None and plain.agent.status == "unparsed-answer" and plain.agent.rounds == 1


def test_max_round_stops_the_loop_with_replanning_on_the_way() -> None:
    result = run(under("max-round-exceeded"), get_scheduler("parallel"), 1)
    assert result.agent is not None and (result.agent.status, result.agent.rounds) == ("max_round", 15)
    assert len(result.scenario.calls) == 15 and result.makespan_ms == 15 * (500 + 1200)
    replans = [e["round"] for e in events(result, "CONTEXT_UPDATED") if e.get("change") == "replan"]
    assert replans == [6, 11]
    assert events(result)[-1]["status"] == "max_round"
    short = replace(under("max-round-exceeded"), agent=replace(under("max-round-exceeded").agent,  # type: ignore[arg-type]
                                                               settings={"max_round": 3}))
    assert run(short, get_scheduler("serial"), 1).agent.rounds == 3  # type: ignore[union-attr]


def test_context_window_keeps_pinned_messages_and_compresses_long_observations() -> None:
    window = ContextWindow(size=4, observation_chars=600)
    window.pin(Message("system", "s"))
    window.pin(Message("user", "task"))
    long = "\n".join([f"line {i} nothing" for i in range(80)] + ["total_amount: 5", "Error: boom"])
    compressed, _ = window.add(Message("tool", long))
    assert compressed and window.messages[-1].content == "total_amount: 5\nError: boom ...(truncated)"
    for i in range(3):
        window.add(Message("assistant", str(i)))
    assert [m.content for m in window.messages] == ["s", "task", "1", "2"] and window.dropped == 2
    assert compress("x" * 700 + "\n" + "合计 1%" * 200, 600).endswith("...(truncated)")


ASK = {
    "name": "ask-then-answer", "world": {}, "tools": {},
    "model": {"task": "restart?", "think": {"fixed": 100}, "rules": [
        {"when": {"round": 1}, "action": "ask_user", "text": "Restart order-service?", "reply": "yes",
         "reply_latency": {"fixed": 5000}},
        {"when": {"replied": "yes"}, "action": "tool_call", "calls": [
            {"id": "restart", "name": "restart_service", "arguments": {"service_name": "order-service"}}]},
        {"when": {"ok": "restart"}, "action": "final_answer", "text": "restarted: {restart.value.status}"},
    ]},
}


def test_ask_user_waits_for_the_scripted_reply() -> None:
    result = run(scenario_from_data(ASK), get_scheduler("serial"), 1)
    assert result.agent is not None and result.agent.answer == "restarted: restarted"
    asked = events(result, "HUMAN_CONFIRM_REQUIRED")
    assert [(e["t"], e["question"]) for e in asked] == [(100, "Restart order-service?")]
    assert result.batches[0].start_ms == 100 + 5000 + 100  # think, the user's reply, think again
    # seed 003's loop returns the question as its answer
    plain = replace(scenario_from_data(ASK), agent=replace(scenario_from_data(ASK).agent, loop="run_agent"))  # type: ignore[arg-type]
    assert run(plain, get_scheduler("serial"), 1).agent.status == "ask_user"  # type: ignore[union-attr]


def test_a_python_model_decides_from_the_transcript() -> None:
    data = {"name": "py-model", "model": "tests.agent.py_model:decide", "world": {}, "tools": {}}
    result = run(scenario_from_data(data, trust=["tests.agent"]), get_scheduler("serial"), 1)
    assert result.agent is not None
    assert (result.agent.status, result.agent.answer, result.agent.invalid) == ("final_answer", "total 284730.0", 1)


def test_a_model_that_cannot_be_imported_is_a_load_error_not_a_task_that_passes() -> None:
    """Issue 26: it used to end the task as model-error, and the run passed."""
    data = {"name": "py-model", "model": "tests.agent.no_such_module:decide", "world": {}, "tools": {}}
    with pytest.raises(ScenarioError, match=r"<data>: model: expected a model that loads; .*no_such_module"):
        run(scenario_from_data(data, trust=["tests.agent"]), get_scheduler("serial"), 1)


@pytest.mark.parametrize("loop", ["taskloop", "run_agent"])
def test_loop_and_scheduler_combine_freely(loop: str) -> None:
    for scheduler in ("serial", "parallel", "resource_keys", "dag", "hermes_gate"):
        result = run(under("sales-report", loop), get_scheduler(scheduler), 3)
        assert result.agent is not None and result.agent.status == "final_answer", (loop, scheduler)


class NeedsAnArgument:
    """A loop policy class whose constructor wants an argument `--loop` cannot give."""

    def __init__(self, budget: int) -> None:
        self.budget = budget


def test_a_loop_class_that_cannot_be_built_is_a_usage_error_not_an_internal_one() -> None:
    out = CliRunner().invoke(main, ["run", "tool-disabled", "--loop", f"{__name__}:NeedsAnArgument"])
    assert out.exit_code == 2, out.output
    assert (f"cannot build a loop policy from '{__name__}:NeedsAnArgument': calling it with no arguments raised "
            "TypeError") in out.output
    assert "internal error" not in out.output
