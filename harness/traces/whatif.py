"""What-if on recorded turns: each turn replayed under each policy, latencies drawn from the learned
models, beside what production recorded; and the fidelity check of the policy production used.

Owns the replay and its figures. Every recorded turn is a one-batch scenario cut from the learned
scenario (`harness.traces.library`: its tools, its execution policy), run once per seed under each
scheduler and judged by every single-run oracle (`harness.oracles.check`). Per policy: the turn
makespans' p50/p95/p99, the saving against production (1 - the sum over turns of the mean replayed
makespan / the sum of the recorded ones), the share of turn runs with a violation and its labels, the
tool whose call ended last in the slowest 5% of turn runs (the one that bounds them), their critical
paths (`critical_path`: the chain of calls, each waiting for the one before it, that ends last) and the
worst turn, which `worst_run` runs again for its Gantt chart. The unit of work is one turn under one
scheduler on every seed (`replay_turn`, a pure function giving a `TurnRuns`), run here or on a Dask
cluster's workers (`harness.distribute.cluster`) and summed in turn order, so both give the same figures.
Fidelity: the replayed makespans under production's policy against the recorded ones, a two-sample KS
test (it reproduces when p >= `FIDELITY_ALPHA`) with the p50/p95 errors; per tool, the same test over
call durations names the tools that drift (p < `DRIFT_ALPHA`). A run is a pure function of the
scenario, scheduler and seed, so the figures are the same every time. scipy is imported by `fidelity`
only. It never reads trace files and never prints.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from harness.scenario.spec import Scenario
from harness.traces.records import Turn

if TYPE_CHECKING:
    from harness.distribute.cluster import Cluster
    from harness.model import CallResult
    from harness.run import RunResult

FIDELITY_ALPHA = 0.05
DRIFT_ALPHA = 0.01


@dataclass(frozen=True)
class PolicyOutcome:
    """One policy over every recorded turn and seed."""

    scheduler: str
    makespans_ms: tuple[int, ...]                # sorted, one per (turn, seed)
    mean_by_turn: tuple[float, ...]              # in turn order
    hazard_runs: int
    labels: tuple[tuple[str, int], ...]          # (label, turn runs), most common first
    bounding: tuple[tuple[str, int], ...]        # (tool, slow turn runs it ended last in), most first
    worst: tuple[int, int, int]                  # (turn number, seed, makespan ms)
    critical: tuple[tuple[str, int], ...]        # (tools of a critical path "a > b", slow turn runs), most first
    critical_time: tuple[tuple[str, float], ...]  # (tool, share of the slow runs' critical-path time), most first
    call_durations: dict[str, tuple[int, ...]]   # tool -> each replayed call's end - start

    @property
    def runs(self) -> int:
        return len(self.makespans_ms)

    def quantile(self, q: float) -> float:
        return _quantile(self.makespans_ms, q)


@dataclass(frozen=True)
class Fidelity:
    """How well replaying under production's policy reproduces the recorded makespans."""

    scheduler: str
    ks: float
    p_value: float
    errors: tuple[tuple[str, float], ...]         # ("p50", relative error of replayed vs recorded)
    drifting: tuple[tuple[str, float], ...]       # (tool, KS D of its call durations), worst first

    @property
    def reproduces(self) -> bool:
        return self.p_value >= FIDELITY_ALPHA


@dataclass(frozen=True)
class WhatIf:
    recorded_ms: tuple[float, ...]   # in turn order
    policies: tuple[PolicyOutcome, ...]
    seeds: tuple[int, ...]

    def saving(self, outcome: PolicyOutcome) -> float:
        """1 - (replayed time over all turns) / (recorded time over all turns)."""
        recorded = sum(self.recorded_ms)
        return 1 - sum(outcome.mean_by_turn) / recorded if recorded else 0.0


@dataclass(frozen=True)
class TurnRuns:
    """One recorded turn replayed under one scheduler on every seed: what `what_if` sums. A pure
    function of the scenario, the scheduler's name, the turn and the seeds, wherever it ran."""

    scheduler: str
    number: int
    # (makespan, turn, seed, tool that ended last, critical path, its time by tool), one per seed
    runs: tuple[tuple[int, int, int, str, str, tuple[tuple[str, int], ...]], ...]
    labels: tuple[tuple[str, ...], ...]          # each run's violation labels, sorted
    durations: tuple[tuple[str, int], ...]        # (tool, end - start) of each replayed call


def replay_turn(scenario: Scenario, task: tuple[str, int, tuple[int, ...]]) -> TurnRuns:
    """Turn `number` (1-based: a batch of `scenario`) of `task = (scheduler, number, seeds)` run alone
    on each seed and judged by every single-run oracle. The scheduler is built anew for the turn, so a
    scheduler that keeps state between runs gives the same figures wherever and in whatever order
    turns run."""
    from harness.oracles import check
    from harness.policies import get_scheduler
    from harness.run import run

    name, number, seeds = task
    scheduler = get_scheduler(name)
    one = replace(scenario, batches=(scenario.batches[number - 1],))
    tools = {call.id: call.name for call in one.batches[0].calls}
    runs = []
    labels = []
    durations = []
    for seed in seeds:
        result = run(one, scheduler, seed)
        (batch,) = result.batches
        last = max(batch.results, key=lambda r: (r.end_ms, r.call_id), default=None)
        chain = critical_path(batch.results)
        path = " > ".join(tools.get(r.call_id, "?") for r in chain) or "-"
        runs.append((batch.end_ms - batch.start_ms, number, seed, tools.get(last.call_id, "?") if last else "-", path,
                     tuple((tools.get(r.call_id, "?"), r.end_ms - r.start_ms) for r in chain)))
        durations += [(tools.get(r.call_id, "?"), r.end_ms - r.start_ms) for r in batch.results]
        labels.append(tuple(sorted({x.label for verdict in check(result) for x in verdict.violations})))
    return TurnRuns(name, number, tuple(runs), tuple(labels), tuple(durations))


def _replay_chunk(scenario: Scenario, tasks: list[tuple[str, int, tuple[int, ...]]]) -> list[TurnRuns]:
    return [replay_turn(scenario, task) for task in tasks]


def what_if(scenario: Scenario, turns: Sequence[Turn], schedulers: Sequence[str], seeds: Sequence[int],
            progress: Callable[[int, int], None] | None = None, cluster: Cluster | None = None) -> WhatIf:
    """Replay each batch of `scenario` (one per turn of `turns`, as `scenario_text` wrote them) alone,
    under each scheduler and seed; `progress(done, total)` hears after each turn. With `cluster` the
    turns run on its workers (`harness.distribute.cluster`) in chunks and come back in turn order: the
    figures are those of a run in this process."""
    if len(scenario.batches) != len(turns):
        raise ValueError(f"the scenario has {len(scenario.batches)} batches for {len(turns)} turns")
    seed_list = tuple(seeds)
    tasks = [(name, number, seed_list) for name in schedulers for number in range(1, len(scenario.batches) + 1)]
    total = len(tasks)
    if cluster is None:
        done: Iterator[list[TurnRuns]] = ([replay_turn(scenario, task)] for task in tasks)
    else:
        from harness.distribute.cluster import chunk_size

        size = chunk_size(total, cluster.workers, most=50)
        done = cluster.in_order(_replay_chunk, [tasks[i:i + size] for i in range(0, total, size)], scenario)
    by_scheduler: dict[str, list[TurnRuns]] = {name: [] for name in schedulers}
    finished = 0
    for chunk in done:
        for part in chunk:
            by_scheduler[part.scheduler].append(part)
        finished += len(chunk)
        if progress is not None:
            progress(finished, total)
    outcomes = tuple(_outcome(name, by_scheduler[name], len(seed_list)) for name in schedulers)
    return WhatIf(tuple(t.makespan_ms for t in turns), outcomes, seed_list)


def _outcome(name: str, parts: Sequence[TurnRuns], seeds: int) -> PolicyOutcome:
    """One policy's figures from its turns' runs (in turn order)."""
    spans = [run for part in parts for run in part.runs]
    labels: Counter[str] = Counter(label for part in parts for found in part.labels for label in found)
    hazards = sum(1 for part in parts for found in part.labels if found)
    durations: dict[str, list[int]] = {}
    for part in parts:
        for tool, ms in part.durations:
            durations.setdefault(tool, []).append(ms)
    means = tuple(sum(run[0] for run in part.runs) / seeds for part in parts)
    spans.sort(key=lambda s: (s[0], s[1], s[2]))
    slow = spans[-max(1, math.ceil(len(spans) * 0.05)):]
    bounding = Counter(s[3] for s in slow)
    critical = Counter(s[4] for s in slow)
    on_path: Counter[str] = Counter()
    for s in slow:
        for tool, ms in s[5]:
            on_path[tool] += ms
    path_ms = sum(on_path.values())
    shares = tuple(sorted(((t, ms / path_ms) for t, ms in on_path.items()), key=lambda kv: (-kv[1], kv[0]))) \
        if path_ms else ()
    worst = spans[-1]
    return PolicyOutcome(
        name, tuple(s[0] for s in spans), means, hazards,
        tuple(sorted(labels.items(), key=lambda kv: (-kv[1], kv[0]))),
        tuple(sorted(bounding.items(), key=lambda kv: (-kv[1], kv[0]))),
        (worst[1], worst[2], worst[0]), tuple(sorted(critical.items(), key=lambda kv: (-kv[1], kv[0]))), shares,
        {tool: tuple(sorted(v)) for tool, v in sorted(durations.items())})


def critical_path(results: Sequence[CallResult]) -> tuple[CallResult, ...]:
    """The calls that bound a batch, first to last: the call that ended last, and before it the call it
    waited for (the one that ended last at or before it started, when it did not start with the batch),
    and so on. Under a policy that starts every call at once it is the one slowest call; under a serial
    one, every call. Ties go to the greater call id, so the path is the same every time."""
    if not results:
        return ()
    begin = min(r.start_ms for r in results)
    current = max(results, key=lambda r: (r.end_ms, r.call_id))
    path, seen = [current], {current.call_id}
    while current.start_ms > begin:
        before = [r for r in results if r.end_ms <= current.start_ms and r.call_id not in seen]
        if not before:
            break
        current = max(before, key=lambda r: (r.end_ms, r.call_id))
        path.append(current)
        seen.add(current.call_id)
    return tuple(reversed(path))


def worst_run(scenario: Scenario, what: WhatIf, scheduler: str) -> RunResult:
    """The run of `scheduler`'s worst turn (its number and seed in `what`), again: a run is a pure
    function of scenario, scheduler and seed, so it is the very run the what-if measured."""
    from harness.policies import get_scheduler
    from harness.run import run

    outcome = next(o for o in what.policies if o.scheduler == scheduler)
    turn, seed, _ = outcome.worst
    return run(replace(scenario, batches=(scenario.batches[turn - 1],)), get_scheduler(scheduler), seed)


def fidelity(what: WhatIf, production: str, turns: Sequence[Turn], scenario: Scenario) -> Fidelity:
    """The fidelity of `production`'s replay (one of the policies run) against the recorded turns;
    `scenario` is the one replayed, whose batches name the tool each recorded call ran as (a tool
    split by an argument class runs as its class's tool)."""
    from scipy import stats

    outcome = next(o for o in what.policies if o.scheduler == production)
    recorded = sorted(what.recorded_ms)
    test = stats.ks_2samp(recorded, outcome.makespans_ms)
    errors = tuple((name, (outcome.quantile(q) - _quantile(recorded, q)) / _quantile(recorded, q))
                   for name, q in (("p50", 0.5), ("p95", 0.95)))
    by_tool: dict[str, list[float]] = {}
    for turn, batch in zip(turns, scenario.batches, strict=True):
        for call, replayed_call in zip(turn.calls, batch.calls, strict=True):
            by_tool.setdefault(replayed_call.name, []).append((call.end_ns - call.start_ns) / 1e6)
    drifting = []
    for tool, values in sorted(by_tool.items()):
        replayed = outcome.call_durations.get(tool, ())
        if len(values) >= 2 and replayed:
            tool_test = stats.ks_2samp(values, replayed)
            if tool_test.pvalue < DRIFT_ALPHA:
                drifting.append((tool, float(tool_test.statistic)))
    drifting.sort(key=lambda kv: (-kv[1], kv[0]))
    return Fidelity(production, float(test.statistic), float(test.pvalue), errors, tuple(drifting))


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]
