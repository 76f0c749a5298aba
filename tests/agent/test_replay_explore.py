"""Loop scenarios keep their model in reproducers, replay the loop, explore and shrink, and give the
same fingerprints in fresh processes (issue 12, must-show: determinism, exploration, shrinking)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from harness import find_scenario, get_scheduler, run
from harness.explore.engine import explore
from harness.reproducers.replay import ReproducerError, loads, replay, reproducer_of, to_json
from harness.scenario import scenario_from_data
from harness.scenario.dump import scenario_to_data

LOOPS = ("incident-ticket-notify", "max-round-exceeded", "sales-report", "tool-disabled", "unknown-tool-recovery")


@pytest.mark.parametrize("name", LOOPS)
def test_a_loop_scenario_round_trips_through_data(name: str) -> None:
    scenario = find_scenario(name)
    again = scenario_from_data(json.loads(json.dumps(scenario_to_data(scenario))))
    assert again.agent is not None and not again.batches
    for loop in ("taskloop", "run_agent"):
        a = run(replace(scenario, agent=replace(scenario.agent, loop=loop)), get_scheduler("parallel"), 2)  # type: ignore[arg-type]
        b = run(replace(again, agent=replace(again.agent, loop=loop)), get_scheduler("parallel"), 2)
        assert a.fingerprint == b.fingerprint


def test_a_reproducer_keeps_the_loop_and_replays_it() -> None:
    result = run(find_scenario("incident-ticket-notify"), get_scheduler("parallel"), 1)
    reproducer = loads(to_json(reproducer_of(result, "parallel", "future-read", "data-flow", "test"), version="t"))
    assert reproducer.scenario.agent is not None
    assert replay(reproducer).identical


def test_a_python_model_in_a_reproducer_must_be_trusted() -> None:
    data = {"name": "py-model", "model": "tests.agent.py_model:decide", "world": {}, "tools": {}}
    result = run(scenario_from_data(data, trust=["tests.agent"]), get_scheduler("serial"), 1)
    text = to_json(reproducer_of(result, "serial", "x", "y", "test"), version="t")
    with pytest.raises(ReproducerError, match=r"scenario.model.python: expected a module you trust"):
        loads(text)
    reproducer = loads(text, trust=("tests.agent",))
    assert "--trust-module tests.agent.py_model" in reproducer.command
    assert replay(reproducer).identical


def test_explore_finds_the_race_in_a_loop_scenario_and_keeps_the_calls_its_calls_read() -> None:
    exploration = explore(find_scenario("incident-ticket-notify"), "parallel", "pct", runs=5, seed=1)
    found = exploration.shrunk
    assert found is not None and found.label == "future-read"
    # open-ticket's body reads the three queries (args_from): dropping them would leave a reproducer that
    # does not load (issue 26), so they stay; nothing else is left to drop.
    assert [c.id for c in found.result.scenario.calls] == ["logs", "metrics", "deploys", "open-ticket", "notify"]
    reproducer = reproducer_of(found.result, "parallel", found.label, found.oracle, "pct")
    assert replay(loads(to_json(reproducer, version="test"))).identical  # from its file's text, as replay reads it
    assert explore(find_scenario("incident-ticket-notify"), "dag", "pct", runs=5, seed=1).found is None


_SCRIPT = f"""
import json
from dataclasses import replace
from harness import find_scenario, get_scheduler, run
out = {{}}
for name in {LOOPS!r}:
    s = find_scenario(name)
    for loop in ("taskloop", "run_agent"):
        r = run(replace(s, agent=replace(s.agent, loop=loop)), get_scheduler("parallel"), 3)
        out[name + "/" + loop] = r.fingerprint
print(json.dumps(out, sort_keys=True))
"""


def test_loop_fingerprints_match_in_fresh_processes_under_two_hash_seeds() -> None:
    root = Path(__file__).resolve().parents[2]
    seen = set()
    for hash_seed in ("0", "987"):
        done = subprocess.run([sys.executable, "-c", _SCRIPT], env={**os.environ, "PYTHONHASHSEED": hash_seed},
                              cwd=root, capture_output=True, text=True, timeout=120, check=True)
        seen.add(done.stdout)
    assert len(seen) == 1 and len(json.loads(seen.pop())) == 2 * len(LOOPS)
