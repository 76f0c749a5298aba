"""The exploration engine: run a strategy until a violation, shrink it, keep it.

Owns `explore()`. Strategies: `random` (latencies from the scenario's distributions; the only one
whose latency statistics mean anything), `pct` (order-first, priorities with d-1 change points; it
reports its per-run and overall bounds), `exhaustive` (every order up to equivalence, up to the run
bound; it says when the space was exhausted) and `hypothesis` (Hypothesis draws which calls to keep
and the order choices and shrinks them itself). A finding is shrunk — fewer calls, then fewer
deviations from model order — and can be saved as a reproducer. It never prints.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from random import Random
from typing import Any

from harness.explore import pct as pct_module
from harness.explore.arbiter import Tape
from harness.explore.exhaustive import ExhaustiveSearch
from harness.explore.footprints import footprints
from harness.explore.swarm import KINDS as SWARM_KINDS
from harness.explore.swarm import swarm_scenario
from harness.model import Batch
from harness.oracles import check
from harness.run import RunResult, run
from harness.scenario.spec import Scenario
from harness.schedulers import Scheduler, get_scheduler
from harness.sim.streams import derive_seed

STRATEGIES = ("random", "pct", "exhaustive", "hypothesis")


@dataclass(frozen=True)
class Finding:
    label: str
    oracle: str
    message: str
    witness: dict[str, Any]
    result: RunResult
    run_index: int
    swarm: tuple[str, ...] = ()


@dataclass
class Exploration:
    strategy: str
    scenario: str
    scheduler: str
    runs: int = 0
    findings: list[Finding] = field(default_factory=list)
    bound: dict[str, Any] | None = None
    exhausted: bool | None = None
    classes: int | None = None
    shrunk: Finding | None = None

    @property
    def found(self) -> Finding | None:
        return self.findings[0] if self.findings else None

    @property
    def runs_to_failure(self) -> int | None:
        return self.found.run_index + 1 if self.found else None


def first_violation(result: RunResult, label: str | None = None) -> tuple[str, str, str, dict[str, Any]] | None:
    """(label, oracle, message, witness) of the first violation (of `label`, if given)."""
    for verdict in check(result):
        for violation in verdict.violations:
            if label is None or violation.label == label:
                return violation.label, verdict.oracle, violation.message, dict(violation.witness)
    return None


def explore(scenario: Scenario, scheduler: str | Scheduler, strategy: str = "pct", *, runs: int = 100,
            seed: int = 1, depth: int = 3, swarm: bool = False, keep_going: bool = False, shrink: bool = True,
            on_progress: Callable[[int, int], None] | None = None,
            swarm_kinds: tuple[str, ...] = SWARM_KINDS) -> Exploration:
    """Explore `scenario` under `scheduler` (a name `get_scheduler` accepts, or an instance)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; valid: {', '.join(STRATEGIES)}")
    policy = get_scheduler(scheduler) if isinstance(scheduler, str) else scheduler
    exploration = Exploration(strategy, scenario.name, scheduler if isinstance(scheduler, str) else policy.name)
    if strategy == "hypothesis":
        return _hypothesis(exploration, scenario, policy, runs, seed)
    seen_labels: set[str] = set()
    for index, (result, kinds_on) in enumerate(_runs(exploration, scenario, policy, strategy, runs, seed,
                                                       depth, swarm, swarm_kinds)):
        exploration.runs = index + 1
        if on_progress:
            on_progress(index + 1, runs)
        found = first_violation(result)
        if found is None or found[0] in seen_labels:
            continue
        seen_labels.add(found[0])
        exploration.findings.append(Finding(*found, result, index, kinds_on))
        if not keep_going:
            break
    if exploration.bound is not None:
        per_run = exploration.bound["per_run"]
        exploration.bound["miss_probability"] = pct_module.miss_bound(per_run, exploration.runs)
    if exploration.found is not None and shrink:
        exploration.shrunk = shrink_finding(exploration.found, policy, strategy, seed, depth)
    return exploration


def _runs(exploration: Exploration, scenario: Scenario, policy: Scheduler, strategy: str, runs: int, seed: int,
          depth: int, swarm: bool, swarm_kinds: tuple[str, ...] = SWARM_KINDS
          ) -> Iterator[tuple[RunResult, tuple[str, ...]]]:
    if strategy == "exhaustive":
        prints = footprints(scenario)
        search = ExhaustiveSearch(lambda chooser: run(scenario, policy, seed, chooser=chooser), prints, runs)
        for step in search:
            exploration.exhausted, exploration.classes = search.exhausted, search.classes
            if step.counted:
                yield step.result, ()
        exploration.exhausted, exploration.classes = search.exhausted, search.classes
        return
    calls = [c.id for c in scenario.calls]
    horizon = len(run(scenario, policy, seed, chooser=Tape()).tape or ()) if strategy == "pct" else 0
    if strategy == "pct":
        exploration.bound = {"depth": depth, "calls": len(calls), "horizon": horizon,
                             "per_run": pct_module.bound(len(calls), horizon, depth)}
    for index in range(runs):
        current: Scenario = scenario
        kinds: tuple[str, ...] = ()
        if swarm:
            current, kinds = swarm_scenario(scenario, Random(derive_seed(seed, "swarm", "", index)), swarm_kinds)
        if strategy == "random":
            yield run(current, policy, seed + index), kinds
            continue
        rng = Random(derive_seed(seed, "pct", "", index))
        result = run(current, policy, seed + index, chooser=pct_module.PCT(rng, calls, horizon, depth))
        horizon = max(horizon, len(result.tape or ()))  # the horizon estimate grows with what runs show
        assert exploration.bound is not None
        exploration.bound.update(horizon=horizon, per_run=pct_module.bound(len(calls), horizon, depth))
        yield result, kinds


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
                   call_latency={k: v for k, v in scenario.call_latency.items() if k != call_id},
                   call_failures={k: v for k, v in scenario.call_failures.items() if k != call_id})


def shrink_finding(finding: Finding, policy: Scheduler, strategy: str, seed: int, depth: int,
                   budget: int = 60) -> Finding:
    """Fewer calls (greedily, while the same label can still be found), then a shorter order tape."""
    label = finding.label
    current = finding
    changed = True
    while changed:
        changed = False
        for call in current.result.scenario.calls:
            smaller = without_call(current.result.scenario, call.id)
            if smaller is None:
                continue
            again = _refind(smaller, policy, strategy, seed, depth, label, budget)
            if again is not None:
                current, changed = again, True
                break
    return _shorter_tape(current, policy)


def _refind(scenario: Scenario, policy: Scheduler, strategy: str, seed: int, depth: int, label: str,
            budget: int) -> Finding | None:
    exploration = Exploration(strategy, scenario.name, policy.name)
    for index, (result, kinds) in enumerate(_runs(exploration, scenario, policy,
                                                  "pct" if strategy == "hypothesis" else strategy,
                                                  budget, seed, depth, swarm=False)):
        found = first_violation(result, label)
        if found is not None:
            return Finding(*found, result, index, kinds)
    return None


def _shorter_tape(finding: Finding, policy: Scheduler) -> Finding:
    """The shortest prefix of the tape (the rest in model order) that still shows the label."""
    tape = finding.result.tape
    if tape is None:
        return finding
    for length in range(len(tape) + 1):
        result = run(finding.result.scenario, policy, finding.result.seed, chooser=Tape(tape[:length]))
        found = first_violation(result, finding.label)
        if found is not None:
            return Finding(*found, result, finding.run_index, finding.swarm)
    return finding


# -- hypothesis ------------------------------------------------------------------------------------


class _IndexTape:
    """Order choices as indices into the enabled set (0: the first in model order)."""

    def __init__(self, choices: list[int]) -> None:
        self.choices = choices

    def choose(self, enabled: Any, step: int) -> str:
        index = self.choices[step] if step < len(self.choices) else 0
        return str(enabled[min(index, len(enabled) - 1)])


def _hypothesis(exploration: Exploration, scenario: Scenario, policy: Scheduler, runs: int, seed: int) -> Exploration:
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

    def fails(example: tuple[list[bool], list[int]]) -> bool:
        nonlocal tried
        tried += 1
        current = build(example)
        if current is None:
            return False
        return first_violation(run(current, policy, seed, chooser=_IndexTape(example[1]))) is not None

    strategy = st.tuples(st.lists(st.booleans(), min_size=len(calls), max_size=len(calls)),
                         st.lists(st.integers(min_value=0, max_value=max(0, len(calls) - 1)), max_size=4 * len(calls)))
    try:
        example = find(strategy, fails, settings=settings(max_examples=runs, deadline=None, database=None,
                                                          suppress_health_check=list(HealthCheck)),
                       random=Random(seed))
    except NoSuchExample:
        exploration.runs = tried
        return exploration
    exploration.runs = tried
    current = build(example)
    assert current is not None
    result = run(current, policy, seed, chooser=_IndexTape(example[1]))
    found = first_violation(result)
    assert found is not None
    finding = Finding(*found, result, tried - 1)
    exploration.findings.append(finding)
    # Hypothesis shrank its own encoding (kept calls, order indices); indices are relative to each
    # decision, so dropping a call shifts them: finish with the greedy pass over the real run.
    exploration.shrunk = shrink_finding(finding, policy, "pct", seed, depth=3)
    return exploration
