"""Runs per CPU-second against a peer: the harness's random exploration beside detangle's on the same tasks.

detangle (PyPI `detangle`, deterministic simulation testing for asyncio) explores schedules of
asyncio code on a virtual clock. Both explore bench_run's 8-call batch with a random strategy, every
run checked, and no shrinking or saving:

- detangle runs the batch as eight asyncio tasks gathered on its `SimLoop`: each sleeps to its
  touch point, reads or writes a dict world as the harness's mock tool does there, sleeps to its end
  and returns the tool's value; each run then asserts the final files (its "oracle");
- the harness runs the same calls on the same tree through `explore(..., "random")`, every run
  checked by every oracle: under the built-in `parallel`, and under a plain `asyncio.gather`
  executor through `from_asyncio` (the same eight tasks, written as a runtime would).

The harness does more per run than detangle here (a trace of every touch, value digests, a
pyfakefs world, a dozen oracles); the target (issue 27) is that its built-in policies still run at
least as many runs per CPU-second. Prints one JSON object and writes benchmarks/results/bench_peers.json;
`{"skipped": ...}` when detangle is not installed (`pip install -e '.[peers]'`).

Usage: python benchmarks/bench_peers.py [--runs N] [--rounds R]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

from _figures import emit
from bench_bridges import gather_executor
from bench_run import CALLS, FILES, bench_scenario

from harness import __version__, get_scheduler
from harness.bridges import from_asyncio
from harness.explore.engine import explore

TARGET = 1.0  # built-in policy runs/CPU-s over detangle's (issue 27)
LATENCY_S = {"read_file": 0.1, "write_file": 0.2, "patch": 0.3, "search_files": 0.4, "web_search": 1.2,
             "query_service_logs": 3.0, "run_tests": 2.0}


def detangle_batch() -> Callable[[], Any]:
    """The batch as asyncio tasks on a dict world, checked at the end."""

    async def main() -> None:
        files = {f"/repo/{p.removeprefix('/repo/')}": text for p, text in FILES.items()}

        async def read_file(path: str) -> dict[str, str]:
            await asyncio.sleep(0.05)
            text = files["/repo/" + path]
            await asyncio.sleep(0.05)
            return {"path": "/repo/" + path, "content": text}

        async def write_file(path: str, content: str) -> dict[str, Any]:
            files["/repo/" + path] = ""
            await asyncio.sleep(0.2)
            files["/repo/" + path] = content
            return {"path": "/repo/" + path, "bytes_written": len(content.encode())}

        async def patch(path: str, old: str, new: str) -> dict[str, Any]:
            text = files["/repo/" + path]
            await asyncio.sleep(0.3)
            files["/repo/" + path] = text.replace(old, new, 1)
            return {"path": "/repo/" + path, "replacements": 1}

        async def search_files(pattern: str, path: str) -> dict[str, Any]:
            await asyncio.sleep(0.2)
            prefix = f"/repo/{path}/"
            matches = [{"path": p, "line": n, "text": line} for p in sorted(files) if p.startswith(prefix)
                       for n, line in enumerate(files[p].splitlines(), start=1) if pattern in line]
            await asyncio.sleep(0.2)
            return {"matches": matches, "count": len(matches)}

        async def remote(latency: float, value: dict[str, Any]) -> dict[str, Any]:
            await asyncio.sleep(latency)
            return value

        async def run_tests(path: str) -> dict[str, Any]:
            await asyncio.sleep(0.2)
            tree = {p: files[p] for p in sorted(files)}
            await asyncio.sleep(1.8)
            return {"passed": "return" in tree["/repo/src/app.py"], "tests": 1, "failures": []}

        tools: dict[str, Callable[..., Any]] = {
            "read_file": read_file, "write_file": write_file, "patch": patch, "search_files": search_files,
            "web_search": lambda query: remote(1.2, {"results": [query]}),
            "query_service_logs": lambda service_name: remote(3.0, {"service": service_name}),
            "run_tests": run_tests,
        }
        await asyncio.gather(*(tools[name](**args) for _, name, args in CALLS))
        assert files["/repo/src/new.py"] == "x = 1\n" and "timeout: 60" in files["/repo/config.yaml"]

    return main


def _rate(go: Callable[[], int]) -> float:
    start = time.process_time()
    done = go()
    return done / (time.process_time() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000, help="runs per exploration")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (the median is reported)")
    args = parser.parse_args()
    try:
        import detangle
    except ImportError:
        emit("bench_peers", {"skipped": "detangle is not installed (pip install -e '.[peers]')"})
        return
    scenario = bench_scenario()
    parallel, gathered = get_scheduler("parallel"), from_asyncio(gather_executor)
    batch = detangle_batch()

    def harness_rate(scheduler: Any) -> Callable[[], int]:
        def go() -> int:
            exploration = explore(scenario, scheduler, "random", runs=args.runs, seed=1, processes=1, shrink=False)
            return exploration.runs

        return go

    def detangle_rate() -> int:
        stats = detangle.explore(batch, runs=args.runs, strategy="random", seed=1, shrink=False, database=False)
        return int(stats.runs)

    rounds: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for name, go in (("detangle", detangle_rate), ("parallel", harness_rate(parallel)),
                         ("gather_bridged", harness_rate(gathered))):
            rounds.setdefault(name, []).append(_rate(go))
    per_s = {name: statistics.median(values) for name, values in rounds.items()}
    ratios = [h / d for h, d in zip(rounds["parallel"], rounds["detangle"], strict=True)]
    bridged = [h / d for h, d in zip(rounds["gather_bridged"], rounds["detangle"], strict=True)]
    emit("bench_peers", {
        "benchmark": "random exploration of the 8-call batch, runs per CPU-second: harness vs detangle",
        "harness_version": __version__,
        "detangle_version": detangle.__version__,
        "python": platform.python_version(),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "runs_per_exploration": args.runs,
        "rounds": args.rounds,
        "detangle_runs_per_s": round(per_s["detangle"], 1),
        "parallel_runs_per_s": round(per_s["parallel"], 1),
        "gather_bridged_runs_per_s": round(per_s["gather_bridged"], 1),
        "parallel_over_detangle": round(statistics.median(ratios), 3),
        "parallel_over_detangle_rounds": [round(r, 3) for r in ratios],
        "parallel_over_detangle_target": TARGET,
        "gather_bridged_over_detangle": round(statistics.median(bridged), 3),
    })


if __name__ == "__main__":
    main()
