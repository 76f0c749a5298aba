"""Determinism: the same (scenario, scheduler, seed) gives the same fingerprint in a fresh process
under a different PYTHONHASHSEED, for every built-in scenario."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import find_scenario, get_scheduler, run, scenario_names

SCHEDULERS = ("serial", "parallel", "parallel_completion_order")
SEEDS = (1, 7)

_SCRIPT = f"""
import json
from harness import find_scenario, get_scheduler, run, scenario_names
out = {{}}
for name in scenario_names():
    for scheduler in {SCHEDULERS!r}:
        for seed in {SEEDS!r}:
            result = run(find_scenario(name), get_scheduler(scheduler), seed)
            out[f"{{name}}/{{scheduler}}/{{seed}}"] = result.fingerprint
print(json.dumps(out))
"""


def fingerprints_in_fresh_process(hash_seed: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, cwd=root, capture_output=True, text=True,
                          timeout=120, check=True)
    result: dict[str, str] = json.loads(done.stdout)
    return result


@pytest.fixture(scope="module")
def here() -> dict[str, str]:
    return {f"{name}/{scheduler}/{seed}": run(find_scenario(name), get_scheduler(scheduler), seed).fingerprint
            for name in scenario_names() for scheduler in SCHEDULERS for seed in SEEDS}


@pytest.mark.parametrize("hash_seed", ["0", "4242"])
def test_fingerprints_match_across_processes_and_hash_seeds(here: dict[str, str], hash_seed: str) -> None:
    assert fingerprints_in_fresh_process(hash_seed) == here


def test_every_scenario_is_covered(here: dict[str, str]) -> None:
    assert {key.split("/")[0] for key in here} == set(scenario_names())


def test_fingerprint_changes_with_the_seed(here: dict[str, str]) -> None:
    assert here["config-clobber/parallel/1"] != here["config-clobber/parallel/7"]


_EXPLORE = """
import json
from harness import find_scenario
from harness.explore.engine import explore
out = {}
for name, scheduler, strategy in [("config-clobber", "parallel", "auto"), ("rare-torn-read", "parallel", "pct"),
                                  ("duplicate-ticket", "partition", "exhaustive"),
                                  ("interrupt-midbatch", "parallel", "auto")]:
    found = explore(find_scenario(name), scheduler, strategy, runs=40, seed=3, shrink=False).found
    out[f"{name}/{strategy}"] = [found.run_index, found.result.fingerprint] if found else None
print(json.dumps(out))
"""


@pytest.mark.parametrize("hash_seed", ["1", "31337"])
def test_order_first_explorations_match_across_processes_and_hash_seeds(hash_seed: str) -> None:
    """The first finding of auto, PCT and exhaustive (timers and all) is the same run, byte for byte."""
    root = Path(__file__).resolve().parents[2]
    runs = [json.loads(subprocess.run([sys.executable, "-c", _EXPLORE], env={**os.environ, "PYTHONHASHSEED": seed},
                                      cwd=root, capture_output=True, text=True, timeout=300, check=True).stdout)
            for seed in ("0", hash_seed)]
    assert runs[0] == runs[1] and any(runs[0].values())
