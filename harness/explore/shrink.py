"""Shrinking a finding: fewer calls, then a shorter order tape, the same label still shown.

Owns `shrink_finding` (greedily drop calls while the label can still be found the way it was found,
then the shortest prefix of the order tape that still shows it), a crew's shrinking (its turns fixed
as they ran, see `harness.explore.crew_shrink`), `without_call` (a call goes with every call that
names it in `args_from` or `depends_on`, so what shrinking makes always loads again as a reproducer),
and `ShrinkMemo`, which the findings of one exploration share. It never searches for a first finding
(the strategies do).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from harness.explore import crew_shrink
from harness.explore.exhaustive import ExhaustiveSearch
from harness.explore.findings import Finding, first_violation, labels_in
from harness.explore.footprints import footprints
from harness.explore.planned import Job, RunPlan, entities, execute_plan, plans
from harness.model import Batch
from harness.oracles import check
from harness.run import RunResult, run
from harness.scenario.spec import Scenario
from harness.scheduling import Scheduler
from harness.sim.arbiter import TIME, Tape
from harness.tools.inputs import Source, with_consumers


def referrers(scenario: Scenario, call_id: str) -> tuple[str, ...]:
    """The calls that name `call_id` (directly or through another such call) in their `args_from` or
    `depends_on`, in model order: a scenario without `call_id` must lose them too, or it would not
    load again (`args_from` and `depends_on` must name calls of the scenario)."""
    named_by: dict[str, set[str]] = {}  # producer -> the calls that name it
    for consumer, producers in scenario.depends_on.items():
        for producer in producers:
            named_by.setdefault(producer, set()).add(consumer)
    for consumer, table in scenario.args_from.items():
        for text in table.values():
            try:
                producers = Source.parse(text).producers
            except ValueError:  # a scenario built in Python unchecked: the reference names nothing
                continue
            for producer in producers:
                named_by.setdefault(producer, set()).add(consumer)
    gone = with_consumers(named_by, call_id)
    return tuple(call.id for call in scenario.calls if call.id in gone and call.id != call_id)


def without_call(scenario: Scenario, call_id: str) -> Scenario | None:
    """The scenario minus one call and every call that names it (`referrers`), None if nothing would
    be left. A call the scenario does not have leaves it as it is."""
    gone = {call_id, *referrers(scenario, call_id)}
    batches = []
    for batch in scenario.batches:
        kept = [c for c in batch if c.id not in gone]
        if kept:
            batches.append(Batch.of([(c.id, c.name, c.arguments) for c in kept], batch.label))
    if not batches:
        return None

    def keep(table: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in table.items() if k not in gone}

    # No call left names a dropped one (its referrers went with it), so depends_on needs no pruning.
    return replace(scenario, batches=tuple(batches), depends_on=keep(scenario.depends_on),
                   args_from=keep(scenario.args_from), call_latency=keep(scenario.call_latency),
                   call_failures=keep(scenario.call_failures), recorded=keep(scenario.recorded))


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
        self._labels[key] = labels_in(check(result), None)
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
    budget = refind_budget(finding, budget)
    if finding.result.agents:
        current = _shrink_crew(finding, policy, seed, depth, budget, fault_bound)
        memo = None  # a crew's smaller scenarios are not named by their calls alone
    # The scenario the finding's run started from: the swarm faults of that run (if any) changed it.
    base = (finding.swarm, finding.run_index if finding.swarm else -1)
    changed = not finding.result.agents
    while changed:
        changed = False
        # One pass tries every call once, going on from a removal instead of starting over (calls
        # before it were just seen to be needed); passes repeat until one removes nothing.
        for call_id in [call.id for call in current.result.scenario.calls]:
            smaller = without_call(current.result.scenario, call_id)
            if smaller is None or len(smaller.calls) == len(current.result.scenario.calls):
                continue  # nothing left, or the call already went with another one's removal
            again = _refind(smaller, policy, finding.found_by, seed, depth, label, budget, fault_bound,
                            memo=memo, base=base)
            if again is not None:
                current, changed = again, True
    shrunk = _shorter_tape(current, policy)
    return replace(shrunk, swarm=finding.swarm, found_by=finding.found_by, run_index=finding.run_index)


#: The fewest runs a smaller scenario gets to show the label again (see `refind_budget`).
MIN_REFIND_RUNS = 8


def refind_budget(finding: Finding, budget: int) -> int:
    """How many runs each smaller scenario gets to show the label again: twice what finding it took
    (a bug the first runs showed shows in the first runs of a smaller scenario that still has it), at
    least MIN_REFIND_RUNS and at most `budget`. Most smaller scenarios tried *lose* the bug, and each of
    those costs the whole of this, so it decides what shrinking costs."""
    return min(budget, max(MIN_REFIND_RUNS, 2 * (finding.run_index + 1)))


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
        for agent, call_id in crew_shrink.calls_of(data):  # one pass, going on after a removal (as above)
            if (agent, call_id) not in crew_shrink.calls_of(data):
                continue  # it went with another one's removal
            smaller = crew_shrink.without_call(data, agent, call_id)
            if smaller is None:
                continue
            again = _refind(crew_shrink.load(smaller, source), policy, finding.found_by, seed, depth,
                            finding.label, budget, fault_bound)
            if again is not None:
                data, current, changed = smaller, again, True
    return current


def _plan_result(job: Job, policy: Scheduler, plan: RunPlan) -> RunResult:
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
        return (entities(scenario, policy, seed),
                max(2 * len(run(scenario, policy, seed, chooser=Tape()).tape or ()), depth))

    calls, horizon = memo.shape(kept, shape) if memo is not None else shape()
    job = Job(scenario, policy, (*calls, TIME), horizon, seed, ())
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
