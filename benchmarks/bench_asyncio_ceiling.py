"""The ceiling of `gather` through `from_asyncio` against the built-in `parallel`: what asyncio alone costs.

Prints one JSON object and writes it to benchmarks/results/bench_asyncio_ceiling.json. Every figure is
measured in this process, in this run, on the 8-call batch of bench_run.py, as CPU time
(`time.process_time`), in interleaved rounds whose median is reported (as bench_bridges.py does):

- `parallel_us`: one `run()` of the built-in `parallel` (world, simulation, trace);
- `gather_us`: one `run()` of bench_bridges' plain `gather` executor through `from_asyncio`;
- `asyncio_floor_us`: the same executor and its asyncio work alone, no harness: its calls as plain
  OpenAI-shaped objects (as bench_bridges' floors) and tools whose coroutine each awaits one future,
  settled from outside one at a time with the loop stepped after each, as in a bridged run (a task
  per call, 9 loop steps), on the bridge's own `VirtualLoop` stepped by `run_ready`;
- `plain_loop_floor_us`: the same on a stock asyncio event loop (`_run_once` until nothing is ready);
- `ceiling_ratio` = parallel_us / (parallel_us + asyncio_floor_us): the gather/parallel ratio a
  bridge would reach if it added nothing to a run but the executor's own asyncio work (the harness's
  part of a bridged run is at least `parallel`'s: the same calls in the same world and trace), an
  upper bound for bench_bridges' `asyncio_gather_over_parallel_ratio`;
- `bridge_glue_us` = gather_us - parallel_us - asyncio_floor_us: what the bridge adds beyond both.

Usage: python benchmarks/bench_asyncio_ceiling.py [--seconds S] [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from _figures import emit
from bench_bridges import gather_executor
from bench_run import bench_scenario, rate

from harness import __version__, get_scheduler, run
from harness.bridges import from_asyncio
from harness.bridges.asyncio.loop import VirtualLoop
from harness.bridges.planners.adapters import openai_tool_calls


class WaitingTools(Mapping[str, Callable[..., Any]]):
    """Tools whose coroutine awaits one future on `loop`, settled by `settle_next` (no harness)."""

    def __init__(self, names: list[str], loop: asyncio.AbstractEventLoop) -> None:
        self._names, self._loop = names, loop
        self.pending: list[asyncio.Future[Any]] = []

    def __getitem__(self, name: str) -> Callable[..., Any]:
        if name not in self._names:
            raise KeyError(name)

        async def waiting(**arguments: Any) -> Any:
            future = self._loop.create_future()
            self.pending.append(future)
            return await future
        return waiting

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def floor(lean: bool) -> Callable[[int], Any]:
    """The executor's asyncio work alone, on the bridge's loop (`lean`) or a stock one."""
    batch = bench_scenario().batches[0]
    calls = openai_tool_calls(batch)
    loop: Any = VirtualLoop() if lean else asyncio.new_event_loop()
    tools = WaitingTools(sorted({call.name for call in batch}), loop)

    def step() -> None:
        if lean:
            loop.run_ready()
            return
        asyncio.events._set_running_loop(loop)
        try:
            while True:
                loop._run_once()
                if not loop._ready:
                    break
        finally:
            asyncio.events._set_running_loop(None)

    def one(_: int) -> Any:
        task = loop.create_task(gather_executor(calls, tools))
        step()
        while tools.pending:
            tools.pending.pop(0).set_result({"ok": True})
            step()
        assert task.done() and len(task.result()) == len(calls)
        if lean:
            loop.tasks.clear()
        return task.result()
    return one


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.5, help="CPU time per measurement and round")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (the median is reported)")
    args = parser.parse_args()

    sc = bench_scenario()
    parallel, gathered = get_scheduler("parallel"), from_asyncio(gather_executor)
    measurements: dict[str, Callable[[int], Any]] = {
        "parallel": lambda i: run(sc, parallel, i),
        "gather": lambda i: run(sc, gathered, i),
        "asyncio_floor": floor(lean=True),
        "plain_loop_floor": floor(lean=False),
    }
    rounds: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for name, fn in measurements.items():
            rounds.setdefault(name, []).append(1e6 / rate(fn, args.seconds))
    us = {name: statistics.median(values) for name, values in rounds.items()}
    ceilings = [p / (p + f) for p, f in zip(rounds["parallel"], rounds["asyncio_floor"], strict=True)]
    figures = {
        "benchmark": "the ceiling of gather through from_asyncio against parallel: the executor's own asyncio "
                     "work beside a run of parallel (CPU time, median of interleaved rounds)",
        "harness_version": __version__,
        "python": platform.python_version(),
        "rounds": args.rounds,
        "load_average_1m": round(os.getloadavg()[0], 2),
        **{f"{name}_us": round(value, 1) for name, value in us.items()},
        "gather_over_parallel_ratio": round(statistics.median(
            p / g for p, g in zip(rounds["parallel"], rounds["gather"], strict=True)), 3),
        "ceiling_ratio": round(statistics.median(ceilings), 3),
        "bridge_glue_us": round(us["gather"] - us["parallel"] - us["asyncio_floor"], 1),
    }
    emit("bench_asyncio_ceiling", figures)


if __name__ == "__main__":
    main()
