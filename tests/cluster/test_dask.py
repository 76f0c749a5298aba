"""Sweeps, comparisons and explorations on a Dask cluster give what one local process gives (issue 13,
item 4). A LocalCluster of two one-thread worker processes; skipped without the `[dask]` extra."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("distributed")

from harness.cli import main
from harness.distribute.cluster import Cluster, connect
from harness.explore.engine import explore
from harness.scenario import find_scenario, scenario_names
from harness.sweep import grid, load_finished, sweep

#: Every scenario x 4 schedulers x SEEDS seeds: the must-show, small enough for CI (about 470 cells;
#: the 1,000-seed version was run by hand, see README).
SCHEDULERS = ["serial", "parallel", "resource_keys", "partition"]
SEEDS = range(1, 4)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with connect("local", workers=2) as opened:
        yield opened


def test_all_scenarios_on_two_dask_workers_give_the_rows_of_one_process(cluster: Cluster) -> None:
    cells = grid(scenario_names(), SCHEDULERS, SEEDS)
    seen: list[int] = []
    on_cluster = sweep(cells, cluster=cluster, chunk_size=40, on_progress=lambda done, total: seen.append(done))
    assert cluster.workers == 2
    assert on_cluster == sweep(cells, processes=1)
    assert len(seen) > 2 and seen[-1] == len(cells)  # progress followed the chunks as they finished


def test_exploration_on_the_cluster_finds_what_one_process_finds(cluster: Cluster) -> None:
    scenario = find_scenario("rare-torn-read")
    here = explore(scenario, "parallel", "auto", runs=60, seed=3)
    there = explore(scenario, "parallel", "auto", runs=60, seed=3, cluster=cluster)
    assert here.found is not None and there.found is not None and here.shrunk and there.shrunk
    assert (here.found.label, here.found.run_index, here.found.found_by, here.runs, here.scope) == (
        there.found.label, there.found.run_index, there.found.found_by, there.runs, there.scope)
    assert here.shrunk.result.fingerprint == there.shrunk.result.fingerprint
    keep_going = explore(scenario, "parallel", "auto", runs=60, seed=3, keep_going=True, shrink=False, cluster=cluster)
    assert [f.label for f in keep_going.findings] == [
        f.label for f in explore(scenario, "parallel", "auto", runs=60, seed=3, keep_going=True, shrink=False).findings]


def test_an_isolated_exploration_on_the_cluster_keeps_one_child_per_worker(cluster: Cluster) -> None:
    """The stand-in travels to the workers as its name; each worker thread keeps one child for every
    task it runs (not one per task), and the exploration is the one-process one."""
    from harness.isolation.remote import IsolatedScheduler

    scenario = find_scenario("incident-ticket-notify")
    here = explore(scenario, "parallel", "auto", runs=120, seed=3, keep_going=True, shrink=False)
    with IsolatedScheduler("parallel") as isolated:
        there = explore(scenario, isolated, "auto", runs=120, seed=3, keep_going=True, shrink=False, cluster=cluster)
    assert [(f.label, f.result.fingerprint) for f in there.findings] == \
        [(f.label, f.result.fingerprint) for f in here.findings] and there.scope == here.scope

    def kept() -> list[bool]:  # per stand-in this worker unpickled and kept: is its child alive?
        from harness.isolation import remote

        return [stand_in.supervisor._child is not None for stand_in in remote._REBUILT.values()]

    assert sorted(map(tuple, cluster.client.run(kept).values())) == [(True,), (True,)]


def test_sweep_command_on_a_local_cluster_resumes_a_local_sweep(tmp_path: Path) -> None:
    cells = grid(["config-clobber", "edit-then-test"], ["serial", "parallel"], range(1, 11))
    out = tmp_path / "cells.jsonl"
    sweep(cells[:15], out=out)  # a local sweep interrupted after 15 cells
    args = ["sweep", "--scenarios", "config-clobber,edit-then-test", "--schedulers", "serial,parallel",
            "--runs", "10", "--out", str(out), "--dask", "local", "--processes", "2"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert len(out.read_text().splitlines()) == len(cells)  # the first 15 were not run again
    finished = load_finished(out)
    assert [finished[c.key] for c in sorted(cells)] == sweep(cells)
    assert json.loads(out.read_text().splitlines()[0])["scenario"]


def test_processes_with_a_remote_cluster_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["sweep", "--scenarios", "config-clobber", "--runs", "1",
                                       "--dask", "tcp://127.0.0.1:1", "--processes", "2"])
    assert result.exit_code == 2 and "--dask local only" in result.output


def _double(span: tuple[int, int]) -> list[int]:
    return [2 * i for i in range(*span)]


def test_a_stream_reads_its_chunks_lazily_with_two_per_worker_in_flight(cluster: Cluster) -> None:
    pulled: list[tuple[int, int]] = []

    def chunks() -> Iterator[tuple[int, int]]:
        for start in range(0, 100, 10):
            pulled.append((start, start + 10))
            yield start, start + 10

    stream = cluster.stream(_double, chunks())
    first = next(stream)
    assert len(pulled) == 2 * cluster.workers  # nothing more before a result was handed on
    rest = list(stream)
    assert sorted(x for part in [first, *rest] for x in part) == [2 * i for i in range(100)]
    assert len(pulled) == 10


def test_a_sweep_sized_from_the_measured_cost_gives_the_rows_of_one_process(cluster: Cluster) -> None:
    from harness.distribute.chunks import PROBE_ITEMS

    cells = grid(["config-clobber", "edit-then-test", "incident-triage"], SCHEDULERS, range(1, 61))  # 720 cells
    batches: list[int] = []
    assert sweep(cells, cluster=cluster, on_progress=lambda done, total: batches.append(done)) == sweep(cells)
    sizes = [b - a for a, b in itertools.pairwise(batches)]
    assert sizes[:2] == [PROBE_ITEMS, PROBE_ITEMS] and max(sizes) > PROBE_ITEMS  # probes, then measured chunks
