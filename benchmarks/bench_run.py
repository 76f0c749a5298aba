"""Throughput of `run()` on an 8-call batch, against raw SimPy doing the same schedule.

Prints one JSON object and writes it to benchmarks/results/bench_run.json. Every figure is measured
in this process, in this run, as CPU time (`time.process_time`, so other processes on a shared
machine do not count), in interleaved rounds whose median is reported, so ratios are meaningful on
any machine:

- `raw_pair_us`: a bare SimPy model of the same batch (same latencies), serial then parallel, no
  world, no trace: the floor the harness is compared with (one *pair* of simulations);
- `run_us`: one `run()`, alternately under `serial` and `parallel` (world, touches and trace);
- `checked_run_us`: one `run()` plus every single-run oracle (`oracles.check`) and the fingerprint;
- `run_ratio` = raw_pair_us / run_us and `checked_run_ratio` = raw_pair_us / checked_run_us: issue
  13's figures (targets >= 0.2 and >= 0.1), median over the rounds, with every round's value;
- `pair_over_pair_ratio`: the older figure, serial+parallel `run()` against the raw pair (half of
  `run_ratio`);
- `cost_breakdown_us`: where a checked run's time goes (world build, run, oracles, fingerprint);
- `lean_us`: the fair reference (`lean_reference.py`): a lean program doing what a run does (the
  same touches, trace, values and final world, hashed to the same fingerprint, asserted before
  measuring) with a dict world and nothing else; `fingerprinted_run_us`: `run()` plus its
  fingerprint, the same output; `run_over_lean` = fingerprinted_run_us / lean_us (target <= 1.6,
  issue 27) with every round's value.

Usage: python benchmarks/bench_run.py [--seconds S] [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable, Generator
from dataclasses import replace
from typing import Any

import simpy
from _figures import emit
from lean_reference import lean_fingerprint

from harness import __version__, get_scheduler, run
from harness.model import Batch
from harness.oracles import check
from harness.scenario import Scenario
from harness.world import World

FILES = {
    "/repo/src/app.py": "def handler():\n    return 'ok'\n",
    "/repo/src/util.py": "def helper():\n    return 1\n",
    "/repo/config.yaml": "timeout: 30\nretries: 3\n",
    "/repo/tests/test_app.py": "requires src/app.py return\n",
}
CALLS = [
    ("c1", "read_file", {"path": "src/app.py"}),
    ("c2", "read_file", {"path": "src/util.py"}),
    ("c3", "search_files", {"pattern": "def", "path": "src"}),
    ("c4", "web_search", {"query": "simpy"}),
    ("c5", "patch", {"path": "config.yaml", "old": "timeout: 30", "new": "timeout: 60"}),
    ("c6", "write_file", {"path": "src/new.py", "content": "x = 1\n"}),
    ("c7", "query_service_logs", {"service_name": "api"}),
    ("c8", "run_tests", {"path": "."}),
]


def bench_scenario() -> Scenario:
    world = World(cwd="/repo")
    world.populate(files=sorted(FILES.items()))
    return Scenario(name="bench-8", batches=(Batch.of(CALLS),), world=world.state())


def raw_simpy_pair(latencies: list[int]) -> None:
    """The same batch as bare SimPy processes: serial, then parallel."""
    env = simpy.Environment()

    def call(ms: int) -> Generator[simpy.Event, Any, int]:
        yield env.timeout(ms)
        return ms

    def serial() -> Generator[simpy.Event, Any, list[int]]:
        out = []
        for ms in latencies:
            out.append((yield env.process(call(ms))))
        return out

    env.run(env.process(serial()))
    env = simpy.Environment()

    def parallel() -> Generator[simpy.Event, Any, list[int]]:
        procs = [env.process(call(ms)) for ms in latencies]
        yield env.all_of(procs)
        return [p.value for p in procs]

    env.run(env.process(parallel()))


def rate(fn: Callable[[int], object], seconds: float) -> float:
    """Calls per second of fn(i), CPU time over at least `seconds` (after a short warm-up)."""
    for i in range(20):
        fn(i)
    count, start = 0, time.process_time()
    while (elapsed := time.process_time() - start) < seconds:
        for _ in range(50):
            fn(count)
            count += 1
    return count / elapsed


def median(values: list[float]) -> float:
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.5, help="CPU time per measurement and round")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (the median is reported)")
    args = parser.parse_args()
    sc = bench_scenario()
    serial, parallel = get_scheduler("serial"), get_scheduler("parallel")
    policies = (serial, parallel)
    reference = run(sc, serial, 1)
    latencies = [r.end_ms - r.start_ms for r in reference.results]
    snapshot_world = World.from_state(sc.world)
    finished = run(sc, parallel, 1)

    world = sc.world
    files, dirs = dict(world.files), list(world.dirs)

    def lean(i: int) -> str:
        return lean_fingerprint(sc.name, files, dirs, world.cwd, world.home, CALLS, ("serial", "parallel")[i & 1], i)

    for i in (1, 2, 7, 8):  # the reference is only fair while it gives the very same output
        expected = run(sc, policies[i & 1], i).fingerprint
        if lean(i) != expected:
            raise SystemExit(f"lean_reference.py no longer gives run()'s fingerprint (seed {i}): fix it first")

    def raw_pair(i: int) -> None:
        raw_simpy_pair(latencies)

    def fingerprinted_run(i: int) -> None:
        _ = run(sc, policies[i & 1], i).fingerprint

    def single_run(i: int) -> None:
        run(sc, policies[i & 1], i)

    def checked_run(i: int) -> None:
        result = run(sc, policies[i & 1], i)
        check(result)
        _ = result.fingerprint

    def pair(i: int) -> None:
        run(sc, serial, i)
        run(sc, parallel, i)

    def build_world(i: int) -> None:
        World.from_state(sc.world)

    def snapshot(i: int) -> None:
        snapshot_world.state()

    def oracles_only(i: int) -> None:
        check(replace(finished))  # a fresh copy: nothing cached on the result carries over

    def fingerprint_only(i: int) -> None:
        _ = replace(finished).fingerprint

    rounds: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for name, fn in (("raw_pair", raw_pair), ("lean", lean), ("fingerprinted_run", fingerprinted_run),
                         ("run", single_run), ("checked_run", checked_run),
                         ("pair", pair), ("world_build", build_world), ("world_snapshot", snapshot),
                         ("oracles", oracles_only), ("fingerprint", fingerprint_only)):
            rounds.setdefault(name, []).append(1e6 / rate(fn, args.seconds))
    us = {name: median(values) for name, values in rounds.items()}
    run_ratios = [raw / r for raw, r in zip(rounds["raw_pair"], rounds["run"], strict=True)]
    checked_ratios = [raw / r for raw, r in zip(rounds["raw_pair"], rounds["checked_run"], strict=True)]
    lean_ratios = [r / lean for lean, r in zip(rounds["lean"], rounds["fingerprinted_run"], strict=True)]
    pair_ratios = [raw / r for raw, r in zip(rounds["raw_pair"], rounds["pair"], strict=True)]

    figures = {
        "benchmark": "run() on an 8-call batch vs raw SimPy (CPU time, median of interleaved rounds)",
        "harness_version": __version__,
        "python": platform.python_version(),
        "rounds": args.rounds,
        "seconds_per_measurement": args.seconds,
        "load_average_1m": round(os.getloadavg()[0], 2),
        "raw_pair_us": round(us["raw_pair"], 1),
        "run_us": round(us["run"], 1),
        "checked_run_us": round(us["checked_run"], 1),
        "run_ratio": round(median(run_ratios), 4),
        "run_ratio_target": 0.2,
        "run_ratio_rounds": [round(r, 4) for r in run_ratios],
        "checked_run_ratio": round(median(checked_ratios), 4),
        "checked_run_ratio_target": 0.1,
        "checked_run_ratio_rounds": [round(r, 4) for r in checked_ratios],
        "lean_us": round(us["lean"], 1),
        "fingerprinted_run_us": round(us["fingerprinted_run"], 1),
        "run_over_lean": round(median(lean_ratios), 4),
        "run_over_lean_target": 1.6,
        "run_over_lean_rounds": [round(r, 4) for r in lean_ratios],
        "lean_over_raw_pair": round(us["lean"] / us["raw_pair"], 2),
        "pair_over_pair_ratio": round(median(pair_ratios), 4),
        "harness_runs_per_s": round(1e6 / us["run"], 1),
        "cost_breakdown_us": {
            "world_build_from_state": round(us["world_build"], 1),
            "run_total": round(us["run"], 1),
            "final_world_snapshot": round(us["world_snapshot"], 1),
            "oracles": round(us["oracles"], 1),
            "fingerprint": round(us["fingerprint"], 1),
        },
    }
    emit("bench_run", figures)


if __name__ == "__main__":
    main()
