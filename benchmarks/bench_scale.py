"""Per-call cost against batch size: is a run (and its judging) linear in the number of calls?

Prints one JSON object and writes it to benchmarks/results/bench_scale.json. For N = 10, 100, 1k,
10k, 100k calls in one batch under `serial`, `parallel` and `resource_keys`, and for 1, 10, 100 and
1,000 batches of 8 calls (under `resource_keys`), it measures per call:

- `run_us`: CPU time (`time.process_time`) of `run()`, over about `--calls` calls per pass (whole
  runs after an untimed warm-up run: 2,000 runs of 10 calls, one of 100,000);
- `oracles_us`: CPU time of every single-run oracle (`oracles.check`) on that run;
- `peak_bytes`: peak traced memory (`tracemalloc`, a separate pass) of run plus oracles;

each point the median of `--repeats` passes, and each figure's ratio to the series' 100-call point
(80 calls for the batches series): issue 13 asks for <= 2 up to 100,000 calls (`worst_growth_ratio`:
the worst from that point up; below it a run's fixed cost is shared by fewer calls). The ratio of a
larger point is the median of its passes' ratios, each against a pass of the 100-call point made just
before it: this machine's speed drifts by up to 2x within minutes, and a 100,000-call pass is a
single run, so a ratio between passes made minutes apart measured the drift as often as the
harness. Each series runs in a fresh process (`--in-process` to run them all in this one), as one
user's check does: run after the other series in one process, the last series' largest points were
slower than when measured alone. `serial_hung` stops serial half way through at its
virtual-time bound and `parallel_hung` with every call still running, so the hang diagnosis and the
oracles' hang paths are measured too. From 1,000 calls a run and its judging hold off CPython's full
garbage collections, as they do for every user (harness/sim/collector.py); young ones still run
inside the timings.

The workload: 50 files; three calls in four read one (`read_file`), the fourth rewrites one
(`write_file`), so `resource_keys` chains writes per file and makes every read wait for the writes
before it. Serial needs a virtual-time bound past its makespan (the default bound would stop it by
design: a batch longer than 10 minutes is a hang), so every scenario here gets a bound and an event
budget sized to N.

Usage: python benchmarks/bench_scale.py [--max-n N] [--calls C] [--repeats R] [--no-memory] [--only SERIES ...]
                                        [--in-process]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
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
SERIES = ("serial", "parallel", "resource_keys", "serial_hung", "parallel_hung", "batches_of_8")
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


class Point:
    """One series point: its scenario, and how to measure a pass of it."""

    def __init__(self, sc: Scenario, policy: str, n: int, expect: RunStatus) -> None:
        self.sc, self.policy, self.n, self.expect = sc, policy, n, expect
        self.scheduler = get_scheduler(policy)
        # Warm-up, at every size alike: the world's template, the replay memo (runs of one scenario
        # that report the same outcomes share their model-order replay, as a sweep's seeds do), code.
        check(run(sc, self.scheduler, 0))

    def timed(self, calls: int) -> tuple[float, float]:
        """Per-call CPU time (us) of `run()` and of the oracles over about `calls` calls (whole runs)."""
        runs = max(1, calls // self.n)
        # What the process already holds (modules, the world's template, the warm-up's memo) is set
        # aside from the collector's scans, and each timed run starts after an untimed collection: a
        # run is charged with the collections its own allocations start, not with collecting the runs
        # before it (which landed in whichever phase of the next allocated enough).
        gc.collect()
        gc.freeze()
        run_s = oracle_s = 0.0
        result: RunResult | None = None
        for seed in range(runs):
            result = None
            gc.collect()
            start = time.process_time()
            result = run(self.sc, self.scheduler, seed)
            judged = time.process_time()
            check(result)
            run_s, oracle_s = run_s + judged - start, oracle_s + time.process_time() - judged
        gc.unfreeze()
        assert result is not None
        if result.status is not self.expect:
            raise SystemExit(f"{self.sc.name} under {self.policy}: {result.status.value} ({result.error}), "
                             f"expected {self.expect.value}")
        return 1e6 * run_s / (runs * self.n), 1e6 * oracle_s / (runs * self.n)

    def peak(self) -> float:
        """Peak traced bytes per call of one run and its checks."""
        gc.collect()
        tracemalloc.start()
        check(run(self.sc, self.scheduler, 0))
        peak = tracemalloc.get_traced_memory()[1] / self.n
        tracemalloc.stop()
        return peak


def measure_series(points: list[Point], reference: int, calls: int, repeats: int, memory: bool,
                   name: str) -> list[dict[str, Any]]:
    """Every point's median figures and its ratios to the reference point (see the module's docstring)."""
    base = next(p for p in points if p.n == reference)
    base_passes = [base.timed(calls) for _ in range(repeats)]
    base_run, base_oracles = (median(x[i] for x in base_passes) for i in (0, 1))
    base_peak = base.peak() if memory else None
    out = []
    for point in points:
        if point is base:
            passes = base_passes
            ratios = [(r / base_run, o / base_oracles) for r, o in passes]
        elif point.n < reference:
            passes = [point.timed(calls) for _ in range(repeats)]
            ratios = [(r / base_run, o / base_oracles) for r, o in passes]
        else:
            passes, ratios = [], []
            for _ in range(repeats):
                beside = base.timed(calls)
                passes.append(point.timed(calls))
                ratios.append((passes[-1][0] / beside[0], passes[-1][1] / beside[1]))
        shown: dict[str, Any] = {"calls": point.n, "runs": max(1, calls // point.n), "passes": len(passes)}
        for i, key in enumerate(("run", "oracles")):
            shown[f"{key}_us"] = round(median(p[i] for p in passes), 1)
            shown[f"{key}_ratio"] = round(median(r[i] for r in ratios), 2)
            shown[f"{key}_ratio_passes"] = [round(r[i], 2) for r in ratios]
        if memory and base_peak is not None:
            peak = point.peak()
            shown["peak_bytes"], shown["peak_ratio"] = round(peak, 1), round(peak / base_peak, 2)
        print(f"{name}: {point.n} calls, run {shown['run_us']} us/call ({shown['run_ratio']}x), oracles "
              f"{shown['oracles_us']} us/call ({shown['oracles_ratio']}x)", file=sys.stderr, flush=True)
        out.append(shown)
    return out


def series_points(name: str, sizes: list[int]) -> tuple[list[Point], int]:
    """The points of series `name` and its reference size."""
    if name in ("serial", "parallel", "resource_keys"):
        return [Point(scenario(n), name, n, RunStatus.COMPLETED) for n in sizes], REFERENCE_N
    if name == "serial_hung":
        # About half the calls fit in the bound (serial takes 125 ms a call on average here).
        return [Point(scenario(n, time_bound_ms=n * 60), "serial", n, RunStatus.HANG) for n in sizes], REFERENCE_N
    if name == "parallel_hung":
        # Every call is still running at the bound (read_file takes 100 ms): the widest hang to diagnose.
        return [Point(scenario(n, time_bound_ms=50), "parallel", n, RunStatus.HANG) for n in sizes], REFERENCE_N
    counts = [b for b in BATCH_COUNTS if 8 * b <= max(sizes)]
    return [Point(scenario(8 * b, batches=b), "resource_keys", 8 * b, RunStatus.COMPLETED) for b in counts], 80


def median(values: Any) -> float:
    return float(statistics.median(list(values)))


def in_fresh_process(name: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Series `name` measured by this script in a child process (its figures come back as JSON)."""
    command = [sys.executable, __file__, "--only", name, "--in-process", "--series-json",
               "--max-n", str(args.max_n), "--calls", str(args.calls), "--repeats", str(args.repeats)]
    if args.no_memory:
        command.append("--no-memory")
    done = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True)
    figures: list[dict[str, Any]] = json.loads(done.stdout)[name]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-n", type=int, default=SIZES[-1], help="largest batch measured")
    parser.add_argument("--calls", type=int, default=20_000,
                        help="calls run per pass (whole runs: 2,000 runs of 10 calls, one of 100,000)")
    parser.add_argument("--repeats", type=int, default=3, help="passes per point (medians are reported)")
    parser.add_argument("--no-memory", action="store_true", help="skip the tracemalloc pass")
    parser.add_argument("--only", nargs="*", help="series to measure (default: all)")
    parser.add_argument("--in-process", action="store_true", help="measure every series in this process")
    parser.add_argument("--series-json", action="store_true", help=argparse.SUPPRESS)  # a child's output
    args = parser.parse_args()
    sizes = [n for n in SIZES if n <= args.max_n]
    load_before = os.getloadavg()[0]
    wanted = [name for name in SERIES if name in set(args.only or SERIES)]
    series: dict[str, list[dict[str, Any]]] = {}
    for name in wanted:
        if args.in_process:
            points, reference = series_points(name, sizes)
            series[name] = measure_series(points, reference, args.calls, args.repeats, not args.no_memory, name)
        else:
            series[name] = in_fresh_process(name, args)
    if args.series_json:
        print(json.dumps(series))
        return
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
        "repeats": args.repeats,
        "fresh_process_per_series": not args.in_process,
        "ratio_target": 2.0,
        "worst_growth_ratio": worst,
        "series": series,
    }
    emit("bench_scale", figures)


if __name__ == "__main__":
    main()
