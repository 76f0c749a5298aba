"""The exploration engine: run a strategy until a violation, shrink it, keep it, and say exactly what
was covered.

Owns `explore()`: it checks the arguments, runs the strategy under the wall-clock limit, and shrinks
the first finding. Strategies:
- `random`: latencies drawn from the scenario's distributions, seed after seed; the only one whose
  latency statistics mean anything; timers fire at their drawn times;
- `pct`: order-first, priorities with d-1 change points over the calls *and* time (a pending timer
  is one more contender); it reports its per-run and overall bounds;
- `exhaustive`: every order of steps and timers up to equivalence, and every choice of up to
  `fault_bound` injected faults, up to the run bound; it says when the space was exhausted;
- `hypothesis`: Hypothesis draws which calls to keep and the order choices and shrinks them itself;
- `auto` (the default): one budget shared by random latencies, PCT at depths 1-3 and swarm faults,
  so one exploration catches what any single strategy would.

Random, pct and auto are planned runs (`harness.explore.planned`), hypothesis is
`harness.explore.by_hypothesis`; the exhaustive exploration's bookkeeping is here (its search is
`harness.explore.exhaustive`). What an exploration reports is `harness.explore.findings`; shrinking,
`harness.explore.shrink`.

Every exploration carries a `scope`: which latencies, timers, faults and swarm kinds its runs
covered and, for claims (a PCT bound, an exhausted space), what the claim covers. A finding is shrunk
— fewer calls, then fewer deviations from model order — and can be saved as a reproducer. Runs are a
pure function of (scenario, scheduler, strategy, seed, run index), and outcomes are used in run order,
so `processes=N` or a Dask `cluster` gives the same findings as one process. It never prints.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

from harness.distribute.workers import processes_for
from harness.explore import scope
from harness.explore.by_hypothesis import explore_hypothesis, hypothesis_home_elsewhere
from harness.explore.exhaustive import ExhaustiveSearch
from harness.explore.findings import (
    Exploration,
    Finding,
    NondeterministicScheduler,
    add_started,
    check_limited,
    first_in,
    first_violation,
    labels_in,
    started_tools,
)
from harness.explore.footprints import footprints
from harness.explore.planned import AUTO_CYCLE, RunPlan, execute_plan, explore_planned, plans, policy_of
from harness.explore.shrink import ShrinkMemo, shrink_finding, without_call
from harness.explore.swarm import KINDS as SWARM_KINDS
from harness.explore.swarm import POLICY_KINDS
from harness.oracles import LABELS, check
from harness.run import run, scheduler_label
from harness.scenario.spec import Scenario
from harness.scheduling import Scheduler
from harness.sim.arbiter import FAULT, NO_FAULT, TIME
from harness.sim.collector import long_search
from harness.sim.realtime import (
    resolve_import_timeout,
    resolve_wall_timeout,
    wall_limit_per_run,
    watching_user_interrupts,
)

if TYPE_CHECKING:
    from harness.distribute.cluster import Cluster

# The names below lived in this module before it was split; they are still importable from here.
__all__ = ["AUTO_CYCLE", "STRATEGIES", "Exploration", "Finding", "NondeterministicScheduler", "RunPlan", "ShrinkMemo",
           "add_started", "execute_plan", "explore", "first_violation", "hypothesis_home_elsewhere", "plans",
           "shrink_finding", "started_tools", "without_call"]

STRATEGIES = ("auto", "random", "pct", "exhaustive", "hypothesis")


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
    policy = policy_of(scheduler, import_timeout_s)
    exploration = Exploration(strategy, scenario.name,
                              scheduler if isinstance(scheduler, str) else scheduler_label(policy)[0])
    kinds = swarm_kinds if swarm_kinds is not None else (POLICY_KINDS if strategy == "auto" else SWARM_KINDS)
    wanted = tuple(sorted(labels)) if labels else None
    if strategy == "hypothesis":
        explore_hypothesis(exploration, scenario, policy, runs, seed, wanted)
    elif strategy == "exhaustive":
        _exhaustive(exploration, scenario, policy, runs, seed, fault_bound, keep_going, on_progress, wanted)
    else:
        explore_planned(exploration, scenario, scheduler, policy, strategy, runs, seed, depth, swarm, kinds, keep_going,
                 on_progress, processes, wanted, wall_timeout_s, cluster, import_timeout_s)
    if wanted is not None:
        exploration.scope["labels"] = list(wanted)
    if exploration.found is not None and shrink:
        exploration.shrunk = shrink_finding(exploration.found, policy, seed, depth, fault_bound=fault_bound)
    return exploration


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
        limited += check_limited(verdicts)
        new = [label for label in labels_in(verdicts, labels)[:None if keep_going else 1] if label not in seen]
        for label in new:
            seen.add(label)
            found = first_in(verdicts, (label,))
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


