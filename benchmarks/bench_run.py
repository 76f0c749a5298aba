"""Throughput of `run()` on an 8-call batch, against raw SimPy doing the same schedule.

Prints one JSON object and writes it to benchmarks/results/bench_run.json. Every figure is measured
in this process, in this run, so ratios are meaningful on any machine:

- `raw_simpy_pairs_per_s`: a bare SimPy model of the same batch (same latencies), serial and
  parallel, no world, no trace: the floor the harness is compared with;
- `harness_pairs_per_s`: `run()` under `serial` and under `parallel`, world, touches and trace;
- `harness_runs_per_s`: single `run()` calls per second (the issue's target: >= 2,000 per core);
- `fingerprint_runs_per_s`: the same, also hashing trace and final world;
- `cost_breakdown_us`: where a run's time goes (world build, kernel, final snapshot).

Usage: python benchmarks/bench_run.py [--seconds S]
"""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable, Generator
from typing import Any

import simpy
from _figures import emit

from harness import __version__, get_scheduler, run
from harness.model import Batch
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


def rate(fn: Callable[[int], None], seconds: float) -> float:
    """Calls per second of fn(i), timed over at least `seconds` (after a short warm-up)."""
    for i in range(20):
        fn(i)
    count, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(50):
            fn(count)
            count += 1
    return count / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    args = parser.parse_args()
    sc = bench_scenario()
    serial, parallel = get_scheduler("serial"), get_scheduler("parallel")
    reference = run(sc, serial, 1)
    latencies = [r.end_ms - r.start_ms for r in reference.results]
    snapshot_world = World.from_state(sc.world)

    def pair(i: int) -> None:
        run(sc, serial, i)
        run(sc, parallel, i)

    def single_run(i: int) -> None:
        run(sc, parallel, i)

    def hashed_run(i: int) -> None:
        _ = run(sc, parallel, i).fingerprint

    raw = rate(lambda i: raw_simpy_pair(latencies), args.seconds)
    pairs = rate(pair, args.seconds)
    single = rate(single_run, args.seconds)
    hashed = rate(hashed_run, args.seconds)
    def build_world(i: int) -> None:
        World.from_state(sc.world)

    def snapshot(i: int) -> None:
        snapshot_world.state()

    build = rate(build_world, args.seconds / 2)
    snap = rate(snapshot, args.seconds / 2)

    figures = {
        "benchmark": "run() on an 8-call batch vs raw SimPy",
        "harness_version": __version__,
        "python": platform.python_version(),
        "raw_simpy_pairs_per_s": round(raw, 1),
        "harness_pairs_per_s": round(pairs, 1),
        "harness_over_raw_simpy_ratio": round(pairs / raw, 4),
        "harness_runs_per_s": round(single, 1),
        "fingerprint_runs_per_s": round(hashed, 1),
        "target_runs_per_s_per_core": 2000,
        "target_met": single >= 2000,
        "cost_breakdown_us": {
            "run_total": round(1e6 / single, 1),
            "world_build_from_state": round(1e6 / build, 1),
            "final_world_snapshot": round(1e6 / snap, 1),
            "kernel_tools_and_trace": round(1e6 / single - 1e6 / build, 1),
            "fingerprint_extra": round(1e6 / hashed - 1e6 / single, 1),
        },
    }
    emit("bench_run", figures)


if __name__ == "__main__":
    main()
