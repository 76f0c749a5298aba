"""Per-call cost against batch size: is a run (and its judging) linear in the number of calls?

Prints one JSON object and writes it to benchmarks/results/bench_scale.json. For N = 10, 100, 1k,
10k, 100k calls in one batch under `serial`, `parallel` and `resource_keys`, and for 1, 10, 100 and
1,000 batches of 8 calls (under `resource_keys`), it measures per call:

- `run_us`: CPU time (`time.process_time`) of `run()`, over about `--calls` calls per point (whole
  runs after an untimed warm-up run: 2,000 runs of 10 calls, one of 100,000);
- `oracles_us`: CPU time of every single-run oracle (`oracles.check`) on that run;
- `peak_bytes`: peak traced memory (`tracemalloc`, a separate pass) of run plus oracles;

and each figure's ratio to the series' 100-call point (80 calls for the batches series): issue 13
asks for <= 2 up to 100,000 calls (`worst_growth_ratio`: the worst from that point up; below it a
run's fixed cost is shared by fewer calls). `serial_hung` stops serial half way through at its
virtual-time bound and `parallel_hung` with every call still running, so the hang diagnosis and the
oracles' hang paths are measured too. From 1,000 calls a run and its judging hold off CPython's full
garbage collections, as they do for every user (harness/sim/collector.py); young ones still run
inside the timings.

The workload: 50 files; three calls in four read one (`read_file`), the fourth rewrites one
(`write_file`), so `resource_keys` chains writes per file and makes every read wait for the writes
before it. Serial needs a virtual-time bound past its makespan (the default bound would stop it by
design: a batch longer than 10 minutes is a hang), so every scenario here gets a bound and an event
budget sized to N.

Usage: python benchmarks/bench_scale.py [--max-n N] [--calls C] [--no-memory] [--only SERIES ...]
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import time
import tracemalloc
from typing import Any

from _figures import emit

from harness import __version__, get_scheduler, run
from harness.model import Batch
from harness.oracles import check
from harness.run import RunResult, RunStatus
from harness.scenario import Scenario
from harness.sim.kernel import Limits
from harness.world import World

FILES = 50
SIZES = (10, 100, 1_000, 10_000, 100_000)
BATCH_COUNTS = (1, 10, 100, 1_000)
REFERENCE_N = 100
#: read_file (100 ms) and write_file (200 ms) take at most this long: the bound serial needs per call.
LONGEST_CALL_MS = 200


def calls(n: int, prefix: str = "c") -> list[tuple[str, str, dict[str, Any]]]:
    out: list[tuple[str, str, dict[str, Any]]] = []
    for i in range(n):
        path = f"src/f{(i * 7) % FILES}.py"
        if i % 4 == 3:
            out.append((f"{prefix}{i}", "write_file", {"path": path, "content": f"v = {i}\n"}))
        else:
            out.append((f"{prefix}{i}", "read_file", {"path": path}))
    return out


def world() -> World:
    w = World(cwd="/repo")
    w.populate(files=[(f"/repo/src/f{i}.py", f"v = -{i}\n") for i in range(FILES)])
    return w


def scenario(n: int, batches: int = 1, time_bound_ms: int | None = None) -> Scenario:
    per = n // batches
    made = tuple(Batch.of(calls(per, prefix=f"b{b}c")) for b in range(batches))
    bound = time_bound_ms if time_bound_ms is not None else n * LONGEST_CALL_MS + 10_000
    limits = Limits(time_bound_ms=bound, event_budget=40 * n + 10_000)
    return Scenario(name=f"scale-{batches}x{per}", batches=made, world=world().state(), limits=limits)


def measure(sc: Scenario, policy: str, n: int, calls: int, memory: bool, expect: RunStatus) -> dict[str, Any]:
    """Per-call CPU time of `run()` and of the oracles over about `calls` calls (whole runs after one
    untimed warm-up), then the tracemalloc peak of one run and its checks."""
    scheduler = get_scheduler(policy)
    runs = max(1, calls // n)
    # Warm-up, at every size alike: the world's template, the replay memo (runs of one scenario that
    # report the same outcomes share their model-order replay, as a sweep's seeds do), code paths.
    check(run(sc, scheduler, 0))
    # What the process already holds (modules, the world's template, the warm-up's memo) is set aside
    # from the collector's scans, and each timed run starts after an untimed collection: a run is
    # charged with the collections its own allocations start, not with collecting the runs before it
    # (which landed in whichever phase of the next allocated enough and made single points spike).
    gc.collect()
    gc.freeze()
    run_s = oracle_s = 0.0
    result: RunResult | None = None
    for seed in range(runs):
        result = None
        gc.collect()
        start = time.process_time()
        result = run(sc, scheduler, seed)
        judged = time.process_time()
        check(result)
        run_s, oracle_s = run_s + judged - start, oracle_s + time.process_time() - judged
    gc.unfreeze()
    assert result is not None
    print(f"{sc.name} under {policy}: {runs} runs, run {run_s:.2f} s, oracles {oracle_s:.2f} s",
          file=sys.stderr, flush=True)
    if result.status is not expect:
        raise SystemExit(f"{sc.name} under {policy}: {result.status.value} ({result.error}), expected {expect.value}")
    del result
    figures: dict[str, Any] = {"calls": n, "runs": runs, "run_us": 1e6 * run_s / (runs * n),
                               "oracles_us": 1e6 * oracle_s / (runs * n)}
    if memory:
        gc.collect()
        tracemalloc.start()
        check(run(sc, scheduler, 0))
        figures["peak_bytes"] = tracemalloc.get_traced_memory()[1] / n
        tracemalloc.stop()
    return figures


def with_ratios(points: list[dict[str, Any]], reference: int) -> list[dict[str, Any]]:
    base = next(p for p in points if p["calls"] == reference)
    out = []
    for point in points:
        shown = {"calls": point["calls"]}
        for key in ("run_us", "oracles_us", "peak_bytes"):
            if key in point:
                shown[key] = round(point[key], 1)
                shown[f"{key.removesuffix('_us').removesuffix('_bytes')}_ratio"] = round(point[key] / base[key], 2)
        out.append(shown)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-n", type=int, default=SIZES[-1], help="largest batch measured")
    parser.add_argument("--calls", type=int, default=20_000,
                        help="calls run per point (whole runs: 2,000 runs of 10 calls, one of 100,000)")
    parser.add_argument("--no-memory", action="store_true", help="skip the tracemalloc pass")
    parser.add_argument("--only", nargs="*", help="series to measure (default: all)")
    args = parser.parse_args()
    sizes = [n for n in SIZES if n <= args.max_n]
    memory = not args.no_memory
    load_before = os.getloadavg()[0]
    series: dict[str, list[dict[str, Any]]] = {}
    wanted = set(args.only or ("serial", "parallel", "resource_keys", "serial_hung", "parallel_hung", "batches_of_8"))
    for policy in ("serial", "parallel", "resource_keys"):
        if policy in wanted:
            points = [measure(scenario(n), policy, n, args.calls, memory, RunStatus.COMPLETED)
                      for n in sizes]
            series[policy] = with_ratios(points, REFERENCE_N)
    if "serial_hung" in wanted:
        # About half the calls fit in the bound (serial takes 125 ms a call on average here).
        points = [measure(scenario(n, time_bound_ms=n * 60), "serial", n, args.calls, memory,
                          RunStatus.HANG) for n in sizes]
        series["serial_hung"] = with_ratios(points, REFERENCE_N)
    if "parallel_hung" in wanted:
        # Every call is still running at the bound (read_file takes 100 ms): the widest hang to diagnose.
        points = [measure(scenario(n, time_bound_ms=50), "parallel", n, args.calls, memory,
                          RunStatus.HANG) for n in sizes]
        series["parallel_hung"] = with_ratios(points, REFERENCE_N)
    if "batches_of_8" in wanted:
        counts = [b for b in BATCH_COUNTS if 8 * b <= args.max_n]
        points = [measure(scenario(8 * b, batches=b), "resource_keys", 8 * b, args.calls,
                          memory, RunStatus.COMPLETED) for b in counts]
        series["batches_of_8"] = with_ratios(points, 80)
    # Growth: the worst ratio from the reference point up (below it, a run's fixed cost, the world
    # build and the scenario's setup, is shared by fewer calls: per-call cost falls as N grows to 100).
    worst = {name: max(max(p.get("run_ratio", 0), p.get("oracles_ratio", 0), p.get("peak_ratio", 0))
                       for p in points if p["calls"] >= (80 if name == "batches_of_8" else REFERENCE_N))
             for name, points in series.items()}
    figures = {
        "benchmark": "per-call cost vs batch size (CPU time, tracemalloc peak; ratio to the 100-call point)",
        "harness_version": __version__,
        "python": platform.python_version(),
        "load_average_1m": round(load_before, 2),
        "load_average_1m_after": round(os.getloadavg()[0], 2),
        "max_n": max(sizes),
        "ratio_target": 2.0,
        "worst_growth_ratio": worst,
        "series": series,
    }
    emit("bench_scale", figures)


if __name__ == "__main__":
    main()
