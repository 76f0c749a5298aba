"""Sweep scaling: the same cells on 1 process and on every core, then on a Dask LocalCluster of 1 worker
and of 2.

Prints one JSON object (and writes benchmarks/results/bench_sweep_scale.json): wall seconds of each
(median of the rounds, interleaved so that a change in the machine's load hits every configuration
alike), the speedups with their targets and ratios (>= 1 meets the target), whether every
configuration gave the rows of one process, the Dask clusters' start-up (not in the timings), the
load average before and after, and the machine's own ceiling: how much faster two pure-Python loops
finish side by side than one after the other, measured before and after (2.0 on two idle cores; on a
shared machine a speedup says as much about the neighbours as about the harness). Beside the wall
times, what the CPU times say whatever the neighbours do: each Dask worker's and this process's
(client and LocalCluster scheduler) per cell, and the speedup they imply with a core per worker and on
this machine's cores shared with the client. The last line (stderr) says the 1 -> 2 workers speedup
against its target, and the load average it was measured under.

Usage: python benchmarks/bench_sweep_scale.py [--cells N] [--rounds R] [--no-dask]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from _figures import emit

from harness import __version__
from harness.distribute.workers import cores
from harness.sweep import grid, sweep

SCENARIOS = ["incident-triage", "config-clobber", "edit-then-test", "code-review"]
SCHEDULERS = ["serial", "parallel", "resource_keys", "partition"]

#: Of the ideal speedup (N for N processes or workers): what the issue asks of 1 -> 2 Dask workers.
EFFICIENCY_TARGET = 0.9


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "load average {:.2f}, {:.2f}, {:.2f}".format(*os.getloadavg())


def _burn(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i
    return total


def ceiling(n: int = 5_000_000) -> float:
    """Two CPU-bound loops one after the other, against the same two side by side in two processes."""
    import multiprocessing

    start = time.perf_counter()
    _burn(n)
    _burn(n)
    serial = time.perf_counter() - start
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pool.map(_burn, [1, 1])  # the workers' start-up is not the machine's parallelism
        start = time.perf_counter()
        pool.map(_burn, [n, n])
        side_by_side = time.perf_counter() - start
    return serial / side_by_side


def _warm() -> None:
    """Two seeds of every (scenario, scheduler): a process's caches (world templates, replays) are
    built once, so this process and every Dask worker are measured warm (a local pool starts cold:
    its start-up is part of what `--processes` costs a command)."""
    sweep(grid(SCENARIOS, SCHEDULERS, [1, 2]))


def _timed(go: Callable[[], list[dict[str, Any]]]) -> tuple[float, list[dict[str, Any]]]:
    start = time.perf_counter()
    rows = go()
    return time.perf_counter() - start, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-dask", action="store_true", help="processes only")
    args = parser.parse_args()
    per = max(1, args.cells // (len(SCENARIOS) * len(SCHEDULERS)))
    cells = grid(SCENARIOS, SCHEDULERS, range(1, per + 1))
    n = cores()
    before, uptime_before = os.getloadavg(), _uptime()
    ceiling_before = ceiling()
    _warm()
    reference = sweep(cells, processes=1)
    seconds: dict[str, list[float]] = {"1_process": [], f"{n}_processes": [], "dask_1_worker": [],
                                       "dask_2_workers": []}
    identical = True
    startup: list[float] = []
    worker_cpu: dict[int, list[list[float]]] = {1: [], 2: []}
    here_cpu: dict[int, list[float]] = {1: [], 2: []}  # this process: the client and the LocalCluster's scheduler
    for _ in range(args.rounds):
        for processes in (1, n):
            took, rows = _timed(lambda p=processes: sweep(cells, processes=p))
            seconds["1_process" if processes == 1 else f"{n}_processes"].append(took)
            identical &= rows == reference
        if args.no_dask:
            continue
        from harness.distribute.cluster import connect

        for workers in (1, 2):
            start = time.perf_counter()
            with connect("local", workers=workers) as cluster:
                startup.append(time.perf_counter() - start)
                cluster.client.run(_warm)  # on every worker, as in this process
                cpu_before, here = cluster.client.run(time.process_time), time.process_time()
                took, rows = _timed(lambda c=cluster: sweep(cells, cluster=c))
                cpu_after = cluster.client.run(time.process_time)
                here_cpu[workers].append(time.process_time() - here)
                worker_cpu[workers].append([cpu_after[w] - cpu_before[w] for w in sorted(cpu_after)])
            seconds["dask_1_worker" if workers == 1 else "dask_2_workers"].append(took)
            identical &= rows == reference
    median = {key: statistics.median(values) for key, values in seconds.items() if values}
    figures: dict[str, Any] = {
        "benchmark": "sweep scaling: 1 -> N processes, 1 -> 2 Dask workers (LocalCluster, one thread each)",
        "harness_version": __version__,
        "python": platform.python_version(),
        "cores": n,
        "cells": len(cells),
        "rounds": args.rounds,
        "seconds_median": {key: round(value, 3) for key, value in median.items()},
        "seconds_all": {key: [round(v, 3) for v in values] for key, values in seconds.items() if values},
        "runs_per_s_1_process": round(len(cells) / median["1_process"], 1),
        "process_speedup": round(median["1_process"] / median[f"{n}_processes"], 3),
        "process_speedup_target": round(EFFICIENCY_TARGET * n, 2),
        "identical_rows": identical,
        "load_average_1m": round(before[0], 2),
        "uptime_before": uptime_before,
    }
    figures["process_ratio"] = round(figures["process_speedup"] / figures["process_speedup_target"], 3)
    if "dask_2_workers" in median:
        figures.update(
            dask_speedup=round(median["dask_1_worker"] / median["dask_2_workers"], 3),
            dask_speedup_target=round(EFFICIENCY_TARGET * 2, 2),
            dask_startup_s_median=round(statistics.median(startup), 3),
            runs_per_s_dask_2_workers=round(len(cells) / median["dask_2_workers"], 1))
        figures["dask_ratio"] = round(figures["dask_speedup"] / figures["dask_speedup_target"], 3)
        # Not a measurement of wall time: what it would be with a core per worker. One worker would
        # take its CPU time; two, the CPU time of the busier one (a shared core inflates wall time
        # but hardly CPU time). It shows whether the work divides, whatever the neighbours do.
        one = statistics.median(sum(busy) for busy in worker_cpu[1])
        two = statistics.median(max(busy) for busy in worker_cpu[2])
        # The same on this machine's cores (two here), which this process (client and scheduler) shares
        # with the two workers: each round's wall time can be no less than the busier worker, nor than
        # all three processes' CPU time spread over the cores.
        shared = statistics.median(max(max(busy), (sum(busy) + here) / min(n, 3))
                                   for busy, here in zip(worker_cpu[2], here_cpu[2], strict=True))
        per_cell = 1e6 / len(cells)
        figures.update(dask_worker_cpu_s=worker_cpu, dask_client_scheduler_cpu_s=here_cpu,
                       dask_speedup_cpu_estimate=round(one / two, 3),
                       dask_speedup_cpu_estimate_two_cores=round(one / shared, 3),
                       dask_worker_cpu_us_per_cell={
                           w: round(statistics.median(sum(b) for b in worker_cpu[w]) * per_cell) for w in (1, 2)},
                       dask_client_scheduler_cpu_us_per_cell={w: round(statistics.median(here_cpu[w]) * per_cell)
                                                              for w in (1, 2)})
    figures["uptime_after"] = _uptime()
    figures["machine_ceiling_2_processes"] = [round(ceiling_before, 2), round(ceiling(), 2)]
    emit("bench_sweep_scale", figures)
    if "dask_speedup" in figures:
        print(f"Dask 1 -> 2 workers on {len(cells):,} cells: {figures['dask_speedup']:.2f}x in wall time "
              f"(target >= {figures['dask_speedup_target']}x, ratio {figures['dask_ratio']:.2f}); from CPU times "
              f"{figures['dask_speedup_cpu_estimate']:.2f}x with a core per worker, "
              f"{figures['dask_speedup_cpu_estimate_two_cores']:.2f}x on two cores shared with the client; "
              f"load average {before[0]:.2f} before, {os.getloadavg()[0]:.2f} after", file=sys.stderr)


if __name__ == "__main__":
    main()
