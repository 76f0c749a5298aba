"""Reorder invariance (metamorphic): the same batch under different completion orders must give the
same final world and the same results, in model order.

Owns the label `order-dependent`. Unlike the other oracles it needs many runs: it runs the scheduler
once per seed with latency jitter (so completions reorder even when latencies are fixed) and compares
every run with the first. It steers nothing inside a run; it only chooses seeds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from harness.oracles.verdict import Verdict, Violation
from harness.run import RunResult, RunStatus, run
from harness.scenario.spec import Scenario
from harness.scheduling.context import Scheduler
from harness.sim.realtime import WallClockExceeded
from harness.world.state import diff

NAME = "reorder-invariance"
#: Latencies vary by up to 4x either way.
DEFAULT_JITTER = math.log(4)


def signature(result: RunResult) -> tuple[str, tuple[tuple[str, str, Any, str | None], ...]]:
    by_id = {r.call_id: r for r in result.results}
    rows = []
    for call in result.scenario.calls:
        r = by_id.get(call.id)
        rows.append((call.id, r.outcome.value, r.value, r.error) if r else (call.id, "missing", None, None))
    return result.final.digest(), tuple(rows)


def completion_order(result: RunResult) -> list[str]:
    return [e["call"] for e in result.trace if e["ev"] == "end" and not e.get("detached")]


def check(scenario: Scenario, scheduler: Scheduler, seeds: Iterable[int], *, jitter: float = DEFAULT_JITTER) -> Verdict:
    return judge(run(scenario, scheduler, seed, jitter=jitter) for seed in seeds)


def judge(results: Iterable[RunResult]) -> Verdict:
    """The verdict over jittered runs made elsewhere (an isolated child's), taken lazily: the first
    run that ends differently from the first completed one stops it."""
    baseline: RunResult | None = None
    orders: set[tuple[str, ...]] = set()
    runs = 0
    for result in results:
        seed = result.seed
        runs += 1
        if result.wall_clock_exceeded:  # the caller's real-time budget is spent: no more runs
            raise WallClockExceeded(result.error or "real time ran out")
        if result.status is not RunStatus.COMPLETED:
            continue  # the contract and liveness oracles judge runs that did not complete
        orders.add(tuple(completion_order(result)))
        if baseline is None:
            baseline = result
            continue
        if signature(result) != signature(baseline):
            base_rows = {row[0]: row for row in signature(baseline)[1]}
            changed = [row[0] for row in signature(result)[1] if base_rows[row[0]] != row]
            return Verdict.of(NAME, [Violation(
                "order-dependent",
                f"seeds {baseline.seed} and {seed} completed calls in different orders and ended differently",
                {"seeds": [baseline.seed, seed],
                 "completion_orders": [completion_order(baseline), completion_order(result)],
                 "results_differ": changed, "world_diff": diff(baseline.final, result.final)[:20]},
            )])
    return Verdict.of(NAME, [], note=f"{runs} runs, {len(orders)} distinct completion orders, all equivalent")
