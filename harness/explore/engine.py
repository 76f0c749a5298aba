"""The exploration engine: run a strategy until a violation, shrink it, keep it, and say exactly what
was covered.

Owns `explore()`. Strategies:
- `random`: latencies drawn from the scenario's distributions, seed after seed; the only one whose
  latency statistics mean anything; timers fire at their drawn times;
- `pct`: order-first, priorities with d-1 change points over the calls *and* time (a pending timer
  is one more contender); it reports its per-run and overall bounds;
- `exhaustive`: every order of steps and timers up to equivalence, and every choice of up to
  `fault_bound` injected faults, up to the run bound; it says when the space was exhausted;
- `hypothesis`: Hypothesis draws which calls to keep and the order choices and shrinks them itself;
- `auto` (the default): one budget shared by random latencies, PCT at depths 1-3 and swarm faults,
  so one exploration catches what any single strategy would.

Every exploration carries a `scope`: which latencies, timers, faults and swarm kinds its runs
covered and, for claims (a PCT bound, an exhausted space), what the claim covers. A finding is shrunk
— fewer calls, then fewer deviations from model order — and can be saved as a reproducer. Runs are a
pure function of (scenario, scheduler, strategy, seed, run index), and outcomes are used in run order,
so `processes=N` or a Dask `cluster` gives the same findings as one process. It never prints.
"""

from __future__ import annotations

import contextlib
import functools
import pickle
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field, replace
from random import Random
from typing import TYPE_CHECKING, Any

from harness.distribute.workers import pool_context, processes_for
from harness.explore import crew_shrink, scope
from harness.explore import pct as pct_module
from harness.explore.exhaustive import ExhaustiveSearch
from harness.explore.footprints import footprints
from harness.explore.swarm import KINDS as SWARM_KINDS
from harness.explore.swarm import POLICY_KINDS, declared_grace_ms, swarm_scenario
from harness.model import Batch
from harness.oracles import LABELS, Verdict, check
from harness.policies.registry import build_scheduler
from harness.run import RunResult, run, scheduler_label
from harness.scenario.spec import Scenario
from harness.scheduling import Scheduler
from harness.sim.arbiter import FAULT, NO_FAULT, THREAD_PREFIX, TIME, Tape
from harness.sim.collector import long_search
from harness.sim.realtime import (
    WallClockExceeded,
    resolve_import_timeout,
    resolve_wall_timeout,
    wall_limit_per_run,
    watching_user_interrupts,
)
from harness.sim.streams import derive_seed

if TYPE_CHECKING:
    from harness.distribute.cluster import Cluster

STRATEGIES = ("auto", "random", "pct", "exhaustive", "hypothesis")

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


@dataclass(frozen=True)
class Finding:
    label: str
    oracle: str
    message: str
    witness: dict[str, Any]
    result: RunResult
    run_index: int
    swarm: tuple[str, ...] = ()
    #: How the run that found it was made (e.g. "pct(d=2)", "random+swarm", "exhaustive").
    found_by: str = ""


@dataclass
class Exploration:
    strategy: str
    scenario: str
    scheduler: str
    runs: int = 0
    findings: list[Finding] = field(default_factory=list)
    #: Calls started through the scheduler, by tool name, summed over the runs (what was exercised).
    started: dict[str, int] = field(default_factory=dict)
    bound: dict[str, Any] | None = None
    exhausted: bool | None = None
    classes: int | None = None
    shrunk: Finding | None = None
    #: What the runs covered, and what any claim covers (see the module docstring).
    scope: dict[str, Any] = field(default_factory=dict)

    @property
    def found(self) -> Finding | None:
        return self.findings[0] if self.findings else None

    @property
    def runs_to_failure(self) -> int | None:
        return self.found.run_index + 1 if self.found else None

    @property
    def proven(self) -> bool:
        """True only when exhaustive search ran every class within its bound, found nothing, and no
        oracle had to limit its check on any run."""
        return (self.strategy == "exhaustive" and bool(self.exhausted) and not self.findings
                and not self.scope.get("limited_checks"))


class NondeterministicScheduler(Exception):
    """A run did not repeat when run again from the same plan: the scheduler (or a tool) depends
    on something outside the seed."""


def first_violation(result: RunResult, label: str | Collection[str] | None = None
                    ) -> tuple[str, str, str, dict[str, Any]] | None:
    """(label, oracle, message, witness) of the first violation (with `label`, or one of the labels,
    if given)."""
    return _first_in(check(result), label)


def _first_in(verdicts: Sequence[Verdict], label: str | Collection[str] | None
              ) -> tuple[str, str, str, dict[str, Any]] | None:
    wanted = (label,) if isinstance(label, str) else label
    for verdict in verdicts:
        for violation in verdict.violations:
            if wanted is None or violation.label in wanted:
                return violation.label, verdict.oracle, violation.message, dict(violation.witness)
    return None


def _labels_in(verdicts: Sequence[Verdict], label: Collection[str] | None) -> tuple[str, ...]:
    """Every distinct label of the verdicts (those in `label`, if given), in report order."""
    found = (v.label for verdict in verdicts for v in verdict.violations)
    return tuple(dict.fromkeys(name for name in found if label is None or name in label))


def started_tools(result: RunResult) -> dict[str, int]:
    """How many calls of each tool the run started through the scheduler (first attempts only: a
    retry exercises the same call again)."""
    counts: dict[str, int] = {}
    for event in result.trace:
        if event.get("ev") == "start" and event.get("attempt", 1) == 1:
            tool = str(event.get("tool"))
            counts[tool] = counts.get(tool, 0) + 1
    return counts


def add_started(exploration: Exploration, counts: dict[str, int]) -> None:
    for tool, count in counts.items():
        exploration.started[tool] = exploration.started.get(tool, 0) + count


def _limited(verdicts: Sequence[Verdict]) -> bool:
    """Whether an oracle had to limit its check (it then passes what it could not establish)."""
    return any(v.note.startswith("check limited") for v in verdicts)


def explore(scenario: Scenario, scheduler: str | Scheduler, strategy: str = "auto", *, runs: int = 100,
            seed: int = 1, depth: int = 3, swarm: bool = False, keep_going: bool = False, shrink: bool = True,
            on_progress: Callable[[int, int], None] | None = None,
            swarm_kinds: tuple[str, ...] | None = None, fault_bound: int = 1, processes: int | None = 1,
            labels: Collection[str] | None = None, wall_timeout_s: float | None = None,
            cluster: Cluster | None = None, import_timeout_s: float | None = None) -> Exploration:
    """Explore `scenario` under `scheduler` (a name `get_scheduler` accepts, or an instance).

    `swarm_kinds` (default: every kind with `--swarm`, the kinds a policy must survive in `auto`)
    limits the faults swarm runs may switch on. `fault_bound` is exhaustive's limit on injected
    faults per run. `processes` > 1 runs random, pct and auto runs on a process pool, and `cluster` on
    a Dask cluster, with the same result as one process (the scheduler must then be a name, or
    picklable); None means every core, but one process for fewer than
    harness.distribute.workers.AUTO_POOL_MIN_RUNS runs. `labels` restricts
    what counts as a finding to violations with those labels.

    `wall_timeout_s` is the real time each run may take (0: no limit; None: the limit already in
    force, else 60 s; a SIGALRM timer, so on the main thread of Unix only, worker processes
    included): a scheduler that spins in Python without yielding makes `explore` raise
    `WallClockExceeded` (carrying the hung run) at once instead of hanging, shrinking or replaying
    it. Importing and building a named scheduler (here and in each worker process, before its first
    run) is not counted: it has its own limit, `import_timeout_s` (None: 600 s; 0: none), and
    raises `ImportTimeout` when it runs out."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; valid: {', '.join(STRATEGIES)}")
    processes = processes_for(processes, runs)
    if fault_bound < 0 or runs < 1 or depth < 1:
        raise ValueError("runs, depth and processes must be >= 1 and fault_bound >= 0")
    unknown = sorted(set(labels or ()) - set(LABELS))
    if unknown:
        raise ValueError(f"unknown label {unknown[0]!r}; valid: {', '.join(LABELS)}")
    seconds = resolve_wall_timeout(wall_timeout_s)
    # Thousands of small runs: the heap already there frozen, young collections less often (see
    # harness.sim.collector.long_search): measured, about 8% of a random exploration.
    with wall_limit_per_run(seconds), watching_user_interrupts(), long_search():
        return _explore(scenario, scheduler, strategy, runs, seed, depth, swarm, keep_going, shrink, on_progress,
                        swarm_kinds, fault_bound, processes, labels, seconds, cluster,
                        resolve_import_timeout(import_timeout_s))


def _explore(scenario: Scenario, scheduler: str | Scheduler, strategy: str, runs: int, seed: int, depth: int,
             swarm: bool, keep_going: bool, shrink: bool, on_progress: Callable[[int, int], None] | None,
             swarm_kinds: tuple[str, ...] | None, fault_bound: int, processes: int,
             labels: Collection[str] | None, wall_timeout_s: float, cluster: Cluster | None = None,
             import_timeout_s: float | None = None) -> Exploration:
    policy = _build(scheduler, import_timeout_s)
    exploration = Exploration(strategy, scenario.name,
                              scheduler if isinstance(scheduler, str) else scheduler_label(policy)[0])
    kinds = swarm_kinds if swarm_kinds is not None else (POLICY_KINDS if strategy == "auto" else SWARM_KINDS)
    wanted = tuple(sorted(labels)) if labels else None
    if strategy == "hypothesis":
        _hypothesis(exploration, scenario, policy, runs, seed, wanted)
    elif strategy == "exhaustive":
        _exhaustive(exploration, scenario, policy, runs, seed, fault_bound, keep_going, on_progress, wanted)
    else:
        _planned(exploration, scenario, scheduler, policy, strategy, runs, seed, depth, swarm, kinds, keep_going,
                 on_progress, processes, wanted, wall_timeout_s, cluster, import_timeout_s)
    if wanted is not None:
        exploration.scope["labels"] = list(wanted)
    if exploration.found is not None and shrink:
        exploration.shrunk = shrink_finding(exploration.found, policy, seed, depth, fault_bound=fault_bound)
    return exploration


def _build(scheduler: str | Scheduler, import_timeout_s: float | None) -> Scheduler:
    """The scheduler instance; a named one is imported and built under the import limit, before any
    run's watchdog (a runtime's import is not a run's hang; a constructor that never returns is
    still stopped)."""
    if not isinstance(scheduler, str):
        return scheduler
    return build_scheduler(scheduler, import_timeout_s)


# -- random, pct and auto: independent runs from a plan --------------------------------------------


def plans(strategy: str, runs: int, seed: int, depth: int, swarm: bool) -> list[RunPlan]:
    """The run plans of a random, pct or auto exploration, in run order."""
    if strategy == "auto":
        return [RunPlan(i, mode, seed + i, d, on) for i in range(runs)
                for mode, d, on in (AUTO_CYCLE[i % len(AUTO_CYCLE)],)]
    return [RunPlan(i, strategy, seed + i, depth if strategy == "pct" else 0, swarm) for i in range(runs)]


@dataclass(frozen=True)
class _Outcome:
    """What one planned run showed, small enough to send back from a worker process."""

    index: int
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
class _Job:
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


def _entities(scenario: Scenario, policy: Scheduler, seed: int) -> tuple[str, ...]:
    """The entities PCT gives priorities to: the calls of the schedule closest to model order (the
    scenario's, or for a loop scenario those its model emits), and the threads a thread-bridged
    executor runs in it (`@thread:NNN`, whose switches are choices too); entities a run brings
    beyond them get the lowest priority."""
    result = run(scenario, policy, seed, chooser=Tape())
    threads = [entry for entry in dict.fromkeys(result.tape or ()) if entry.startswith(THREAD_PREFIX)]
    return (*(c.id for c in result.scenario.calls), *threads)


def execute_plan(job: _Job, policy: Scheduler, plan: RunPlan) -> tuple[RunResult, tuple[str, ...]]:
    """Run one planned run; returns the result and the swarm kinds that were on."""
    current, kinds = job.scenario, tuple[str, ...]()
    if plan.swarm:
        current, kinds = swarm_scenario(job.scenario, Random(derive_seed(job.seed, "swarm", "", plan.index)),
                                        job.kinds, grace_ms=declared_grace_ms(policy))
    if plan.mode == "random":
        return run(current, policy, plan.seed), kinds
    rng = Random(derive_seed(job.seed, "pct", "", plan.index))
    return run(current, policy, plan.seed, chooser=pct_module.PCT(rng, job.entities, job.horizon, plan.depth)), kinds


def _summarise(job: _Job, plan: RunPlan, result: RunResult, kinds: tuple[str, ...]) -> _Outcome:
    verdicts = check(result)
    labels = _labels_in(verdicts, job.labels)
    timers = sorted({p for d in result.decisions if d.chosen == TIME for p in d.fired})
    return _Outcome(plan.index, labels[0] if labels else None, tuple(timers), len(result.tape or ()), kinds,
                    sum(1 for d in result.decisions if d.chosen.startswith(FAULT)), _limited(verdicts), labels,
                    tuple(sorted(started_tools(result).items())))


def _run_chunk(job: _Job, chunk: list[RunPlan]) -> list[_Outcome]:
    """A worker process's share: each run under its own watchdog, as in the parent."""
    try:
        with wall_limit_per_run(job.wall_timeout_s), watching_user_interrupts(), long_search():
            policy = _build(job.scheduler, job.import_timeout_s)  # before the chunk's first run's timer
            return [_summarise(job, plan, *execute_plan(job, policy, plan)) for plan in chunk]
    except WallClockExceeded as exc:  # sent back without the run (a world does not cross processes)
        raise type(exc)(str(exc)) from None


def _run_chunk_star(args: tuple[_Job, list[RunPlan]]) -> list[_Outcome]:
    return _run_chunk(*args)


def _planned(exploration: Exploration, scenario: Scenario, scheduler: str | Scheduler, policy: Scheduler,
             strategy: str, runs: int, seed: int, depth: int, swarm: bool, kinds: tuple[str, ...], keep_going: bool,
             on_progress: Callable[[int, int], None] | None, processes: int, labels: tuple[str, ...] | None,
             wall_timeout_s: float = 0.0, cluster: Cluster | None = None,
             import_timeout_s: float | None = None) -> None:
    calls = _entities(scenario, policy, seed)
    todo = plans(strategy, runs, seed, depth, swarm)
    ordered = any(p.mode == "pct" for p in todo)
    # Time is one more contender for PCT. The horizon (steps per run) is fixed before the runs, from
    # the schedule closest to model order, doubled for slack, so no run depends on another's.
    horizon = max(2 * len(run(scenario, policy, seed, chooser=Tape()).tape or ()), depth) if ordered else 0
    elsewhere = processes > 1 or cluster is not None  # runs made in other processes
    job = _Job(scenario, scheduler if elsewhere and isinstance(scheduler, str) else policy, (*calls, TIME),
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
            done = outcome.index + 1
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
                kept[outcome.index] = ran  # only a run that is the first to show a label becomes a finding
            if outcome.violation is not None and not keep_going:
                stop = True
                break
        if on_progress:
            on_progress(done, runs)
        if stop:
            break
    exploration.runs = done
    for label, outcome in sorted(seen.items(), key=lambda item: (item[1].index, item[1].labels.index(item[0]))):
        plan = todo[outcome.index]
        # Runs made in worker processes are made again here (only what they showed came back).
        result, on = kept.get(outcome.index) or execute_plan(job, policy, plan)
        kept[outcome.index] = (result, on)
        found = first_violation(result, label)
        if found is None:
            raise NondeterministicScheduler(
                f"run {outcome.index + 1} ({plan.describe}, seed {plan.seed}) showed {label} in a worker "
                "process but not when made again here: the scheduler depends on something outside the seed")
        exploration.findings.append(Finding(*found, result, outcome.index, on, plan.describe))
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


def _chunks(job: _Job, todo: list[RunPlan], processes: int, cluster: Cluster | None = None
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
    size = 8 if processes > 1 else 1
    chunks = [todo[i:i + size] for i in range(0, len(todo), size)]
    if processes == 1:
        policy = _build(job.scheduler, job.import_timeout_s)
        for chunk in chunks:
            ran = [(plan, execute_plan(job, policy, plan)) for plan in chunk]
            yield [(_summarise(job, plan, *made), made) for plan, made in ran]
        return
    with pool_context().Pool(min(processes, len(chunks))) as pool:
        for outcomes in pool.imap(_run_chunk_star, [(job, chunk) for chunk in chunks]):
            yield [(outcome, None) for outcome in outcomes]


# -- exhaustive -------------------------------------------------------------------------------------


def _exhaustive(exploration: Exploration, scenario: Scenario, policy: Scheduler, runs: int, seed: int,
                fault_bound: int, keep_going: bool, on_progress: Callable[[int, int], None] | None,
                labels: tuple[str, ...] | None) -> None:
    prints = footprints(scenario)
    search = ExhaustiveSearch(lambda chooser: run(scenario, policy, seed, chooser=chooser), prints, runs,
                              fault_bound)
    seen: set[str] = set()
    timers: set[str] = set()
    decision_points: set[str] = set()
    limited = 0
    hung: set[str] = set()
    for index, step in enumerate(search):
        exploration.runs = index + 1
        if on_progress:
            on_progress(index + 1, runs)
        result = step.result
        timers.update(p for d in result.decisions if d.chosen == TIME for p in d.fired)
        decision_points.update(d.chosen.removeprefix(FAULT).removeprefix(NO_FAULT) for d in result.decisions
                               if d.chosen.startswith((FAULT, NO_FAULT)))
        hung.update(scope.hung_calls(result))
        if not step.counted:
            continue
        add_started(exploration, started_tools(result))
        verdicts = check(result)
        limited += _limited(verdicts)
        new = [label for label in _labels_in(verdicts, labels)[:None if keep_going else 1] if label not in seen]
        for label in new:
            seen.add(label)
            found = _first_in(verdicts, (label,))
            assert found is not None
            exploration.findings.append(Finding(*found, result, index, (), "exhaustive"))
        if new and not keep_going:
            break
    exploration.exhausted, exploration.classes = search.exhausted, search.classes
    exploration.scope = scope.exhaustive_scope(
        runs=exploration.runs, bound=runs, seed=seed, scenario=scenario, timers=sorted(timers),
        decision_points=sorted(decision_points), fault_bound=fault_bound, classes=search.classes,
        exhausted=search.exhausted, found=bool(exploration.findings), limited=limited, hung=sorted(hung),
        labels=labels)


# -- shrinking ---------------------------------------------------------------------------------------


def without_call(scenario: Scenario, call_id: str) -> Scenario | None:
    """The scenario minus one call (None if nothing would be left)."""
    batches = []
    for batch in scenario.batches:
        kept = [c for c in batch if c.id != call_id]
        if kept:
            batches.append(Batch.of([(c.id, c.name, c.arguments) for c in kept], batch.label))
    if not batches:
        return None
    depends = {k: tuple(d for d in v if d != call_id) for k, v in scenario.depends_on.items() if k != call_id}
    return replace(scenario, batches=tuple(batches), depends_on=depends,
                   args_from={k: v for k, v in scenario.args_from.items() if k != call_id},
                   call_latency={k: v for k, v in scenario.call_latency.items() if k != call_id},
                   call_failures={k: v for k, v in scenario.call_failures.items() if k != call_id})


class ShrinkMemo:
    """What the runs made while shrinking showed, shared by the findings of one exploration.

    Shrinking a second label of a scenario makes mostly the runs shrinking the first made (the same
    smaller scenarios, the same plans): their labels are kept here, so a run known not to show the
    wanted label is skipped and one known to show it is made once more for its result. Keys name the
    scenario a finding's run started from (the swarm faults of its run change it), the calls kept, how
    it was found and the plan: a memo must only be shared by findings of one scenario, seed and policy."""

    def __init__(self) -> None:
        self._labels: dict[tuple[Any, ...], tuple[str, ...]] = {}
        self._shape: dict[tuple[Any, ...], tuple[tuple[str, ...], int]] = {}

    def labels(self, key: tuple[Any, ...], make: Callable[[], RunResult]) -> tuple[tuple[str, ...], RunResult | None]:
        """The labels of the run `key` names (made by `make` when unknown), and the run if it was made."""
        known = self._labels.get(key)
        if known is not None:
            return known, None
        result = make()
        self._labels[key] = _labels_in(check(result), None)
        return self._labels[key], result

    def shape(self, key: tuple[Any, ...], make: Callable[[], tuple[tuple[str, ...], int]]
              ) -> tuple[tuple[str, ...], int]:
        """The PCT entities and horizon of the smaller scenario `key` names."""
        if key not in self._shape:
            self._shape[key] = make()
        return self._shape[key]


def shrink_finding(finding: Finding, policy: Scheduler, seed: int, depth: int, budget: int = 60, *,
                   fault_bound: int = 1, memo: ShrinkMemo | None = None) -> Finding:
    """Fewer calls (greedily, while the same label can still be found the way it was found), then a
    shorter order tape. The shrunk finding keeps the swarm faults of the original: its scenario
    carries them. `memo` shares what runs showed with the other findings of the same exploration."""
    label = finding.label
    current = finding
    if finding.result.agents:
        current = _shrink_crew(finding, policy, seed, depth, budget, fault_bound)
        memo = None  # a crew's smaller scenarios are not named by their calls alone
    # The scenario the finding's run started from: the swarm faults of that run (if any) changed it.
    base = (finding.swarm, finding.run_index if finding.swarm else -1)
    changed = not finding.result.agents
    while changed:
        changed = False
        for call in current.result.scenario.calls:
            smaller = without_call(current.result.scenario, call.id)
            if smaller is None:
                continue
            again = _refind(smaller, policy, finding.found_by, seed, depth, label, budget, fault_bound,
                            memo=memo, base=base)
            if again is not None:
                current, changed = again, True
                break
    shrunk = _shorter_tape(current, policy)
    return replace(shrunk, swarm=finding.swarm, found_by=finding.found_by, run_index=finding.run_index)


def _shrink_crew(finding: Finding, policy: Scheduler, seed: int, depth: int, budget: int,
                 fault_bound: int) -> Finding:
    """Several agents: their turns fixed as they ran, then fewer calls and turns, agents still
    concurrent (see `harness.explore.crew_shrink`)."""
    source = finding.result.replayable
    data = crew_shrink.fixed_crew(finding.result)
    current = finding
    again = _refind(crew_shrink.load(data, source), policy, finding.found_by, seed, depth, finding.label, budget,
                    fault_bound)
    if again is None:  # the fixed turns do not show it again (e.g. a model that reacts to timing)
        return finding
    current, changed = again, True
    while changed:
        changed = False
        for agent, call_id in crew_shrink.calls_of(data):
            smaller = crew_shrink.without_call(data, agent, call_id)
            if smaller is None:
                continue
            again = _refind(crew_shrink.load(smaller, source), policy, finding.found_by, seed, depth,
                            finding.label, budget, fault_bound)
            if again is not None:
                data, current, changed = smaller, again, True
                break
    return current


def _plan_result(job: _Job, policy: Scheduler, plan: RunPlan) -> RunResult:
    return execute_plan(job, policy, plan)[0]


def _refind(scenario: Scenario, policy: Scheduler, found_by: str, seed: int, depth: int, label: str,
            budget: int, fault_bound: int, *, memo: ShrinkMemo | None = None, base: Any = None) -> Finding | None:
    if found_by == "exhaustive":
        search = ExhaustiveSearch(lambda chooser: run(scenario, policy, seed, chooser=chooser), footprints(scenario),
                                  budget, fault_bound)
        for index, step in enumerate(search):
            found = first_violation(step.result, label) if step.counted else None
            if found is not None:
                return Finding(*found, step.result, index)
        return None
    mode = "random" if found_by.startswith("random") else "pct"
    if found_by.startswith("pct(d="):
        depth = int(found_by[len("pct(d="):].split(")")[0])
    kept = (base, tuple(call.id for call in scenario.calls))

    def shape() -> tuple[tuple[str, ...], int]:
        return (_entities(scenario, policy, seed),
                max(2 * len(run(scenario, policy, seed, chooser=Tape()).tape or ()), depth))

    calls, horizon = memo.shape(kept, shape) if memo is not None else shape()
    job = _Job(scenario, policy, (*calls, TIME), horizon, seed, ())
    for plan in plans(mode, budget, seed, depth, False):
        if memo is None:
            result: RunResult | None = execute_plan(job, policy, plan)[0]
        else:
            shown, result = memo.labels((*kept, mode, depth, plan.index),
                                        functools.partial(_plan_result, job, policy, plan))
            if label not in shown:
                continue
        result = result or execute_plan(job, policy, plan)[0]
        found = first_violation(result, label)
        if found is not None:
            return Finding(*found, result, plan.index)
    return None


def _shorter_tape(finding: Finding, policy: Scheduler) -> Finding:
    """The shortest prefix of the tape (the rest in model order) that still shows the label."""
    tape = finding.result.tape
    if tape is None:
        return finding
    for length in range(len(tape) + 1):
        # A loop run's tape replays on its loop scenario (shrinking calls away made a plain one).
        result = run(finding.result.replayable, policy, finding.result.seed, chooser=Tape(tape[:length]))
        found = first_violation(result, finding.label)
        if found is not None:
            return replace(finding, label=found[0], oracle=found[1], message=found[2], witness=found[3],
                           result=result)
    return finding


# -- hypothesis ------------------------------------------------------------------------------------


class _IndexTape:
    """Order choices as indices into the enabled set (0: the first in model order; time is last)."""

    def __init__(self, choices: list[int]) -> None:
        self.choices = choices

    def choose(self, enabled: Any, step: int) -> str:
        index = self.choices[step] if step < len(self.choices) else 0
        return str(enabled[min(index, len(enabled) - 1)])


@contextlib.contextmanager
def hypothesis_home_elsewhere() -> Iterator[None]:
    """Hypothesis's storage in a temporary directory for this search, removed after it. With no
    example database, what Hypothesis still writes is a cache of the constants in the local modules it
    has seen (`.hypothesis/constants/` in the current directory): an exploration writes nothing
    outside the report directory it was given. A home directory the user chose is put back."""
    import tempfile

    from hypothesis import configuration

    previous = vars(configuration).get("__hypothesis_home_directory")
    with tempfile.TemporaryDirectory(prefix="harness-hypothesis-") as home:
        configuration.set_hypothesis_home_dir(home)
        try:
            yield
        finally:
            configuration.set_hypothesis_home_dir(previous)


def _hypothesis(exploration: Exploration, scenario: Scenario, policy: Scheduler, runs: int, seed: int,
                labels: tuple[str, ...] | None) -> None:
    from hypothesis import HealthCheck, find, settings
    from hypothesis import strategies as st
    from hypothesis.errors import NoSuchExample

    calls = [c.id for c in scenario.calls]
    tried = 0

    def build(example: tuple[list[bool], list[int]]) -> Scenario | None:
        keep, _ = example
        current: Scenario | None = scenario
        for call_id, wanted in zip(calls, keep, strict=True):
            if not wanted and current is not None:
                current = without_call(current, call_id)
        return current

    first_failure = 0  # the run that first failed: later ones are Hypothesis shrinking it

    def fails(example: tuple[list[bool], list[int]]) -> bool:
        nonlocal tried, first_failure
        tried += 1
        current = build(example)
        if current is None:
            return False
        result = run(current, policy, seed, chooser=_IndexTape(example[1]))
        add_started(exploration, started_tools(result))
        failed = first_violation(result, labels) is not None
        if failed and not first_failure:
            first_failure = tried
        return failed

    # Index len(calls) is time (the last entry of an enabled set that has it).
    strategy = st.tuples(st.lists(st.booleans(), min_size=len(calls), max_size=len(calls)),
                         st.lists(st.integers(min_value=0, max_value=len(calls)), max_size=4 * len(calls) + 4))
    exploration.scope = {"runs": runs, "seeds": [seed],
                         "latencies": "order choices drawn and shrunk by Hypothesis (a sample, no claim); "
                                      + scope.ORDER_FIRST_LATENCIES,
                         "timers": "ordered against call steps where Hypothesis draws the time index",
                         "faults": scope.faults(scenario, f"drawn from seed {seed}"), "swarm": []}
    try:
        with hypothesis_home_elsewhere():
            example = find(strategy, fails, settings=settings(max_examples=runs, deadline=None, database=None,
                                                              suppress_health_check=list(HealthCheck)),
                           random=Random(seed))
    except NoSuchExample:
        exploration.runs = exploration.scope["runs"] = tried
        return
    exploration.runs = exploration.scope["runs"] = tried
    current = build(example)
    assert current is not None
    result = run(current, policy, seed, chooser=_IndexTape(example[1]))
    found = first_violation(result, labels)
    assert found is not None
    # Hypothesis shrank its own encoding (kept calls, order indices); indices are relative to each
    # decision, so dropping a call shifts them: the greedy pass over the real run finishes the job.
    exploration.findings.append(Finding(*found, result, (first_failure or tried) - 1, (), "hypothesis"))
