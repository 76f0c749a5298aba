"""`harness traces whatif`: the recorded turns replayed under each policy, and the fidelity check that
must pass for the policy production used and fail for one it did not use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.model import CallResult, Outcome
from harness.traces.whatif import critical_path

pytest.importorskip("scipy")


def _whatif(*args: str) -> tuple[int, dict[str, object] | str, str]:
    result = CliRunner().invoke(main, ["traces", "whatif", "--sample", *args])
    if result.exit_code != 0 or "--format" not in args:
        return result.exit_code, result.stdout, result.stderr
    return result.exit_code, json.loads(result.stdout), result.stderr


def test_the_sample_replayed_under_each_policy_with_its_fidelity(tmp_path: Path) -> None:
    code, data, err = _whatif("--format", "json", "--out", str(tmp_path))
    assert code == 0, err
    assert isinstance(data, dict)
    policies = {p["scheduler"]: p for p in data["policies"]}  # type: ignore[index]
    assert list(policies) == ["serial", "parallel", "resource_keys", "dag"]  # dag: production's, added
    assert all(p["turn_runs"] == 90 * 20 for p in policies.values())
    serial, parallel, dag = policies["serial"], policies["parallel"], policies["dag"]
    assert serial["makespan_ms"]["p50"] > 1.4 * parallel["makespan_ms"]["p50"]
    assert serial["saving_vs_recorded"] < 0 < parallel["saving_vs_recorded"]
    assert dag["makespan_ms"]["p99"] == 2000  # production's 2 s timeout, applied by the runtime dag runs through
    assert parallel["makespan_ms"]["p99"] > 2000  # the hand-written reference applies no timeout
    fidelity = data["fidelity"]  # type: ignore[index]
    assert fidelity["scheduler"] == "dag" and fidelity["reproduces"] is True and fidelity["ks_p_value"] >= 0.05
    assert abs(fidelity["quantile_errors"]["p95"]) < 0.05
    for name in ("whatif.json", "whatif-ecdf.png", "whatif-saving-hazard.png", "whatif-worst-serial.png",
                 "whatif-worst-dag.png"):
        assert (tmp_path / name).stat().st_size > 1000, name
    # Critical paths: parallel and dag start every call at once, so a path is one call; serial chains them.
    assert all(" > " not in path for path in parallel["slowest_critical_paths"])
    assert all(" > " in path for path in serial["slowest_critical_paths"])
    slow = max(1, -(-90 * 20 * 5 // 100))
    for policy in policies.values():
        assert sum(policy["slowest_critical_paths"].values()) == slow
        assert abs(sum(policy["slowest_critical_time_share"].values()) - 1) < 1e-3


def test_fidelity_fails_for_a_policy_production_did_not_use() -> None:
    """The recorded turns ran their calls at once: a serial replay cannot reproduce their makespans."""
    code, data, _ = _whatif("--format", "json", "--schedulers", "parallel", "--production", "serial", "--runs", "5")
    assert code == 0 and isinstance(data, dict)
    fidelity = data["fidelity"]
    assert fidelity["scheduler"] == "serial" and fidelity["reproduces"] is False
    assert fidelity["quantile_errors"]["p50"] > 0.3


def test_the_text_table_and_the_same_figures_every_time() -> None:
    code, text, _ = _whatif("--runs", "3", "--schedulers", "serial,parallel")
    assert code == 0 and isinstance(text, str)
    assert text.splitlines()[2].split()[:2] == ["recorded", "90"]
    assert "fidelity of dag (the policy production used): " in text
    assert _whatif("--runs", "3", "--schedulers", "serial,parallel")[1] == text


def test_an_unknown_scheduler_is_a_usage_error_naming_the_valid_ones() -> None:
    code, _, err = _whatif("--schedulers", "serial,paralel")
    assert code == 2 and "paralel" in err and "parallel" in err and err.count("\n") == 1


def test_compare_with_traces_is_the_same_what_if(tmp_path: Path) -> None:
    from harness.traces import SAMPLE

    args = ["--schedulers", "serial,parallel", "--runs", "3", "--format", "json"]
    compared = CliRunner().invoke(main, ["compare", "--traces", str(SAMPLE), "--production", "dag", *args])
    whatif = CliRunner().invoke(main, ["traces", "whatif", "--sample", *args])
    assert compared.exit_code == 0, compared.stderr
    assert json.loads(compared.stdout) == json.loads(whatif.stdout)
    both = CliRunner().invoke(main, ["compare", "incident-jitter", "--traces", str(SAMPLE)])
    assert both.exit_code == 2 and "not two of them" in both.stderr
    alone = CliRunner().invoke(main, ["compare", "incident-jitter", "--production", "dag"])
    assert alone.exit_code == 2 and "--production goes with --traces" in alone.stderr


def _result(call_id: str, start: int, end: int) -> CallResult:
    return CallResult(call_id, Outcome.OK, start_ms=start, end_ms=end)


def test_the_critical_path_follows_what_each_call_waited_for() -> None:
    serial = [_result("a", 0, 100), _result("b", 100, 400), _result("c", 400, 450)]
    assert [r.call_id for r in critical_path(serial)] == ["a", "b", "c"]
    together = [_result("a", 0, 100), _result("b", 0, 400), _result("c", 0, 450)]
    assert [r.call_id for r in critical_path(together)] == ["c"]
    # Two lanes: d waited for a, c for b, e for c; e ends last, so the path is b > c > e (not a > d).
    lanes = [_result("a", 0, 100), _result("b", 0, 200), _result("d", 100, 300), _result("c", 200, 350),
             _result("e", 350, 500)]
    assert [r.call_id for r in critical_path(lanes)] == ["b", "c", "e"]
    assert critical_path([]) == ()


def test_the_worst_turn_run_again_is_the_run_the_what_if_measured() -> None:
    import tomllib

    from harness.scenario import scenario_from_data
    from harness.traces import SAMPLE, import_traces, learn, scenario_text
    from harness.traces.whatif import what_if, worst_run

    imported = import_traces([SAMPLE])
    text = scenario_text(learn(imported.turns), imported.turns, name="whatif", files=imported.files)
    scenario = scenario_from_data(tomllib.loads(text), "<test>")
    what = what_if(scenario, imported.turns, ["serial", "parallel"], range(4, 6))
    for outcome in what.policies:
        turn, seed, makespan = outcome.worst
        (batch,) = worst_run(scenario, what, outcome.scheduler).batches
        assert batch.end_ms - batch.start_ms == makespan == outcome.makespans_ms[-1]
        assert batch.batch == scenario.batches[turn - 1] and seed in (4, 5)
