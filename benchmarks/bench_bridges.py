"""Bridge speed: real runtime executors on the virtual clock, against the built-in `parallel`.

Prints one JSON object and writes it to benchmarks/results/bench_bridges.json. Every figure is
measured in this process, in this run, on the 8-call batch of bench_run.py, so ratios are meaningful
on any machine:

- `parallel_runs_per_s`: `run()` under the built-in `parallel` (the reference);
- `threads_pool_runs_per_s`: `run()` under `from_threads` with a plain `ThreadPoolExecutor` executor
  (submit every call, `concurrent.futures.wait`, results in model order): 9 real OS threads per run
  on the turnstile, started, switched and joined;
- `threads_pool_over_parallel_ratio`: the two as a ratio (issue 11's target: >= 0.2);
- `threads_cost_breakdown_us`: where a bridged run's extra time goes.

- `asyncio_gather_runs_per_s`: `run()` under `from_asyncio` with a plain `asyncio.gather` executor
  (one task per call, results in model order) on the bridge's one virtual event loop;
- `asyncio_gather_over_parallel_ratio`: against the built-in (issue 11's target: >= 0.5).

Usage: python benchmarks/bench_bridges.py [--seconds S]
"""

from __future__ import annotations

import _thread
import argparse
import asyncio
import concurrent.futures
import json
import platform
import threading
from typing import Any

from _figures import emit
from bench_run import bench_scenario, rate

from harness import __version__, get_scheduler, run
from harness.schedulers import from_asyncio
from harness.schedulers.bridge_threads import from_threads


def pool_executor(tool_calls: list[Any], run_tool: Any) -> list[dict[str, Any]]:
    """The plainest thread executor: every call on a pool, results in model order."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        futures = [pool.submit(run_tool, tc) for tc in tool_calls]
        concurrent.futures.wait(futures)
    return [{"id": tc.id, "result": future.result()} for tc, future in zip(tool_calls, futures, strict=True)]


async def gather_executor(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
    """The plainest asyncio executor: every call a task, gathered, results in model order."""
    values = await asyncio.gather(*(tools[tc.function.name](**json.loads(tc.function.arguments))
                                    for tc in tool_calls))
    return [{"id": tc.id, "result": value} for tc, value in zip(tool_calls, values, strict=True)]


def bare_threads(i: int) -> None:
    """9 OS threads started and joined, with one baton handoff each: the floor of a bridged run."""
    locks = [threading.Lock() for _ in range(9)]
    for lock in locks:
        lock.acquire()
    threads = [threading.Thread(target=lock.acquire, daemon=True) for lock in locks]
    for thread, lock in zip(threads, locks, strict=True):
        thread.start()
        lock.release()
        thread.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    args = parser.parse_args()
    sc = bench_scenario()
    parallel = get_scheduler("parallel")
    bridged = from_threads(pool_executor)
    reference = run(sc, parallel, 1)
    check = run(sc, bridged, 1)
    assert check.makespan_ms == reference.makespan_ms, (check.makespan_ms, reference.makespan_ms)
    assert [r.call_id for r in check.results] == [r.call_id for r in reference.results]

    gathered = from_asyncio(gather_executor)
    check = run(sc, gathered, 1)
    assert check.makespan_ms == reference.makespan_ms, (check.makespan_ms, reference.makespan_ms)
    assert [r.call_id for r in check.results] == [r.call_id for r in reference.results]

    builtin = rate(lambda i: run(sc, parallel, i), args.seconds)
    threads = rate(lambda i: run(sc, bridged, i), args.seconds)
    asyncio_rate = rate(lambda i: run(sc, gathered, i), args.seconds)
    floor = rate(bare_threads, args.seconds / 2)
    figures = {
        "benchmark": "bridges on the 8-call batch vs built-in parallel",
        "harness_version": __version__,
        "python": platform.python_version(),
        "parallel_runs_per_s": round(builtin, 1),
        "threads_pool_runs_per_s": round(threads, 1),
        "threads_pool_over_parallel_ratio": round(threads / builtin, 3),
        "threads_target_ratio": 0.2,
        "threads_target_met": threads / builtin >= 0.2,
        "threads_cost_breakdown_us": {
            "parallel_run": round(1e6 / builtin, 1),
            "bridged_run": round(1e6 / threads, 1),
            "os_threads_start_handoff_join_9": round(1e6 / floor, 1),
            "turnstile_and_primitives": round(1e6 / threads - 1e6 / builtin - 1e6 / floor, 1),
        },
        "threads_active_after": threading.active_count() + _thread._count(),  # type: ignore[attr-defined]
        "asyncio_gather_runs_per_s": round(asyncio_rate, 1),
        "asyncio_gather_over_parallel_ratio": round(asyncio_rate / builtin, 3),
        "asyncio_target_ratio": 0.5,
        "asyncio_target_met": asyncio_rate / builtin >= 0.5,
    }
    emit("bench_bridges", figures)


if __name__ == "__main__":
    main()
