"""Sweep scaling: 10,000 runs on one process against the same cells on two, in one go.

Prints one JSON object (and writes benchmarks/results/bench_sweep.json): seconds on 1 and 2
processes, the speedup (target >= 1.7 on 2 cores) and whether both gave identical rows.

Usage: python benchmarks/bench_sweep.py [--cells N]
"""

from __future__ import annotations

import argparse
import os
import time

from _figures import emit

from harness import __version__
from harness.sweep import grid, sweep


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=10_000)
    args = parser.parse_args()
    scenarios = ["incident-triage", "config-clobber", "edit-then-test", "code-review"]
    schedulers = ["serial", "parallel", "resource_keys"]
    per = max(1, args.cells // (len(scenarios) * len(schedulers)))
    cells = grid(scenarios, schedulers, range(1, per + 1))
    timings, results = {}, {}
    for processes in (1, 2):
        start = time.perf_counter()
        results[processes] = sweep(cells, processes=processes)
        timings[processes] = time.perf_counter() - start
    figures = {
        "benchmark": "sweep scaling, 1 vs 2 processes",
        "harness_version": __version__,
        "cpus": os.cpu_count(),
        "cells": len(cells),
        "seconds_1_process": round(timings[1], 3),
        "seconds_2_processes": round(timings[2], 3),
        "speedup": round(timings[1] / timings[2], 3),
        "target_speedup": 1.7,
        "identical_results": results[1] == results[2],
        "runs_per_s_1_process": round(len(cells) / timings[1], 1),
    }
    emit("bench_sweep", figures)


if __name__ == "__main__":
    main()
