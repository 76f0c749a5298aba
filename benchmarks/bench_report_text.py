"""The text report against the run it reports: does `harness run --format text` print a large run as
fast as it runs?

Prints one JSON object and writes it to benchmarks/results/bench_report_text.json. For N = 100, 1,000
and 10,000 calls in one batch under `parallel` (every call a search; three edits of one file race,
so the report has verdicts, a why line and a story), it measures CPU time (`time.process_time`, the
median of `--rounds`):

- `run_ms`: `run()` plus every oracle (what `harness run` computes before it prints);
- `text_ms`: `render_run` of that run and its verdicts onto a 120-column console writing to memory
  (what `harness run --format text` adds);
- `text_over_run`: their ratio; issue 27's target is at most 1 for 1,000 calls ("a 1,000-call run
  prints as fast as it runs"), and `text_us_per_call` stays flat as N grows.

Usage: python benchmarks/bench_report_text.py [--rounds R] [--max-n N]
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import statistics
import time
from typing import Any

from _figures import emit
from rich.console import Console

from harness import __version__, get_scheduler, run
from harness.model import Batch
from harness.oracles import check
from harness.report.run_text import render_run
from harness.scenario import Scenario
from harness.sim.kernel import Limits
from harness.world import World

SIZES = (100, 1_000, 10_000)
TARGET_N, TARGET_RATIO = 1_000, 1.0


def scenario(n: int) -> Scenario:
    calls = [(f"q{i:05d}", "web_search", {"query": f"error code {i}"}) for i in range(n - 3)]
    calls += [(f"e{i}", "patch", {"path": "/repo/config.json", "old": "1", "new": str(i + 2)}) for i in range(3)]
    world = World(cwd="/repo")
    world.populate(files=[("/repo/config.json", '{"a": 1}\n')])
    return Scenario(name=f"report-{n}", batches=(Batch.of(calls),), world=world.state(),
                    limits=Limits(time_bound_ms=600_000, event_budget=40 * n + 1_000))


def measure(n: int, rounds: int) -> dict[str, Any]:
    chosen = scenario(n)
    policy = get_scheduler("parallel")
    runs, texts = [], []
    for _ in range(rounds):
        start = time.process_time()
        result = run(chosen, policy, 1)
        verdicts = check(result)
        middle = time.process_time()
        console = Console(file=io.StringIO(), width=120, color_system=None, highlight=False, markup=False)
        render_run(result, console, version=__version__, verdicts=verdicts)
        end = time.process_time()
        runs.append(middle - start)
        texts.append(end - middle)
    run_s, text_s = statistics.median(runs), statistics.median(texts)
    return {"calls": n, "run_ms": round(run_s * 1000, 1), "text_ms": round(text_s * 1000, 1),
            "text_over_run": round(text_s / run_s, 3), "text_us_per_call": round(text_s / n * 1e6, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-n", type=int, default=SIZES[-1])
    args = parser.parse_args()
    points = [measure(n, args.rounds) for n in SIZES if n <= args.max_n]
    at_target = next(p for p in points if p["calls"] == TARGET_N)
    emit("bench_report_text", {
        "benchmark": "harness run --format text against run plus oracles, CPU time (median of rounds)",
        "harness_version": __version__,
        "python": platform.python_version(),
        "rounds": args.rounds,
        "load_average_1m": round(os.getloadavg()[0], 2),
        "points": points,
        "target_calls": TARGET_N,
        "target_text_over_run": TARGET_RATIO,
        "text_over_run_at_target": at_target["text_over_run"],
        "target_ratio": round(TARGET_RATIO / at_target["text_over_run"], 2),
    })


if __name__ == "__main__":
    main()
