"""Exploration throughput on one core: random runs/s on config-clobber, and check_scheduler's Hypothesis
part in examples/s.

Prints one JSON object (and writes benchmarks/results/bench_explore.json). Rates are per CPU second
of this process (so per core, and less sensitive to neighbours than wall time), median of the rounds;
each comes with its target and the ratio (>= 1 meets it). The explorations use a scheduler that
passes (`serial`), so the whole budget runs instead of stopping at a first finding; each run is
checked by every oracle, as `harness explore` does. The Hypothesis part is check_scheduler's own
(generated batches over a world with aliases, PCT order per batch). Beside them, in the same rounds:
the raw SimPy serial+parallel pair of benchmarks/bench_run.py (the random rate's ratio to it, target
0.23), and Hypothesis generating the same strategy with no harness work (check_scheduler's CPU time
per example over its own, target <= 1.3). The Hypothesis figures are `--trios` measurements a round,
each the part, Hypothesis alone under the collector settings and Hypothesis home the part's search
runs in, and Hypothesis alone plain (as before; reported beside), back to back in turned order; an
example is a call of the test function in both (a batch the search tried before is not run again,
and `hypothesis_runs` says how many were run). And where a random run's time goes (`random_cost_breakdown_us`,
same rounds): `run()` alone on the same seeds, the oracles (`check`) on those runs, and the rest of the
exploration (planning, summarising, bookkeeping) as what is left of its time per run.

Usage: python benchmarks/bench_explore.py [--runs N] [--examples N] [--rounds R]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

from _figures import emit

import harness.testing.generated
from harness import __version__
from harness.explore.engine import explore
from harness.oracles import replays
from harness.policies import get_scheduler
from harness.scenario import find_scenario

RANDOM_TARGET = 3000.0  # random runs/s per core on config-clobber (issue 13)
HYPOTHESIS_TARGET = 500.0  # check_scheduler's Hypothesis examples/s (issue 13)
HYPOTHESIS_OVER_RAW_PAIR_TARGET = 0.038  # the same, as a ratio to the raw pair's rate (issue 27)
#: The random target as a share of the raw SimPy pair's rate measured beside it (issue 27): what the
#: target means on a machine of any speed.
RANDOM_OVER_RAW_PAIR_TARGET = 0.23
#: Or, if Hypothesis itself is the ceiling: check_scheduler's Hypothesis part at most this many times
#: the CPU time per example of Hypothesis generating the same strategy with no harness work (issue 27).
HYPOTHESIS_OVER_ENGINE_TARGET = 1.3


def _cpu(go: Callable[[], int]) -> tuple[float, int]:
    start = time.process_time()
    done = go()
    return time.process_time() - start, done


def _explore_rate(strategy: str, scheduler: str, runs: int) -> float:
    scenario = find_scenario("config-clobber")

    def go() -> int:
        exploration = explore(scenario, scheduler, strategy, runs=runs, seed=1, processes=1, shrink=False)
        assert exploration.found is None, f"{scheduler} should pass config-clobber"
        return exploration.runs

    seconds, done = _cpu(go)
    return done / seconds


def _random_parts_us(runs: int) -> tuple[float, float]:
    """CPU microseconds per run of what a random exploration of config-clobber under `serial` does
    with each run: `run()` on its seeds, then the oracles on those runs (the same heap settings)."""
    from harness.oracles import check
    from harness.run import run
    from harness.sim.collector import long_search

    scenario, policy = find_scenario("config-clobber"), get_scheduler("serial")
    with long_search():
        start = time.process_time()
        results = [run(scenario, policy, 1 + i) for i in range(runs)]
        ran = time.process_time() - start
        start = time.process_time()
        for result in results:
            check(result)
        checked = time.process_time() - start
    return 1e6 * ran / runs, 1e6 * checked / runs


def _raw_pair_rate(runs: int) -> float:
    """Raw SimPy serial+parallel pairs per CPU second (benchmarks/bench_run.py's reference, same latencies)."""
    from bench_run import bench_scenario, raw_simpy_pair

    from harness.run import run

    latencies = [r.end_ms - r.start_ms for r in run(bench_scenario(), get_scheduler("serial"), 1).results]

    def go() -> int:
        for _ in range(runs):
            raw_simpy_pair(latencies)
        return runs

    seconds, done = _cpu(go)
    return done / seconds


def _hypothesis_rate(examples: int) -> tuple[float, int, int, float, float]:
    """Examples/s of check_scheduler's Hypothesis part, counting the examples Hypothesis tried (the
    test function's calls, as `_hypothesis_engine_rate` counts them; a batch tried again is not run
    again), the distinct batches it ran, and the CPU microseconds per example spent in `run()` and in
    the oracles (`first_violation`)."""
    policy = get_scheduler("serial")
    ran = 0
    in_run = in_oracles = 0.0
    generated = harness.testing.generated
    real_run, real_first = generated.run, generated.first_violation

    def counting(*args: Any, **kwargs: Any) -> Any:
        nonlocal ran, in_run
        ran += 1
        start = time.process_time()
        try:
            return real_run(*args, **kwargs)
        finally:
            in_run += time.process_time() - start

    def judging(*args: Any, **kwargs: Any) -> Any:
        nonlocal in_oracles
        start = time.process_time()
        try:
            return real_first(*args, **kwargs)
        finally:
            in_oracles += time.process_time() - start

    generated.run, generated.first_violation = counting, judging  # type: ignore[assignment]
    # One check_scheduler call's cost, as the first in a session: no replay remembered from an earlier round.
    replays.forget()
    try:
        seconds, tried = _cpu(lambda: generated.explore_generated(policy, examples, 1).runs)
    finally:
        generated.run, generated.first_violation = real_run, real_first  # type: ignore[assignment]
    return tried / seconds, tried, ran, 1e6 * in_run / max(tried, 1), 1e6 * in_oracles / max(tried, 1)


def _hypothesis_engine_rate(examples: int, same_conditions: bool = True) -> float:
    """Examples/s of Hypothesis alone on the same strategy and settings, the test not run: the
    ceiling for the figure above (what generating and managing the examples costs by itself).
    `same_conditions`: under what check_scheduler's search runs in (`long_search`: the heap there
    before frozen, young collections less often; Hypothesis's home in a temporary directory), as
    the part above is measured; else as a plain Hypothesis search in this process (the reference
    before issue 27's second look: the collector settings alone make it 15-20% slower)."""
    from random import Random

    from hypothesis import HealthCheck, find, settings
    from hypothesis.errors import NoSuchExample

    from harness.explore.by_hypothesis import hypothesis_home_elsewhere
    from harness.sim.collector import long_search
    from harness.strategies import batches

    tried = 0

    def never(batch: object) -> bool:
        nonlocal tried
        tried += 1
        return False

    def go() -> int:
        with contextlib.suppress(NoSuchExample):  # `never` fails no example: the search runs to its end
            find(batches(max_size=5, paths=harness.testing.generated.GENERATED_PATHS), never, random=Random(1),
                 settings=settings(max_examples=examples, deadline=None, database=None,
                                   suppress_health_check=list(HealthCheck)))
        return tried

    with contextlib.ExitStack() as conditions:
        if same_conditions:  # as explore_generated sets them around its search
            conditions.enter_context(long_search())
            conditions.enter_context(hypothesis_home_elsewhere())
        seconds, done = _cpu(go)
    return done / seconds


def _hypothesis_trio(examples: int, turn: int) -> dict[str, float]:
    """check_scheduler's part, Hypothesis alone in the same conditions and Hypothesis alone plain,
    one after the other, the order turned by `turn` (no measurement always first or after the same one)."""
    figures: dict[str, float] = {}

    def part() -> None:
        rate, tried, ran, run_us, oracles_us = _hypothesis_rate(examples)
        figures.update(hypothesis=rate, hypothesis_examples=tried, hypothesis_runs=ran, hypothesis_run_us=run_us,
                       hypothesis_oracles_us=oracles_us)

    def engine() -> None:
        figures["hypothesis_engine"] = _hypothesis_engine_rate(examples)

    def plain() -> None:
        figures["hypothesis_engine_plain"] = _hypothesis_engine_rate(examples, same_conditions=False)

    steps = [part, engine, plain]
    for step in steps[turn % 3:] + steps[:turn % 3]:
        step()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3000)
    parser.add_argument("--examples", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--trios", type=int, default=3,
                        help="Hypothesis measurements per round (each: the part, alone, alone plain)")
    args = parser.parse_args()
    load = os.getloadavg()
    _explore_rate("random", "serial", 50)  # warm imports and caches
    _hypothesis_trio(50, 0)
    rates: dict[str, list[float]] = {"random_serial": [], "random_resource_keys": [], "pct_serial": [],
                                     "auto_serial": [], "raw_pair": [], "run_us": [], "oracles_us": []}
    trios: list[dict[str, float]] = []
    for round_ in range(args.rounds):
        rates["random_serial"].append(_explore_rate("random", "serial", args.runs))
        rates["random_resource_keys"].append(_explore_rate("random", "resource_keys", args.runs))
        rates["pct_serial"].append(_explore_rate("pct", "serial", args.runs))
        rates["auto_serial"].append(_explore_rate("auto", "serial", args.runs))
        # The Hypothesis part and its two references measured back to back, in turned order: a ratio
        # is made of rates measured seconds apart, in the same conditions.
        trios.extend(_hypothesis_trio(args.examples, round_ * args.trios + i) for i in range(args.trios))
        rates["raw_pair"].append(_raw_pair_rate(args.runs))
        run_us, oracles_us = _random_parts_us(args.runs)
        rates["run_us"].append(run_us)
        rates["oracles_us"].append(oracles_us)
    for key in trios[0]:
        rates[key] = [trio[key] for trio in trios]
    median = {key: statistics.median(values) for key, values in rates.items()}
    # The rest of a run or an example is worked out round by round (its parts measured minutes apart,
    # never across rounds), then the median.
    random_rest = statistics.median(1e6 / total - ran - judged for total, ran, judged in zip(
        rates["random_serial"], rates["run_us"], rates["oracles_us"], strict=True))
    hypothesis_rest = statistics.median(1e6 / t["hypothesis"] - t["hypothesis_run_us"] - t["hypothesis_oracles_us"]
                                        - 1e6 / t["hypothesis_engine"] for t in trios)
    examples_ran = int(median["hypothesis_examples"])
    figures = {
        "benchmark": "exploration throughput per core (CPU time), config-clobber; check_scheduler's Hypothesis part",
        "harness_version": __version__,
        "python": platform.python_version(),
        "rounds": args.rounds,
        "hypothesis_measurements": len(trios),
        "runs_per_round": args.runs,
        "random_runs_per_s": round(median["random_serial"], 1),
        "random_target": RANDOM_TARGET,
        "random_ratio": round(median["random_serial"] / RANDOM_TARGET, 3),
        "random_resource_keys_runs_per_s": round(median["random_resource_keys"], 1),
        "pct_runs_per_s": round(median["pct_serial"], 1),
        "auto_runs_per_s": round(median["auto_serial"], 1),
        "hypothesis_examples_per_s": round(median["hypothesis"], 1),
        "hypothesis_examples": examples_ran,
        "hypothesis_target": HYPOTHESIS_TARGET,
        "hypothesis_ratio": round(median["hypothesis"] / HYPOTHESIS_TARGET, 3),
        # Hypothesis by itself (same strategy and settings, no run): the most the figure above can reach.
        "hypothesis_engine_examples_per_s": round(median["hypothesis_engine"], 1),
        # Per round, then the median: the two rates of a ratio measured minutes apart, never days.
        "raw_pair_per_s": round(median["raw_pair"], 1),
        "random_over_raw_pair": round(statistics.median(
            r / p for r, p in zip(rates["random_serial"], rates["raw_pair"], strict=True)), 4),
        "random_over_raw_pair_target": RANDOM_OVER_RAW_PAIR_TARGET,
        # The examples/s target as a machine-free ratio (500/s against the raw pair's 13,000/s when it
        # was set): each round's Hypothesis measurements against that round's raw pair.
        "hypothesis_over_raw_pair": round(statistics.median(
            t["hypothesis"] / rates["raw_pair"][i // args.trios] for i, t in enumerate(trios)), 4),
        "hypothesis_over_raw_pair_target": HYPOTHESIS_OVER_RAW_PAIR_TARGET,
        "hypothesis_over_engine": round(statistics.median(t["hypothesis_engine"] / t["hypothesis"] for t in trios), 3),
        "hypothesis_over_engine_target": HYPOTHESIS_OVER_ENGINE_TARGET,
        # The same ratio against Hypothesis run plainly in this process (the collector as it is, no
        # frozen heap): the reference before issue 27's second look, kept to compare with.
        "hypothesis_engine_plain_examples_per_s": round(median["hypothesis_engine_plain"], 1),
        "hypothesis_over_engine_plain": round(statistics.median(
            t["hypothesis_engine_plain"] / t["hypothesis"] for t in trios), 3),
        # Batches run per search: an example whose batch was tried before in the search is not run again.
        "hypothesis_runs": int(median["hypothesis_runs"]),
        # Per random run (median of the rounds): run(), the oracles, and the rest of the exploration.
        "random_cost_breakdown_us": {
            "total": round(1e6 / median["random_serial"], 1),
            "run": round(median["run_us"], 1),
            "oracles": round(median["oracles_us"], 1),
            "rest": round(random_rest, 1),
        },
        # Per example of the Hypothesis part (medians): run(), the oracles, Hypothesis alone on the same
        # strategy, and the rest (the harness's other work per example, and Hypothesis' own beyond it).
        "hypothesis_cost_breakdown_us": {
            "total": round(1e6 / median["hypothesis"], 1),
            "run": round(median["hypothesis_run_us"], 1),
            "oracles": round(median["hypothesis_oracles_us"], 1),
            "hypothesis_alone": round(1e6 / median["hypothesis_engine"], 1),
            "rest": round(hypothesis_rest, 1),
        },
        "all_rounds": {key: [round(v, 1) for v in values] for key, values in rates.items()},
        "load_average_1m": round(load[0], 2),
    }
    emit("bench_explore", figures)


if __name__ == "__main__":
    main()
