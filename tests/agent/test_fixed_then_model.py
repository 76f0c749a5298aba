"""Fixed batches, then a model (issue 12, item 1: `[model]` "instead of (or after) fixed batches"):
the scenario's batches run first, e.g. the turns of an imported transcript, and the scripted model
decides what follows from their results."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness import get_scheduler, run
from harness.oracles import check
from harness.scenario import ScenarioError, scenario_from_data
from harness.scenario.dump import scenario_to_data


def mixed() -> dict[str, Any]:
    return {
        "name": "mixed", "world": {"cwd": "/srv", "dirs": ["/srv/reports"]},
        "batches": [{"label": "from the transcript", "calls": [
            {"id": "q-this", "name": "query_sales_data",
             "arguments": '{"start_date": "2025-05-12", "end_date": "2025-05-18"}'},
            {"id": "q-last", "name": "query_sales_data",
             "arguments": '{"start_date": "2025-05-05", "end_date": "2025-05-11"}'}]}],
        "model": {"task": "continue", "think": {"fixed": 500}, "rules": [
            {"name": "growth", "when": {"ok": ["q-this", "q-last"]}, "action": "tool_call",
             "calls": [{"id": "growth", "name": "calc_growth_rate",
                        "args_from": {"current": "q-this.value.total_amount",
                                      "previous": "q-last.value.total_amount"}}]},
            {"name": "answer", "when": {"ok": "growth"}, "action": "final_answer",
             "text": "growth {growth.value.growth_rate}%"}]},
    }


@pytest.mark.parametrize("scheduler", ["serial", "parallel", "dag"])
def test_the_fixed_batch_runs_first_and_the_model_builds_on_its_results(scheduler: str) -> None:
    result = run(scenario_from_data(mixed()), get_scheduler(scheduler), 1)
    assert [b.batch.label for b in result.batches] == ["from the transcript", "round-1"]
    assert result.agent is not None and result.agent.status == "final_answer"
    assert result.agent.answer == "growth 10.84%"
    assert result.agent.tool_calls == 3 and result.agent.rounds == 2
    fixed_end = result.batches[0].end_ms
    growth = next(r for r in result.results if r.call_id == "growth")
    assert growth.start_ms == fixed_end + 500  # the model thinks after the fixed turn ended
    assert all(v.ok for v in check(result))


def test_it_round_trips_through_data_and_replays_the_same() -> None:
    scenario = scenario_from_data(mixed())
    again = scenario_from_data(json.loads(json.dumps(scenario_to_data(scenario))))
    assert len(again.batches) == 1 and again.agent is not None
    for seed in (1, 4):
        assert (run(again, get_scheduler("parallel"), seed).fingerprint
                == run(scenario, get_scheduler("parallel"), seed).fingerprint)


def test_rules_may_name_the_fixed_calls_but_not_unknown_ones() -> None:
    data = mixed()
    data["model"]["rules"][0]["when"] = {"ok": ["q-this", "q-next"]}
    with pytest.raises(ScenarioError, match=r"model.rules\[0\].when"):
        scenario_from_data(data, "mixed.toml")
