"""Any number of processes gives the same rows and findings; the default (every core) stays in this
process for small jobs (issue 13, item 3)."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.distribute import workers
from harness.explore.engine import explore
from harness.scenario import find_scenario
from harness.sweep import grid, sweep


def test_the_default_is_every_core_but_one_process_for_small_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "cores", lambda: 8)
    assert workers.processes_for(None, workers.AUTO_POOL_MIN_RUNS - 1) == 1
    assert workers.processes_for(None, workers.AUTO_POOL_MIN_RUNS) == 8
    assert workers.processes_for(2, 3) == 2  # asked for: honoured, however small the job
    with pytest.raises(ValueError):
        workers.processes_for(0, 10)


def _no_pool(*args: object) -> multiprocessing.context.BaseContext:
    raise AssertionError("a small job started a process pool")


def test_small_jobs_by_default_pay_no_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("harness.sweep.WorkerPool", _no_pool)
    monkeypatch.setattr("harness.explore.planned.WorkerPool", _no_pool)
    cells = grid(["config-clobber"], ["serial", "parallel"], range(1, 6))
    assert sweep(cells, processes=None) == sweep(cells, processes=1)
    found = explore(find_scenario("config-clobber"), "parallel", "random", runs=20, processes=None, shrink=False)
    assert found.found is not None


def test_commands_default_to_every_core() -> None:
    for command in ("sweep", "compare", "explore"):
        shown = CliRunner().invoke(main, [command, "--help"], terminal_width=200).output
        assert "--processes" in shown and "all cores" in shown and "--dask ADDRESS" in shown, command


def _explore_json(tmp_path: Path, processes: int) -> tuple[dict[str, Any], str]:
    save = tmp_path / f"p{processes}"
    args = ["explore", "config-clobber", "--scheduler", "parallel", "--runs", "40", "--seed", "5",
            "--processes", str(processes), "--save-dir", str(save), "--format", "json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    document = json.loads(result.output)
    reproducer = Path(document.pop("reproducer"))
    document.pop("replay")
    return document, reproducer.read_text()


def test_explore_finds_the_same_with_one_process_and_two(tmp_path: Path) -> None:
    one, reproducer_one = _explore_json(tmp_path, 1)
    two, reproducer_two = _explore_json(tmp_path, 2)
    assert one["found"] and one["fingerprint"]
    assert one == two  # same finding, run, shrunk run, fingerprint, scope
    assert reproducer_one == reproducer_two


def test_compare_gives_the_same_summary_on_one_process_and_two() -> None:
    def summary(processes: int) -> Any:
        args = ["compare", "config-clobber", "--schedulers", "parallel,resource_keys", "--runs", "12",
                "--processes", str(processes), "--format", "json"]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        return json.loads(result.output)

    assert summary(1) == summary(2)
