"""The cost of `--isolate`: checked runs per second in this process against the same runs in one
isolated child (harness.isolation), batched, with the oracles in this process either way.

Prints one JSON object and writes it to benchmarks/results/bench_isolation.json. Wall-clock time
(`time.perf_counter`: the child's CPU is not this process's), interleaved rounds, medians:

- `in_process_runs_per_s`: `run()` + every single-run oracle + the fingerprint, here;
- `isolated_runs_per_s`: the same runs sent to one child already started (steady state: scenario sent
  once, requests pipelined, each run packed, sent, rebuilt and judged here);
- `isolated_ratio` = isolated / in-process runs per second (1.0: isolation is free);
- `startup_s`: starting a child and building the scheduler in it (paid once per session);
- `batch_ratio_at_N`: the ratio for a whole session of N runs, start-up included (N = 100, explore's
  default budget, and 1,000).

Usage: python benchmarks/bench_isolation.py [--runs N] [--rounds R] [--scenario NAME]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

from _figures import emit

from harness import __version__, get_scheduler, run
from harness.isolation import Supervisor
from harness.oracles import check
from harness.scenario import find_scenario


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300, help="runs per measurement and round")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (the median is reported)")
    parser.add_argument("--scenario", default="config-clobber")
    parser.add_argument("--scheduler", default="parallel")
    args = parser.parse_args()
    scenario = find_scenario(args.scenario)
    scheduler = get_scheduler(args.scheduler)
    local: list[float] = []
    isolated: list[float] = []
    startup: list[float] = []
    for _ in range(args.rounds):
        started = time.perf_counter()
        for seed in range(args.runs):
            result = run(scenario, scheduler, seed)
            check(result)
            _ = result.fingerprint
        local.append(args.runs / (time.perf_counter() - started))
        with Supervisor(args.scheduler, wall_timeout_s=60) as child:
            started = time.perf_counter()
            child.start()
            startup.append(time.perf_counter() - started)
            child.run(scenario, 0)  # the scenario crosses once; the rest are requests by key
            started = time.perf_counter()
            for got in child.runs((scenario, seed, 0.0) for seed in range(args.runs)):
                check(got.result)
                _ = got.result.fingerprint
            isolated.append(args.runs / (time.perf_counter() - started))
    local_rate, isolated_rate, start_s = (statistics.median(v) for v in (local, isolated, startup))

    def session_ratio(runs: int) -> float:
        return round((runs / local_rate) / (start_s + runs / isolated_rate), 4)

    figures = {
        "benchmark": "checked runs/s in process vs in one isolated child (wall clock, median of interleaved rounds)",
        "harness_version": __version__,
        "python": platform.python_version(),
        "scenario": args.scenario,
        "scheduler": args.scheduler,
        "runs_per_round": args.runs,
        "rounds": args.rounds,
        "load_average_1m": round(os.getloadavg()[0], 2),
        "in_process_runs_per_s": round(local_rate, 1),
        "isolated_runs_per_s": round(isolated_rate, 1),
        "isolated_ratio": round(isolated_rate / local_rate, 4),
        "isolated_ratio_rounds": [round(i / lo, 4) for i, lo in zip(isolated, local, strict=True)],
        "startup_s": round(start_s, 3),
        "batch_ratio_at_100": session_ratio(100),
        "batch_ratio_at_1000": session_ratio(1000),
    }
    emit("bench_isolation", figures)


if __name__ == "__main__":
    main()
