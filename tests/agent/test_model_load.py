"""`[model]` and `loop` in scenario files: validated on load, errors name file, field and expectation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.scenario import ScenarioError, scenario_from_data

BASE: dict[str, Any] = {
    "name": "m", "world": {}, "tools": {},
    "model": {"rules": [{"action": "tool_call", "calls": [{"id": "q", "name": "web_search",
                                                            "arguments": '{"query": "x"}'}]}]},
}


def with_model(**changes: Any) -> dict[str, Any]:
    return {**BASE, "model": {**BASE["model"], **changes}}


def rule(**changes: Any) -> dict[str, Any]:
    return with_model(rules=[{**BASE["model"]["rules"][0], **changes}])


@pytest.mark.parametrize(("data", "message"), [
    (rule(action="answer"), r"model.rules\[0\].action: expected one of tool_call, final_answer, ask_user, invalid"),
    (rule(calls=[{"id": "q", "name": "web_serch"}]), r"model.rules\[0\].calls\[0\].name: expected a known tool "
                                                      r"\(did you mean 'web_search'\?"),
    (rule(when={"ok": "nope"}), r"model.rules\[0\].when.ok: expected the id of a call the model emits"),
    (rule(when={"rond": 1}), r"model.rules\[0\].when.rond: expected one of the keys"),
    (rule(times=0), r"model.rules\[0\].times: expected how often the rule may fire"),
    (rule(calls=[{"id": "a@1", "name": "web_search"}]), r"model.rules\[0\].calls\[0\].id: expected an id without '@'"),
    (rule(calls=[{"id": "a", "name": "web_search", "args_from": {"x": "q.values"}}]),
     r"model.rules\[0\].calls\[0\].args_from.x: expected a reference CALL.value"),
    (rule(action="final_answer"), r"model.rules\[0\].calls: expected no calls for action 'final_answer'"),
    (with_model(think={"fixd": 3}), r"model.think.fixd: expected one of the keys .* did you mean 'fixed'\?"),
    (with_model(rules=[]), r"model.rules: expected a non-empty array"),
    ({**BASE, "loop": "taskloops"}, r"loop: expected a loop policy \(did you mean 'taskloop'\?"),
    ({**BASE, "loop": {"policy": "taskloop", "max_round": 0}}, r"loop.max_round: expected a whole number >= 1"),
    ({**BASE, "batches": []}, r"batches: expected a non-empty array"),  # fixed batches before a model: some
    ({"name": "x", "loop": "taskloop", "batches": [{"calls": [{"id": "a", "name": "web_search"}]}]},
     r"loop: expected a \[model\] next to it"),
    ({**BASE, "model": "not a module"}, r"model: expected a Python model named \"package.module:function\""),
])
def test_bad_model_input_is_named(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError, match=r"^f.toml: " + message):
        scenario_from_data(data, "f.toml")


def answer(text: str) -> dict[str, Any]:
    """The base model with a second rule answering `text` once q is done."""
    return with_model(rules=[BASE["model"]["rules"][0],
                             {"name": "done", "when": {"ok": "q"}, "action": "final_answer", "text": text}])


@pytest.mark.parametrize(("text", "message"), [
    ("found {qq.value.results}", r"model.rules\[1\].text \(\{qq.value.results\}\): expected the id of a call the "
                                 r"model emits \(did you mean 'q'\?"),
    ("found {q.results}", r"model.rules\[1\].text: expected a reference \{q.value\} or \{q.value.KEY...\} to call "
                          r"'q', got \{q.results\}"),
])
def test_an_answer_quoting_a_call_the_model_never_made_is_a_load_error(text: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=r"^f.toml: " + message):
        scenario_from_data(answer(text), "f.toml")


def test_an_answers_braces_that_name_no_call_are_text() -> None:
    loaded = scenario_from_data(answer('first result {q.value.results.0.title}; as JSON: {"ok": true} {name}'),
                                "f.toml")
    assert loaded.agent is not None


def test_cli_reports_a_bad_model_without_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('name = "bad"\n[model]\n[[model.rules]]\naction = "tool_call"\n')
    out = CliRunner().invoke(main, ["run", str(path)])
    assert out.exit_code == 2
    assert "bad.toml: model.rules[0].calls: expected a non-empty array" in out.output
    assert "Traceback" not in out.output


def test_loop_option_on_a_plain_scenario_or_an_unknown_loop_is_a_usage_error() -> None:
    out = CliRunner().invoke(main, ["run", "config-clobber", "--loop", "taskloop"])
    assert out.exit_code == 2 and "no [model]" in out.output
    out = CliRunner().invoke(main, ["run", "sales-report", "--loop", "nope"])
    assert out.exit_code == 2 and "valid: run_agent, taskloop" in out.output
