"""Random, PCT and auto explorations: independent runs made from a plan, here or in other processes.

Owns the run plans (`RunPlan`: run `index` is random or PCT at some depth, with or without swarm
faults; `auto`'s rotation), making one planned run (`execute_plan`), the PCT entities and horizon
fixed before the runs, and `explore_planned`: the runs in run order, in this process, on a process
pool or on a Dask cluster (a worker sends back only what a run showed; the first run of each label
is made again here), its findings, PCT bound and scope. Runs are a pure function of (scenario,
scheduler, strategy, seed, run index), so the process count never changes the findings. It never
shrinks (`harness.explore.shrink`).
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from random import Random
from typing import TYPE_CHECKING, NamedTuple

from harness.distribute.pool import WorkerPool
from harness.explore import pct as pct_module
from harness.explore import scope
from harness.explore.findings import (
    Exploration,
    Finding,
    NondeterministicScheduler,
    add_started,
    check_limited,
    first_violation,
    labels_in,
    started_tools,
)
from harness.explore.swarm import declared_grace_ms, swarm_scenario
from harness.oracles import check
from harness.policies.registry import build_scheduler
from harness.run import RunResult, run
from harness.scenario.spec import Scenario
from harness.scheduling import Scheduler
from harness.sim.arbiter import FAULT, THREAD_PREFIX, TIME, Tape
from harness.sim.collector import long_search
from harness.sim.realtime import WallClockExceeded, wall_limit_per_run, watching_user_interrupts
from harness.sim.streams import derive_seed

if TYPE_CHECKING:
    from harness.distribute.cluster import Cluster

#: auto's rotation, one entry per run: (mode, PCT depth, swarm faults on).
AUTO_CYCLE: tuple[tuple[str, int, bool], ...] = (
    ("random", 0, False), ("pct", 1, False), ("pct", 2, False), ("pct", 3, False),
    ("random", 0, True), ("pct", 2, True),
)


@dataclass(frozen=True)
class RunPlan:
    """How run `index` of an exploration is made: `mode` random or pct, the run's seed, the PCT depth
    and whether swarm faults are switched on."""

    index: int
    mode: str
    seed: int
    depth: int
    swarm: bool

    @property
    def describe(self) -> str:
        text = "random" if self.mode == "random" else f"pct(d={self.depth})"
        return text + ("+swarm" if self.swarm else "")


def policy_of(scheduler: str | Scheduler, import_timeout_s: float | None) -> Scheduler:
    """The scheduler instance; a named one is imported and built under the import limit, before any
    run's watchdog (a runtime's import is not a run's hang; a constructor that never returns is
    still stopped)."""
    if not isinstance(scheduler, str):
        return scheduler
    return build_scheduler(scheduler, import_timeout_s)


def plans(strategy: str, runs: int, seed: int, depth: int, swarm: bool) -> list[RunPlan]:
    """The run plans of a random, pct or auto exploration, in run order."""
    if strategy == "auto":
        return [RunPlan(i, mode, seed + i, d, on) for i in range(runs)
                for mode, d, on in (AUTO_CYCLE[i % len(AUTO_CYCLE)],)]
    return [RunPlan(i, strategy, seed + i, depth if strategy == "pct" else 0, swarm) for i in range(runs)]


class _Outcome(NamedTuple):
    """What one planned run showed, small enough to send back from a worker process. A named tuple,
    not a frozen dataclass: one is made per run, and a tuple is built in C rather than field by field."""

    run_index: int
    violation: str | None
    timers: tuple[str, ...]
    steps: int
    kinds: tuple[str, ...]
    faults: int
    limited: bool
    #: Every label the run violated (`violation` is the first), for explorations that keep going.
    labels: tuple[str, ...] = ()
    #: Calls started through the scheduler, by tool name.
    started: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class Job:
    """What every run of a planned exploration shares, small enough to send to a worker process."""

    scenario: Scenario
    scheduler: str | Scheduler
    entities: tuple[str, ...]
    horizon: int
    seed: int
    kinds: tuple[str, ...]
    labels: tuple[str, ...] | None = None
    #: Real seconds per run in a worker process (its own SIGALRM watchdog; 0: none).
    wall_timeout_s: float = 0.0
    #: Real seconds a worker process may take to import and build a named scheduler (None: 600 s).
    import_timeout_s: float | None = None


def entities(scenario: Scenario, policy: Scheduler, seed: int) -> tuple[str, ...]:
    """The entities PCT gives priorities to: the calls of the schedule closest to model order (the
    scenario's, or for a loop scenario those its model emits), and the threads a thread-bridged
    executor runs in it (`@thread:NNN`, whose switches are choices too); entities a run brings
    beyond them get the lowest priority."""
    result = run(scenario, policy, seed, chooser=Tape())
    threads = [entry for entry in dict.fromkeys(result.tape or ()) if entry.startswith(THREAD_PREFIX)]
    return (*(c.id for c in result.scenario.calls), *threads)


_NO_KINDS: tuple[str, ...] = ()


def execute_plan(job: Job, policy: Scheduler, plan: RunPlan) -> tuple[RunResult, tuple[str, ...]]:
    """Run one planned run; returns the result and the swarm kinds that were on."""
    current, kinds = job.scenario, _NO_KINDS
    if plan.swarm:
        current, kinds = swarm_scenario(job.scenario, Random(derive_seed(job.seed, "swarm", "", plan.index)),
                                        job.kinds, grace_ms=declared_grace_ms(policy))
    if plan.mode == "random":
        return run(current, policy, plan.seed), kinds
    rng = Random(derive_seed(job.seed, "pct", "", plan.index))
    return run(current, policy, plan.seed, chooser=pct_module.PCT(rng, job.entities, job.horizon, plan.depth)), kinds


def _summarise(job: Job, plan: RunPlan, result: RunResult, kinds: tuple[str, ...]) -> _Outcome:
    verdicts = check(result)
    # Most runs pass every oracle and (random ones) made no decision: nothing to gather for those.
    labels = labels_in(verdicts, job.labels) if any(v.violations for v in verdicts) else ()
    decisions = result.decisions
    timers = sorted({p for d in decisions if d.chosen == TIME for p in d.fired}) if decisions else ()
    return _Outcome(plan.index, labels[0] if labels else None, tuple(timers), len(result.tape or ()), kinds,
                    sum(1 for d in decisions if d.chosen.startswith(FAULT)) if decisions else 0,
                    check_limited(verdicts), labels, tuple(sorted(started_tools(result).items())))


def _run_chunk(job: Job, chunk: list[RunPlan]) -> list[_Outcome]:
    """A worker process's share: each run under its own watchdog, as in the parent."""
    try:
        with wall_limit_per_run(job.wall_timeout_s), watching_user_interrupts(), long_search():
            policy = policy_of(job.scheduler, job.import_timeout_s)  # before the chunk's first run's timer
            return [_summarise(job, plan, *execute_plan(job, policy, plan)) for plan in chunk]
    except WallClockExceeded as exc:  # sent back without the run (a world does not cross processes)
        raise type(exc)(str(exc)) from None


def _run_chunk_once(job: Job, chunk: list[RunPlan]) -> Iterator[list[_Outcome]]:
    yield _run_chunk(job, chunk)


def explore_planned(exploration: Exploration, scenario: Scenario, scheduler: str | Scheduler, policy: Scheduler,
                    strategy: str, runs: int, seed: int, depth: int, swarm: bool, kinds: tuple[str, ...],
                    keep_going: bool, on_progress: Callable[[int, int], None] | None, processes: int,
                    labels: tuple[str, ...] | None, wall_timeout_s: float = 0.0, cluster: Cluster | None = None,
                    import_timeout_s: float | None = None) -> None:
    """Make the planned runs of a random, pct or auto exploration into `exploration`: its runs, its
    findings (the first run of each label), its PCT bound and its scope."""
    calls = entities(scenario, policy, seed)
    todo = plans(strategy, runs, seed, depth, swarm)
    ordered = any(p.mode == "pct" for p in todo)
    # Time is one more contender for PCT. The horizon (steps per run) is fixed before the runs, from
    # the schedule closest to model order, doubled for slack, so no run depends on another's.
    horizon = max(2 * len(run(scenario, policy, seed, chooser=Tape()).tape or ()), depth) if ordered else 0
    elsewhere = processes > 1 or cluster is not None  # runs made in other processes
    job = Job(scenario, scheduler if elsewhere and isinstance(scheduler, str) else policy, (*calls, TIME),
               horizon, seed, kinds, labels, wall_timeout_s, import_timeout_s)
    if elsewhere and not isinstance(scheduler, str):
        try:
            pickle.dumps(policy)
        except Exception as exc:
            raise ValueError(f"processes > 1 needs a scheduler given by name (module:attr) or picklable: {exc}") \
                from None
    seen: dict[str, _Outcome] = {}  # label -> the first run that showed it
    kept: dict[int, tuple[RunResult, tuple[str, ...]]] = {}
    timers: set[str] = set()
    faults_seen: set[str] = set()
    max_steps = 0
    done = 0
    limited = 0
    for outcomes in _chunks(job, todo, processes, cluster):
        stop = False
        for outcome, ran in outcomes:
            limited += outcome.limited
            done = outcome.run_index + 1
            timers.update(outcome.timers)
            faults_seen.update(outcome.kinds)
            max_steps = max(max_steps, outcome.steps)
            add_started(exploration, dict(outcome.started))
            # Keeping going, every label of a run counts (a label that always comes second, behind
            # another oracle's, would otherwise never be reported); else the run's first.
            first = [label for label in (outcome.labels if keep_going else outcome.labels[:1]) if label not in seen]
            for label in first:
                seen[label] = outcome
            if first and ran is not None:
                kept[outcome.run_index] = ran  # only a run that is the first to show a label becomes a finding
            if outcome.violation is not None and not keep_going:
                stop = True
                break
        if on_progress:
            on_progress(done, runs)
        if stop:
            break
    exploration.runs = done
    for label, outcome in sorted(seen.items(), key=lambda item: (item[1].run_index, item[1].labels.index(item[0]))):
        plan = todo[outcome.run_index]
        # Runs made in worker processes are made again here (only what they showed came back).
        result, on = kept.get(outcome.run_index) or execute_plan(job, policy, plan)
        kept[outcome.run_index] = (result, on)
        found = first_violation(result, label)
        if found is None:
            raise NondeterministicScheduler(
                f"run {outcome.run_index + 1} ({plan.describe}, seed {plan.seed}) showed {label} in a worker "
                "process but not when made again here: the scheduler depends on something outside the seed")
        exploration.findings.append(Finding(*found, result, outcome.run_index, on, plan.describe))
    pct_runs = [p for p in todo[:done] if p.mode == "pct"]
    if strategy == "pct":
        per_run = pct_module.bound(len(calls) + 1, horizon, depth)
        threads = sum(1 for entity in calls if entity.startswith(THREAD_PREFIX))
        exploration.bound = {"depth": depth, "calls": len(calls) - threads, "threads": threads,
                             "entities": len(calls) + 1, "horizon": horizon,
                             "max_steps_seen": max_steps, "per_run": per_run,
                             "miss_probability": pct_module.miss_bound(per_run, done)}
    exploration.scope = scope.planned_scope(
        random_runs=done - len(pct_runs), pct_runs=len(pct_runs), seeds=[todo[0].seed, todo[done - 1].seed],
        timers=sorted(timers), scenario=scenario, swarm=kinds if swarm or strategy == "auto" else (),
        swarm_seen=sorted(faults_seen), depths=sorted({p.depth for p in pct_runs}), horizon=horizon,
        max_steps=max_steps, limited=limited,
        mix=[RunPlan(0, mode, 0, d, on).describe for mode, d, on in AUTO_CYCLE] if strategy == "auto" else None)
    exploration.scope["timers_chosen"] = sorted(timers)  # timers order-first runs fired before a waiting step


_Ran = tuple[RunResult, tuple[str, ...]]


def _chunks(job: Job, todo: list[RunPlan], processes: int, cluster: Cluster | None = None
            ) -> Iterator[list[tuple[_Outcome, _Ran | None]]]:
    """Outcomes chunk by chunk, in run order (a pool or a cluster works ahead; results are consumed
    in order), each with its run when it was made in this process."""
    if cluster is not None:
        from harness.distribute.cluster import chunk_size

        # Larger chunks than a local pool's (a task is a network round trip), still small enough that
        # stopping at an early finding cancels most of the work.
        size = chunk_size(len(todo), cluster.workers, least=8, most=1000)
        for outcomes in cluster.in_order(_run_chunk, [todo[i:i + size] for i in range(0, len(todo), size)], job):
            yield [(outcome, None) for outcome in outcomes]
        return
    if processes == 1:  # a chunk per run, so that progress and an early stop come run by run
        policy = policy_of(job.scheduler, job.import_timeout_s)
        for plan in todo:
            made = execute_plan(job, policy, plan)
            yield [(_summarise(job, plan, *made), made)]
        return
    chunks = [todo[i:i + 8] for i in range(0, len(todo), 8)]
    # Workers that share no lock (harness.distribute.pool): one stopped mid-run cannot hang the rest.
    with WorkerPool(functools.partial(_run_chunk_once, job), min(processes, len(chunks))) as pool:
        for results in pool.in_order(chunks):
            for outcomes in results:
                yield [(outcome, None) for outcome in outcomes]

