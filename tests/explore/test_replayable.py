"""Every saved reproducer replays: shrinking never leaves a call naming one it dropped, and the
self-check before saving loads the file exactly as `harness replay` does (issue 26, item 3)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import find_scenario
from harness.cli import main
from harness.explore.engine import explore
from harness.explore.shrink import referrers, without_call
from harness.model import Batch
from harness.reproducers.file import load, reproducer_of
from harness.reproducers.judgement import REPRODUCED, judge
from harness.reproducers.replay import Unloadable, save_verified
from harness.run import run
from harness.scenario import scenario_from_data
from harness.scenario.dump import scenario_to_data
from harness.scenario.library import scenario_names
from harness.scenario.spec import Scenario

#: Policies with bugs the built-in scenarios provoke (and one that mostly passes, `grouped`).
BUGGY = ("parallel", "parallel_completion_order", "grouped", "lanes", "hermes_gate")
STRATEGIES = ("auto", "pct", "exhaustive", "hypothesis")


def _chain() -> Scenario:
    """a -> b (args_from) -> c (depends_on b), and an unrelated d."""
    data = {"name": "chain", "batches": [{"calls": [
        {"id": "a", "name": "create_ticket", "arguments": '{"title": "t"}'},
        {"id": "b", "name": "send_message", "arguments": '{"channel": "#c"}',
         "args_from": {"text": "ticket {a.value.ticket} opened"}},
        {"id": "c", "name": "send_message", "arguments": '{"channel": "#d", "text": "x"}', "depends_on": ["b"]},
        {"id": "d", "name": "read_file", "arguments": '{"path": "/f"}'},
    ]}], "world": {"files": {"/f": "1"}}}
    return scenario_from_data(data, "<chain>")


def test_dropping_a_producer_drops_every_call_that_names_it_and_the_rest_loads_again() -> None:
    scenario = _chain()
    assert referrers(scenario, "a") == ("b", "c")
    assert referrers(scenario, "b") == ("c",)
    assert referrers(scenario, "d") == ()
    smaller = without_call(scenario, "a")
    assert smaller is not None and [c.id for c in smaller.calls] == ["d"]
    assert not smaller.args_from and not smaller.depends_on
    smaller = without_call(scenario, "b")
    assert smaller is not None and [c.id for c in smaller.calls] == ["a", "d"]
    leaf = without_call(scenario, "c")
    assert leaf is not None and [c.id for c in leaf.calls] == ["a", "b", "d"] and "b" in leaf.args_from
    for kept in (smaller, leaf, without_call(scenario, "a")):
        assert kept is not None
        scenario_from_data(scenario_to_data(kept), "<again>")  # loads: no reference to a dropped call


def _dangling(scenario: Scenario, call_id: str) -> Scenario:
    """What shrinking made before the fix: the call gone, its consumers' references left behind."""
    batches = tuple(Batch.of([(c.id, c.name, c.arguments) for c in b if c.id != call_id], b.label)
                    for b in scenario.batches)
    return dataclasses.replace(scenario, batches=batches)


def test_the_self_check_refuses_a_reproducer_whose_file_would_not_load(tmp_path: Path) -> None:
    broken = _dangling(_chain(), "a")  # b still reads a.value.ticket
    result = run(broken, "parallel", 1)
    reproducer = reproducer_of(result, "parallel", "future-read", "data-flow", "test")
    with pytest.raises(Unloadable, match=r"would not load as `harness replay` loads it: .*args_from\.text"):
        save_verified(reproducer, tmp_path, version="test")
    assert list(tmp_path.iterdir()) == []  # nothing saved
    # The same run of a scenario that loads is saved, and loads back.
    fine = run(without_call(_chain(), "c") or _chain(), "parallel", 1)
    path, check = save_verified(reproducer_of(fine, "parallel", "x", "y", "test"), tmp_path, version="test")
    assert check.ok and path is not None
    assert load(path).scenario.args_from == {"b": {"text": "ticket {a.value.ticket} opened"}}


def test_the_reported_case_replays_from_the_cli(tmp_path: Path) -> None:
    """`explore incident-ticket-notify --scheduler parallel --save-dir d; replay d/*.json` was exit 2."""
    runner = CliRunner()
    found = runner.invoke(main, ["explore", "incident-ticket-notify", "--scheduler", "parallel", "--save-dir",
                                 str(tmp_path), "--format", "json"])
    doc = json.loads(found.stdout)
    assert found.exit_code == 1 and doc["label"] == "future-read" and doc["reproducer"], found.output
    replayed = runner.invoke(main, ["replay", doc["reproducer"]])
    assert replayed.exit_code == 1 and "reproduced: same fingerprint" in replayed.output, replayed.output


@pytest.mark.parametrize("name", scenario_names())
@settings(max_examples=2, suppress_health_check=[HealthCheck.nested_given, HealthCheck.too_slow])
@given(scheduler=st.sampled_from(BUGGY), strategy=st.sampled_from(STRATEGIES), seed=st.integers(1, 10_000))
def test_every_reproducer_explore_saves_loads_and_replays_with_its_verdict(
        name: str, scheduler: str, strategy: str, seed: int, tmp_path_factory: pytest.TempPathFactory) -> None:
    scenario = find_scenario(name)
    exploration = explore(scenario, scheduler, strategy, runs=12, seed=seed, wall_timeout_s=0)
    shrunk = exploration.shrunk
    if shrunk is None:
        return
    reproducer = reproducer_of(shrunk.result, scheduler, shrunk.label, shrunk.oracle, shrunk.found_by)
    path, check = save_verified(reproducer, tmp_path_factory.mktemp("saved"), version="test")
    assert check.ok and path is not None, check.describe()
    judged = judge(load(path, trust=reproducer.modules))  # as `harness replay` loads and judges it
    assert judged.verdict == REPRODUCED and shrunk.label in judged.labels, (judged.verdict, judged.labels)
