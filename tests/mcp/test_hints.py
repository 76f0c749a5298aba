"""MCP hints as declared data, the `hint-violated` oracle and the hint-driven policies: a scheduler that
relies on a lying hint is caught (with the race it caused), one that relies on none, or on true hints,
passes."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

import pytest

from harness import find_scenario, get_scheduler, run
from harness.oracles import check
from harness.oracles.hints import check as check_hints
from harness.run import RunResult
from harness.scenario import ScenarioError, scenario_from_data
from harness.scenario.dump import scenario_to_data
from harness.tools.hints import McpHints
from harness.tools.spec import SideEffect

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def _data(name: str) -> dict[str, Any]:
    return tomllib.loads((SCENARIOS / f"{name}.toml").read_text())


def _labels(result: RunResult) -> list[str]:
    return sorted({v.label for verdict in check(result) for v in verdict.violations})


def _hint_violations(result: RunResult) -> list[dict[str, Any]]:
    return [dict(v.witness) for v in check_hints(result).violations]


@pytest.mark.parametrize("seed", [1, 2, 7])
def test_mcp_hints_fails_with_hint_violated_and_the_race_when_a_read_only_tool_writes(seed: int) -> None:
    result = run(find_scenario("mcp-lying-read-only"), get_scheduler("mcp_hints"), seed=seed)
    assert _labels(result) == ["hint-violated", "stale-read"]
    [witness] = _hint_violations(result)
    assert witness["call"] == "get" and witness["hint"] == "readOnlyHint" and witness["beside"] == ["search"]
    assert witness["effect"]["op"] == "write" and witness["effect"]["target"] == "/srv/settings.ini"


def test_mcp_hints_passes_when_the_hints_are_true() -> None:
    data = _data("mcp-lying-read-only")
    data["tools"]["get_settings"]["annotations"] = {"readOnlyHint": False, "openWorldHint": False}
    honest = scenario_from_data(data)
    for seed in (1, 2, 7):
        result = run(honest, get_scheduler("mcp_hints"), seed=seed)
        assert _labels(result) == []
    # ... and it still runs the true read-only tools together.
    data["batches"][0]["calls"].append({"id": "search-2", "name": "search_settings", "arguments": '{"key": "a"}'})
    result = run(scenario_from_data(data), get_scheduler("mcp_hints"), seed=1)
    assert _labels(result) == [] and result.makespan_ms == 200 + 300 + 200


def test_parallel_also_loses_the_writers_update_and_serial_relies_on_no_hint() -> None:
    scenario = find_scenario("mcp-lying-read-only")
    assert _labels(run(scenario, get_scheduler("parallel"), seed=1)) == ["hint-violated", "lost-update", "stale-read"]
    assert _labels(run(scenario, get_scheduler("serial"), seed=1)) == []


def test_a_retried_idempotent_in_name_only_tool_is_caught_and_a_real_idempotent_one_is_not() -> None:
    scenario = find_scenario("mcp-idempotent-lie")
    caught = run(scenario, get_scheduler("mcp_hints_retry"), seed=3)
    assert _labels(caught) == ["duplicate-effect", "hint-violated"]
    [witness] = _hint_violations(caught)
    assert witness["call"] == "open-ticket" and witness["hint"] == "idempotentHint" and witness["repeat"] == 2
    # Seed 1: set_status is retried (2 attempts) and writes the same status again: no change, no violation.
    retried = run(scenario, get_scheduler("mcp_hints_retry"), seed=1)
    assert [r.attempts for r in retried.results if r.call_id == "mark-escalated"] == [2]
    assert _labels(retried) == []
    for seed in (1, 3):  # a runtime that never retries relies on no idempotentHint
        assert _labels(run(scenario, get_scheduler("mcp_hints"), seed=seed)) == []


def test_a_closed_world_tool_with_an_external_effect_run_beside_another_is_caught() -> None:
    data = _data("mcp-idempotent-lie")
    data["tools"]["create_ticket"]["annotations"] = {"readOnlyHint": False, "openWorldHint": False}
    scenario = scenario_from_data(data)
    [witness] = _hint_violations(run(scenario, get_scheduler("parallel"), seed=1))
    assert witness["hint"] == "openWorldHint" and witness["beside"] == ["mark-escalated"]
    assert witness["effect"]["target"] == "ledger:tickets"
    assert _hint_violations(run(scenario, get_scheduler("serial"), seed=1)) == []


def test_a_server_without_hints_gets_the_worst_case_and_is_never_blamed() -> None:
    scenario = find_scenario("mcp-no-hints")
    read_doc = scenario.catalogue["read_doc"].declared
    assert read_doc.hints == McpHints() and not read_doc.read_only and not read_doc.idempotent
    assert read_doc.side_effect is SideEffect.EXTERNAL
    hinted = run(scenario, get_scheduler("mcp_hints"), seed=1)
    serial = run(scenario, get_scheduler("serial"), seed=1)
    assert _labels(hinted) == [] and hinted.makespan_ms == serial.makespan_ms
    racing = run(scenario, get_scheduler("parallel"), seed=1)
    assert _labels(racing) == ["stale-read"]  # the race, but no hint was given to contradict


def test_hints_and_input_schema_survive_a_reproducer() -> None:
    scenario = find_scenario("mcp-lying-read-only")
    again = scenario_from_data(copy.deepcopy(scenario_to_data(scenario)))
    for name in ("get_settings", "set_setting", "search_settings"):
        assert again.catalogue[name].declared == scenario.catalogue[name].declared
        assert again.catalogue[name].parameters == scenario.catalogue[name].parameters
    result = run(scenario, get_scheduler("mcp_hints"), seed=2)
    assert run(again, get_scheduler("mcp_hints"), seed=2).fingerprint == result.fingerprint


@pytest.mark.parametrize(("change", "message"), [
    ({"annotations": {"readOnlyHint": "yes"}}, "tools.get_settings.annotations: expected readOnlyHint: true or false"),
    ({"input_schema": "{"}, "tools.get_settings.input_schema: expected the JSON text of a JSON Schema of an object"),
    ({"input_schema": '{"type": "object"}', "parameters": {}}, "expected either parameters or input_schema"),
])
def test_a_malformed_hint_or_schema_names_the_field(change: dict[str, Any], message: str) -> None:
    data = _data("mcp-lying-read-only")
    data["tools"]["get_settings"].update(change)
    with pytest.raises(ScenarioError, match=message.replace("(", r"\(")):
        scenario_from_data(data, "s.toml")


def test_an_explicit_declared_table_wins_over_what_the_hints_imply() -> None:
    data = _data("mcp-lying-read-only")
    data["tools"]["get_settings"]["declared"] = {"read_only": False}
    declared = scenario_from_data(data).catalogue["get_settings"].declared
    assert not declared.read_only and declared.hints is not None and declared.hints.read_only is True


def test_tools_from_merges_the_scenarios_own_tables_and_names_the_catalogues_mistakes(tmp_path: Path) -> None:
    (tmp_path / "cat.toml").write_text('[tools.ping]\nannotations = { readOnlyHint = true }\ndoes = []\n')
    scenario_file = tmp_path / "s.toml"
    scenario_file.write_text('name = "s"\ntools_from = "cat.toml"\n[tools.ping]\nlatency = 250\n'
                             '[[batches]]\n[[batches.calls]]\nid = "p"\nname = "ping"\n')
    from harness.scenario import load_scenario

    ping = load_scenario(scenario_file).catalogue["ping"]
    assert ping.declared.read_only and ping.latency.to_json() == {"fixed": 250}
    (tmp_path / "cat.toml").write_text('[tools.ping]\ndoe = []\n')
    with pytest.raises(ScenarioError, match=r"cat\.toml: tools\.ping\.doe: expected one of the keys"):
        load_scenario(scenario_file)
    scenario_file.write_text(scenario_file.read_text().replace('"cat.toml"', '"../cat.toml"'))
    with pytest.raises(ScenarioError, match="tools_from: expected a catalogue inside the scenario file's directory"):
        load_scenario(scenario_file)
