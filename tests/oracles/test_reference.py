"""Serializability judged against the order a design intends: model order by default, design note
002's writes-first order when the scenario or the scheduler declares it, always named."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness import find_scenario, get_scheduler, run
from harness.cli import main
from harness.model import Batch
from harness.oracles import check
from harness.oracles.reference import in_reference_order
from harness.oracles.verdict import Verdict
from harness.policies import Serial
from harness.scenario import ScenarioError, load_scenario, scenario_from_data
from harness.scenario.dump import scenario_to_data


def _serializability(scenario_reference: str | None, policy: Any, seed: int = 1) -> Verdict:
    scenario = replace(find_scenario("test-then-edit"), reference=scenario_reference)
    return next(v for v in check(run(scenario, policy, seed)) if v.oracle == "serializability")


def test_note_002s_rule_passes_under_the_reference_its_scheduler_declares_and_the_verdict_names_it() -> None:
    verdict = _serializability(None, get_scheduler("resource_keys"))
    assert verdict.ok and verdict.reference == "writes-first"
    assert "writes-first order" in verdict.message and verdict.to_json()["reference"] == "writes-first"
    # The same run by model order: the test read the fix emitted after it, a future read, named so.
    model = _serializability("model", get_scheduler("resource_keys"))
    assert not model.ok and model.label == "future-read" and model.reference == "model"
    assert "later in model order" in model.message


def test_a_scheduler_that_declares_nothing_is_judged_by_model_order() -> None:
    assert _serializability(None, get_scheduler("serial")).reference == "model"
    assert _serializability(None, get_scheduler("serial")).ok
    # Held to writes-first by the scenario, serial's model-order run is the stale read.
    held = _serializability("writes-first", get_scheduler("serial"))
    assert held.label == "stale-read" and "earlier in writes-first order" in held.message


class _Declares(Serial):
    reference_order = "reads-last"


def test_a_reference_no_one_knows_is_judged_by_model_order_and_said() -> None:
    verdict = _serializability(None, _Declares())
    assert verdict.reference == "model" and "reference_order 'reads-last'" in verdict.note


def _call(call_id: str, name: str) -> tuple[str, str, dict[str, str]]:
    return (call_id, name, {"path": "/repo/src/app.py"} if name == "read_file" else
            {"path": "/repo/src/app.py", "content": call_id})


def test_writes_first_puts_every_write_of_a_batch_before_its_reads_each_in_model_order() -> None:
    result = run(find_scenario("test-then-edit"), get_scheduler("serial"), 1)
    batch = Batch.of([_call("r1", "read_file"), _call("w1", "write_file"), _call("r2", "read_file"),
                      _call("w2", "write_file")])
    reads_only = Batch.of([_call("r3", "read_file"), _call("r4", "read_file")])
    scenario = replace(result.scenario, batches=(batch, reads_only))
    judged = in_reference_order(replace(result, scenario=scenario), "writes-first").scenario
    assert [b.ids for b in judged.batches] == [("w1", "w2", "r1", "r2"), ("r3", "r4")]
    assert [c.index for c in judged.batches[0]] == [0, 1, 2, 3]
    assert judged.batches[1] is reads_only and in_reference_order(result, "model") is result


def test_the_text_and_json_reports_name_the_reference() -> None:
    text = CliRunner().invoke(main, ["run", "test-then-edit", "--scheduler", "resource_keys"]).output
    words = " ".join(text.split())  # the verdict table wraps its cells at the terminal's width
    assert "judged against design note 002's writes-first order" in words and "PASSED" in words
    document = json.loads(CliRunner().invoke(main, ["run", "test-then-edit", "--scheduler", "resource_keys",
                                                    "--format", "json"]).output)
    verdict = next(v for v in document["verdicts"] if v["oracle"] == "serializability")
    assert verdict["reference"] == "writes-first" and verdict["ok"]


def test_a_scenario_file_declares_its_reference_and_keeps_it(tmp_path: Path) -> None:
    data = scenario_to_data(replace(find_scenario("test-then-edit"), reference="model"))
    assert data["reference"] == "model"
    assert scenario_from_data(data, "f.toml").reference == "model"
    with pytest.raises(ScenarioError, match=r"^f.toml: reference: expected one of model, writes-first, got 'reads"):
        scenario_from_data({**data, "reference": "reads-last"}, "f.toml")
    source = Path(find_scenario("test-then-edit").path or "").read_text()
    path = tmp_path / "held.toml"
    path.write_text('reference = "model"\n' + source)
    out = CliRunner().invoke(main, ["run", str(path), "--scheduler", "resource_keys"])
    words = " ".join(out.output.split())  # the verdict table wraps its cells
    assert out.exit_code == 1 and "future-read" in words and "later in model order" in words
    assert load_scenario(path).reference == "model"
