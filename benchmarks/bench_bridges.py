"""Bridge speed: real runtimes on the virtual clock, against the runtime itself and the built-in `parallel`.

Prints one JSON object and writes it to benchmarks/results/bench_bridges.json. Every figure is
measured in this process, in this run, on the 8-call batch of bench_run.py (`bench_scenario()`), as
CPU time (`time.process_time`: every thread of this process, none of the other processes on a shared
machine), in interleaved rounds whose median is reported, so ratios are meaningful on any machine:

- per recipe (openai-agents, LangGraph's ToolNode, pydantic-ai, smolagents: `RECIPES`, one line
  each; a recipe whose runtime is not installed is skipped, and the figures say so):
  - `floor_runs_per_s`: the runtime's own floor, its executor (the recipe's glue, unchanged) driving
    the same 8 calls with instant tools and no harness: `asyncio.run` per batch for an asyncio
    runtime, a plain call (its own thread pool) for a thread runtime;
  - `bridged_runs_per_s`: `harness.run` of the recipe's scheduler on the batch (world, simulation,
    trace: everything a run does);
  - `bridged_over_floor_ratio`: the two as a ratio. Issue 24's target: the bridge costs at most 1.5x
    the runtime's own floor, i.e. a ratio >= 1/1.5 (0.667);
  - `us_per_run.bridge_overhead`: what the bridge adds to one batch, in microseconds;
- `where_the_time_goes`: per bridged scheduler, where a run's time goes (cProfile in every thread,
  own time by module group: the harness's bridges, its run machinery, SimPy, the runtime and its
  libraries, asyncio, threading, the rest; time a thread waits for the baton is left out);
- `asyncio_gather_over_parallel_ratio`: a plain `asyncio.gather` executor through `from_asyncio`
  against the built-in `parallel` (target >= 0.7);
- `threads_pool_over_parallel_ratio`: a plain `ThreadPoolExecutor` through `from_threads` against
  the built-in `parallel` (target >= 0.5), its bridge threads carried as `threads_carrier` says
  (greenlets, or OS threads with `HARNESS_THREAD_CARRIER=os`);
- `check_scheduler_openai_agents_s`: wall seconds of `check_scheduler` of the openai-agents recipe
  under the `ci` profile, every default scenario (it fails: the recipe loses an update, as the test
  says; the time is the whole check, shrinking included). Target: under 60 s on 2 cores. Skipped
  with `--no-check`.

Usage: python benchmarks/bench_bridges.py [--seconds S] [--rounds N] [--no-check] [--only NAME ...]
"""

from __future__ import annotations

import _thread
import argparse
import asyncio
import concurrent.futures
import cProfile
import importlib
import importlib.util
import json
import os
import platform
import pstats
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

try:
    import greenlet  # type: ignore[import-untyped]
except ImportError:  # the thread bridge then runs on OS threads
    greenlet = None

from _figures import emit
from bench_run import bench_scenario, rate

from harness import __version__, get_scheduler, run
from harness.bridges import from_asyncio
from harness.bridges.planners.adapters import openai_tool_calls
from harness.bridges.threads import from_threads
from harness.bridges.threads.turnstile import carrier, retire_parked

#: Issue 24's targets.
RECIPE_TARGET = 1 / 1.5
GATHER_TARGET = 0.7
POOL_TARGET = 0.5
CHECK_TARGET_S = 60.0


@dataclass(frozen=True)
class Recipe:
    name: str
    #: The module that must import for the runtime to count as installed.
    requires: str
    #: The glue module; its `scheduler` is a `from_asyncio` / `from_threads` scheduler.
    glue: str
    #: "asyncio" (floor: `asyncio.run` per batch) or "threads" (floor: a plain call).
    kind: str


#: One line per recipe: the glue the package ships (harness/recipes/, behind the `runtimes` extra).
RECIPES = (
    Recipe("openai-agents", "agents.testing", "harness.recipes.openai_agents", "asyncio"),
    Recipe("langgraph-toolnode", "langgraph.prebuilt", "harness.recipes.langgraph", "asyncio"),
    Recipe("pydantic-ai", "pydantic_ai", "harness.recipes.pydantic_ai", "asyncio"),
    Recipe("smolagents", "smolagents", "harness.recipes.smolagents", "threads"),
    Recipe("autogen", "autogen_agentchat", "harness.recipes.autogen", "asyncio"),
)


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


class InstantTools(Mapping[str, Callable[..., Any]]):
    """The floor's tools: what a runtime's executor sees of the bridge's `Toolbox` / `ThreadTools`
    (names, `limits.timeout_s`, `tools[name](**arguments)`), answering at once with no simulation."""

    def __init__(self, names: list[str], timeout_s: float | None, asynchronous: bool) -> None:
        self._names = names
        self.limits = SimpleNamespace(timeout_s=timeout_s)
        self._asynchronous = asynchronous

    def __getitem__(self, name: str) -> Callable[..., Any]:
        if name not in self._names:
            raise KeyError(name)
        if self._asynchronous:
            async def instant(**arguments: Any) -> Any:
                return {"tool": name, "ok": True}
            return instant

        def instant_sync(**arguments: Any) -> Any:
            return {"tool": name, "ok": True}
        return instant_sync

    def is_sync(self, name: str) -> bool:
        """The bench's tools are all async (recipes hand a runtime a plain function for a sync one)."""
        return False

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


# -- where the time goes -------------------------------------------------------------------------

_GROUPS = (
    ("harness bridges/asyncio", "/harness/bridges/asyncio/"),
    ("harness bridges/threads", "/harness/bridges/threads/"),
    ("harness sim", "/harness/sim/"),
    ("harness scheduler context", "/harness/scheduling/context.py"),
    ("glue (harness/recipes)", "/harness/recipes/"),
    ("harness world/trace/run (other)", "/harness/"),
    ("simpy", "/simpy/"),
    ("pyfakefs (the world)", "/pyfakefs/"),
    ("asyncio", "/asyncio/"),
    ("threading/concurrent.futures/queue", "/threading.py"),
    ("threading/concurrent.futures/queue", "/concurrent/futures/"),
    ("threading/concurrent.futures/queue", "/queue.py"),
    ("runtime and its libraries", "/site-packages/"),
)
#: Builtins a thread waits in: wall time, not CPU, and counted again by whichever thread ran meanwhile.
#: A greenlet's `switch` is the same for greenlets (the bridge threads on the harness's own thread):
#: its time is the other greenlets', counted by their own profilers (see `ThreadProfiles`).
_WAITS = ("acquire' of '_thread.lock", "acquire' of '_thread.RLock", "'_thread.lock' objects>",
          "method 'wait' of", "method 'switch' of 'greenlet.")


def _group(filename: str, function: str) -> str | None:
    if filename == "~":  # a builtin: grouped by what it is a method of
        if any(w in function for w in _WAITS):
            return None
        if "_asyncio" in function or "contextvars" in function or "Context" in function:
            return "asyncio"
        if "_thread" in function or "Lock" in function:
            return "threading/concurrent.futures/queue"
        return "builtins (other)"
    for name, marker in _GROUPS:
        if marker in filename:
            return name
    if "/lib/python" in filename:
        return "stdlib (other)"
    return "other"


class ThreadProfiles:
    """cProfile in every thread (3.11's cProfile sees only the thread that enabled it): the main
    thread's profiler, and one more per thread started meanwhile, by `threading` or by a bare
    `_thread.start_new_thread` (the turnstile's OS threads); and one per greenlet (the turnstile's
    greenlets), made active at each switch into it, so each profiler sees one stack."""

    def __init__(self) -> None:
        self.profiles: list[cProfile.Profile] = []
        self._lock = threading.Lock()
        self._start_new_thread = _thread.start_new_thread
        self._by_greenlet: dict[Any, cProfile.Profile] = {}
        self._previous_trace: Any = None

    def _switched(self, event: str, args: Any) -> None:
        if event in ("switch", "throw"):
            _origin, target = args
            profile = self._by_greenlet.get(target)
            if profile is None:
                profile = self._by_greenlet[target] = cProfile.Profile()
                self.profiles.append(profile)
            profile.enable()  # this OS thread's profiler from now on; the other keeps its stack

    def _start(self, *_: Any) -> None:
        profile = cProfile.Profile()
        with self._lock:
            self.profiles.append(profile)
        profile.enable()  # replaces this hook in this thread

    def _bare(self, function: Callable[..., Any], args: tuple[Any, ...], *rest: Any) -> int:
        def profiled(*inner: Any) -> Any:
            self._start()
            return function(*inner)
        return self._start_new_thread(profiled, args, *rest)  # type: ignore[no-any-return]

    def __enter__(self) -> ThreadProfiles:
        retire_parked()  # the bridge's parked OS threads started unprofiled: the next ones start here
        threading.setprofile(self._start)
        _thread.start_new_thread = self._bare  # type: ignore[assignment]
        main = cProfile.Profile()
        self.profiles.append(main)
        if greenlet is not None:
            self._by_greenlet[greenlet.getcurrent()] = main
            self._previous_trace = greenlet.settrace(self._switched)
        main.enable()
        return self

    def __exit__(self, *_: Any) -> None:
        self.profiles[0].disable()
        if greenlet is not None:
            greenlet.settrace(self._previous_trace)
            self._by_greenlet.clear()
        threading.setprofile(None)  # type: ignore[arg-type]
        _thread.start_new_thread = self._start_new_thread
        retire_parked()  # and none of them profiles what is measured after

    def breakdown(self, runs: int) -> dict[str, float]:
        """Own time per group, microseconds per run (thread waits left out)."""
        totals: dict[str, float] = {}
        for profile in self.profiles:
            stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
            for (filename, _line, function), (_cc, _nc, tottime, _ct, _callers) in stats.items():
                group = _group(filename, function)
                if group is not None:
                    totals[group] = totals.get(group, 0.0) + tottime
        sys.setprofile(None)
        ordered = sorted(totals.items(), key=lambda kv: -kv[1])
        return {group: round(seconds * 1e6 / runs, 1) for group, seconds in ordered if seconds * 1e6 / runs >= 0.5}


# cProfile's clock is real time: under load, a function is charged for the time its thread waited
# for a core, and profiling slows small calls most. The shares are the figure, not the microseconds.
def profile_runs(fn: Callable[[int], Any], seconds: float) -> dict[str, Any]:
    with ThreadProfiles() as profiles:
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds or count < 5:
            fn(count)
            count += 1
    groups = profiles.breakdown(count)
    return {"runs_profiled": count, "own_time_us_per_run": groups,
            "total_us_per_run_under_profiler": round(sum(groups.values()), 1)}


# -- the figures ------------------------------------------------------------------------------------

def glue(module: str) -> Any:
    """The recipe's glue module (under tests/ of this checkout until the package ships it)."""
    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:
        sys.path.insert(0, root)
    return importlib.import_module(module)


def installed(recipe: Recipe) -> bool:
    try:
        return importlib.util.find_spec(recipe.requires) is not None
    except ModuleNotFoundError:
        return False


def floor_of(execute: Callable[..., Any], calls: list[Any], names: list[str],
             asynchronous: bool) -> Callable[[int], Any]:
    """The runtime's own floor: its executor on the batch with instant tools, no harness."""
    tools = InstantTools(names, None, asynchronous=asynchronous)
    if asynchronous:
        return lambda i: asyncio.run(execute(calls, tools))
    return lambda i: execute(calls, tools)


def measure_check(profile: str) -> dict[str, Any]:
    """`check_scheduler` of the openai-agents recipe, the whole default check, in wall seconds."""
    from harness.testing import SchedulerCheckFailed, check_scheduler
    scheduler = glue(RECIPES[0].glue).scheduler
    start = time.perf_counter()
    try:
        check_scheduler(scheduler, profile=profile)
        verdict = "passed"
    except SchedulerCheckFailed as failed:
        verdict = "failed: " + str(failed).splitlines()[0][:200]
    seconds = time.perf_counter() - start
    return {"profile": profile, "wall_s": round(seconds, 1), "target_s": CHECK_TARGET_S,
            "target_met": seconds < CHECK_TARGET_S, "verdict": verdict, "cpus": os.cpu_count()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.5, help="CPU time per measurement and round")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (the median is reported)")
    parser.add_argument("--profile-seconds", type=float, default=1.0, help="time profiled per bridge (0: none)")
    parser.add_argument("--no-check", action="store_true", help="skip the check_scheduler timing")
    parser.add_argument("--only", nargs="*", default=None, help="only these recipes (by name)")
    args = parser.parse_args()

    sc = bench_scenario()
    batch = sc.batches[0]
    names = sorted({call.name for call in batch})
    parallel = get_scheduler("parallel")
    reference = run(sc, parallel, 1)

    def same_as_parallel(scheduler: Any, makespan: bool = True) -> None:
        # A runtime may order its results or size its pool its own way (smolagents: a pool of
        # os.cpu_count() + 4 workers), so a recipe must only run every call to its end.
        check = run(sc, scheduler, 1)
        assert not makespan or check.makespan_ms == reference.makespan_ms, (check.makespan_ms, reference.makespan_ms)
        assert sorted((r.call_id, r.outcome) for r in check.results) == sorted(
            (r.call_id, r.outcome) for r in reference.results)

    pooled, gathered = from_threads(pool_executor), from_asyncio(gather_executor)
    same_as_parallel(pooled)
    same_as_parallel(gathered)
    measurements: dict[str, Callable[[int], Any]] = {
        "parallel": lambda i: run(sc, parallel, i),
        "asyncio_gather": lambda i: run(sc, gathered, i),
        "threads_pool": lambda i: run(sc, pooled, i),
    }
    profiled: dict[str, Callable[[int], Any]] = {"asyncio_gather": measurements["asyncio_gather"],
                                                 "threads_pool": measurements["threads_pool"]}
    recipes: dict[str, dict[str, Any]] = {}
    for recipe in RECIPES:
        if args.only is not None and recipe.name not in args.only:
            continue
        if not installed(recipe):
            recipes[recipe.name] = {"skipped": f"{recipe.requires} is not installed (pip install -e '.[runtimes]')"}
            print(f"bench_bridges: {recipe.name} skipped: {recipe.requires} is not installed", file=sys.stderr)
            continue
        scheduler = glue(recipe.glue).scheduler
        same_as_parallel(scheduler, makespan=False)
        floor = floor_of(scheduler.execute, openai_tool_calls(batch), names, recipe.kind == "asyncio")
        assert len(floor(0)) == len(batch), f"{recipe.name}: the floor did not run every call"
        measurements[f"{recipe.name}:floor"] = floor
        measurements[f"{recipe.name}:bridged"] = (lambda s: lambda i: run(sc, s, i))(scheduler)
        profiled[recipe.name] = measurements[f"{recipe.name}:bridged"]
        recipes[recipe.name] = {"glue": recipe.glue, "bridge": recipe.kind}

    rounds: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for name, fn in measurements.items():
            rounds.setdefault(name, []).append(rate(fn, args.seconds))
    per_s = {name: statistics.median(values) for name, values in rounds.items()}

    def ratios(top: str, bottom: str) -> list[float]:
        return [a / b for a, b in zip(rounds[top], rounds[bottom], strict=True)]

    for name, entry in recipes.items():
        if "skipped" in entry:
            continue
        recipe_ratios = ratios(f"{name}:bridged", f"{name}:floor")
        entry.update({
            "floor_runs_per_s": round(per_s[f"{name}:floor"], 1),
            "bridged_runs_per_s": round(per_s[f"{name}:bridged"], 1),
            "bridged_over_floor_ratio": round(statistics.median(recipe_ratios), 3),
            "ratio_rounds": [round(r, 3) for r in recipe_ratios],
            "ratio_target": round(RECIPE_TARGET, 3),
            "target_met": statistics.median(recipe_ratios) >= RECIPE_TARGET,
            "bridged_over_parallel_ratio": round(statistics.median(ratios(f"{name}:bridged", "parallel")), 4),
            "us_per_run": {"floor": round(1e6 / per_s[f"{name}:floor"], 1),
                           "bridged": round(1e6 / per_s[f"{name}:bridged"], 1),
                           "bridge_overhead": round(1e6 / per_s[f"{name}:bridged"] - 1e6 / per_s[f"{name}:floor"], 1),
                           "parallel": round(1e6 / per_s["parallel"], 1)},
        })
    gather_ratios, pool_ratios = ratios("asyncio_gather", "parallel"), ratios("threads_pool", "parallel")
    retire_parked()  # the bridge's parked OS threads, kept for reuse: any other thread is one left behind
    threads_left = threading.active_count() + _thread._count()  # type: ignore[attr-defined]
    figures: dict[str, Any] = {
        "benchmark": "bridges on bench_run's 8-call batch: each runtime against its own floor, "
                     "plain executors against the built-in parallel (CPU time, median of interleaved rounds)",
        "harness_version": __version__,
        "python": platform.python_version(),
        "rounds": args.rounds,
        "seconds_per_measurement": args.seconds,
        "load_average_1m": round(os.getloadavg()[0], 2),
        "parallel_runs_per_s": round(per_s["parallel"], 1),
        "recipes": recipes,
        "asyncio_gather_runs_per_s": round(per_s["asyncio_gather"], 1),
        "asyncio_gather_over_parallel_ratio": round(statistics.median(gather_ratios), 3),
        "asyncio_gather_ratio_rounds": [round(r, 3) for r in gather_ratios],
        "asyncio_target_ratio": GATHER_TARGET,
        "asyncio_target_met": statistics.median(gather_ratios) >= GATHER_TARGET,
        "asyncio_gather_overhead_us_per_run": round(1e6 / per_s["asyncio_gather"] - 1e6 / per_s["parallel"], 1),
        "threads_pool_runs_per_s": round(per_s["threads_pool"], 1),
        "threads_pool_over_parallel_ratio": round(statistics.median(pool_ratios), 3),
        "threads_pool_ratio_rounds": [round(r, 3) for r in pool_ratios],
        "threads_target_ratio": POOL_TARGET,
        "threads_target_met": statistics.median(pool_ratios) >= POOL_TARGET,
        "threads_pool_overhead_us_per_run": round(1e6 / per_s["threads_pool"] - 1e6 / per_s["parallel"], 1),
        "threads_active_after": threads_left,
        # What carries the bridge threads: "greenlet" (the default where it can) or "os" (3.13,
        # HARNESS_THREAD_CARRIER=os); measure the other with that variable.
        "threads_carrier": carrier(),
    }
    if args.profile_seconds > 0:
        figures["where_the_time_goes"] = {name: profile_runs(fn, args.profile_seconds)
                                          for name, fn in profiled.items()}
    if not args.no_check and installed(RECIPES[0]):
        figures["check_scheduler_openai_agents"] = measure_check("ci")
    summary(figures)
    emit("bench_bridges", figures)


def summary(figures: dict[str, Any]) -> None:
    """The figures as a few lines for a reader (stderr; the JSON on stdout is the record)."""
    lines = [f"parallel {figures['parallel_runs_per_s']} runs/s; "
             f"gather/parallel {figures['asyncio_gather_over_parallel_ratio']} (target {GATHER_TARGET}); "
             f"pool/parallel {figures['threads_pool_over_parallel_ratio']} (target {POOL_TARGET})"]
    for name, entry in figures["recipes"].items():
        if "skipped" in entry:
            lines.append(f"{name}: skipped ({entry['skipped']})")
            continue
        lines.append(f"{name}: floor {entry['floor_runs_per_s']} runs/s, bridged {entry['bridged_runs_per_s']} runs/s, "
                     f"ratio {entry['bridged_over_floor_ratio']} (target >= {entry['ratio_target']})")
    for name, profile in figures.get("where_the_time_goes", {}).items():
        top = list(profile["own_time_us_per_run"].items())[:5]
        lines.append(f"where {name}'s time goes (us/run under cProfile): " + ", ".join(f"{g} {us}" for g, us in top))
    check = figures.get("check_scheduler_openai_agents")
    if check is not None:
        lines.append(f"check_scheduler(openai-agents, ci): {check['wall_s']} s wall (target < {CHECK_TARGET_S} s)")
    print("\n".join(lines), file=sys.stderr)


if __name__ == "__main__":
    main()
