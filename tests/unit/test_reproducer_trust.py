"""Reproducers are data: replaying one imports nothing the user did not trust, and the files it is
saved under stay inside the chosen directory whatever the scenario is called."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness import find_scenario, get_scheduler, run
from harness.reproducers.replay import ReproducerError, load, reproducer_of, save, to_json


def saved(tmp_path: Path, scheduler: str = "parallel", **scenario_changes: object) -> Path:
    result = run(find_scenario("config-clobber"), get_scheduler("parallel"), 3)
    text = to_json(reproducer_of(result, "parallel", "lost-update", "serializability", "test"), version="t")
    document = json.loads(text)
    document["scheduler"] = scheduler
    document["scenario"].update(scenario_changes)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(document))
    return path


def harness(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from harness.cli import main; main()", *args],
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("scheduler", ["sys:exit", "os:abort", "builtins:breakpoint", "json:dumps"])
def test_a_reproducer_naming_code_is_refused_without_trust(tmp_path: Path, scheduler: str) -> None:
    path = saved(tmp_path, scheduler)
    module = scheduler.partition(":")[0]
    with pytest.raises(ReproducerError, match=rf"scheduler: expected a module you trust, got '{module}'"):
        load(path)
    done = harness("replay", str(path))
    assert done.returncode == 2 and done.stdout == ""
    assert f"replay it with --trust-module {module} (or --scheduler {scheduler})" in done.stderr


def test_a_tools_module_in_a_reproducer_is_refused_without_trust(tmp_path: Path) -> None:
    path = saved(tmp_path, tools_module=["antigravity"])
    with pytest.raises(ReproducerError,
                       match=r"scenario.tools_module\[0\]: expected a module you trust, got 'antigravity'"):
        load(path)
    assert "antigravity" not in sys.modules


def test_trusted_or_explicit_schedulers_replay(tmp_path: Path) -> None:
    path = saved(tmp_path, "harness.policies.parallel:Parallel")
    assert load(path, trust=("harness",)).run().fingerprint == run(
        find_scenario("config-clobber"), get_scheduler("parallel"), 3).fingerprint
    done = harness("replay", str(path), "--scheduler", "parallel")
    assert done.returncode == 1 and "reproduced: same fingerprint" in done.stdout, done.stderr


def test_a_scenario_name_cannot_lead_the_file_out_of_the_directory(tmp_path: Path) -> None:
    result = run(find_scenario("config-clobber"), get_scheduler("parallel"), 3)
    reproducer = reproducer_of(result, "parallel", "lost-update", "serializability", "test")
    for name in ("../../escaped", "a/b", "x" * 300):
        scenario = type(result.scenario)(**{**result.scenario.__dict__, "name": name})
        path = save(type(reproducer)(**{**reproducer.__dict__, "scenario": scenario}), tmp_path / "out", version="t")
        assert path.parent == tmp_path / "out" and len(path.name) < 255
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_replaying_a_fifo_is_refused_instead_of_hanging(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    done = harness("replay", str(fifo))
    assert done.returncode == 2 and "is not a regular file" in done.stderr


def test_a_reproducer_never_reads_the_disk(tmp_path: Path) -> None:
    path = saved(tmp_path)
    document = json.loads(path.read_text())
    document["scenario"]["world"]["from_dir"] = "/etc"
    path.write_text(json.dumps(document))
    with pytest.raises(ReproducerError, match=r"scenario.world.from_dir: expected the world's files inline"):
        load(path)
