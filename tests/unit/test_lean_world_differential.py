"""The lean world against pyfakefs: the same runs on both give the same trace, final world and fingerprint.

Every built-in scenario under every built-in scheduler (seed 7, plus the oracles' labels), every case
of the buggy-scheduler catalogue (`tests.catalogue.cases`), and generated scenarios (Hypothesis, CI
profile: `harness.strategies.scenarios` with faults and interrupts, over paths that also reach
errors and the lean world's promotions) run once with lean worlds allowed and once inside
`pyfakefs_worlds()`; each pair must agree on the trace events, the status, the results, the final
`WorldState` (its digest and every file's content) and the fingerprint. So do check_scheduler's
generated batches over its generated world (a symlink and a hard link, which the lean world keeps
without pyfakefs), under PCT order or random latencies, with the oracles' labels. The generated parts run
`HARNESS_DIFFERENTIAL_EXAMPLES` examples (default 100; the issue's 1,000 with
`HARNESS_DIFFERENTIAL_EXAMPLES=1000`).
"""

from __future__ import annotations

import os
from random import Random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import find_scenario, get_scheduler, run, scenario_names, scheduler_names
from harness.explore.pct import PCT
from harness.model import Batch
from harness.oracles import check
from harness.run import RunResult
from harness.scenario.spec import Scenario
from harness.scheduling import Scheduler
from harness.sim.arbiter import TIME
from harness.strategies import DEFAULT_PATHS, batches, fault_plans, scenarios
from harness.testing.generated import GENERATED_PATHS, generated_state
from harness.testing.profiles import GENERATED
from harness.world import World
from harness.world.choice import pyfakefs_worlds
from harness.world.lean import LeanWorld
from tests.catalogue.cases import CASES

EXAMPLES = int(os.environ.get("HARNESS_DIFFERENTIAL_EXAMPLES", "100"))
#: Paths the generated calls name besides the default ones: a missing parent (a write promotes the lean
#: world), a directory (EISDIR), a file used as a directory (ENOTDIR), `..` and a relative path.
ODD_PATHS = ("/repo/new/d.txt", "/repo/src", "/repo/a.txt/x", "src/../b.txt", "src/c.txt", "/repo/tests/../a.txt")


def _labels(result: RunResult) -> list[str]:
    return [f"{v.oracle}:{x.label}" for v in check(result) for x in v.violations]


def _summary(result: RunResult, labels: bool) -> dict[str, Any]:
    final = result.final
    return {
        "trace": result.trace,
        "status": result.status,
        "error": result.error,
        "makespan": result.makespan_ms,
        "results": result.results,
        "final": final,
        "digest": final.digest(),
        "contents": final.to_json(contents=True),
        "fingerprint": result.fingerprint,
        "labels": _labels(result) if labels else None,
    }


def _both(scenario: Scenario, scheduler: Any, seed: int, *, labels: bool = False, **kwargs: Any) -> None:
    """Run `scenario` on lean worlds and on pyfakefs worlds; every field of the summaries must agree."""
    make = (lambda: get_scheduler(scheduler)) if isinstance(scheduler, str) else (lambda: scheduler)
    lean = _summary(run(scenario, make(), seed, **kwargs), labels)
    with pyfakefs_worlds():
        fake = _summary(run(scenario, make(), seed, **kwargs), labels)
    for key in lean:
        assert lean[key] == fake[key], f"{scenario.name} under {scheduler}, seed {seed}: {key} differs"


def test_a_plain_scenario_runs_on_a_lean_world_and_the_switch_turns_it_off() -> None:
    """The differential compares two different worlds, not one world twice."""
    scenario = find_scenario("read-same-file")
    assert isinstance(World.from_state(scenario.world), LeanWorld)
    with pyfakefs_worlds():
        assert not isinstance(World.from_state(scenario.world), LeanWorld)


@pytest.mark.parametrize("name", scenario_names())
def test_every_builtin_scenario_under_every_builtin_scheduler(name: str) -> None:
    scenario = find_scenario(name)
    for scheduler in scheduler_names():
        _both(scenario, scheduler, 7, labels=True)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_every_case_of_the_buggy_scheduler_catalogue(case: Any) -> None:
    scenario: Scenario = case.load()
    scheduler: Scheduler = case.scheduler
    for seed in (1, 2):
        _both(scenario, scheduler, seed)


@settings(max_examples=EXAMPLES)
@given(scenario=scenarios(batch_strategy=batches(max_size=5, paths=(*DEFAULT_PATHS, *ODD_PATHS)),
                          faults=fault_plans(), interrupts=True),
       scheduler=st.sampled_from(["serial", "parallel", "resource_keys", "hermes_segments", "partition", "rwlock"]),
       seed=st.integers(0, 2**16))
def test_generated_scenarios(scenario: Scenario, scheduler: str, seed: int) -> None:
    _both(scenario, scheduler, seed)


#: check_scheduler's generated part's paths, and paths that reach its aliases otherwise: through the
#: symlink's target and back, `..` next to the hard link, a missing name beside them.
LINKED_PATHS = (*GENERATED_PATHS, "/repo/src/../link.txt", "hard.txt", "link.txt", "/repo/link.txt/x", "/repo/new.txt")


def test_the_generated_world_is_lean() -> None:
    """The generated world has a symlink and a hard link, and is lean all the same."""
    assert isinstance(World.from_state(generated_state()), LeanWorld)


@settings(max_examples=EXAMPLES)
@given(batch=batches(max_size=5, paths=LINKED_PATHS),
       scheduler=st.sampled_from(["serial", "parallel", "resource_keys", "hermes_segments", "partition", "rwlock"]),
       seed=st.integers(0, 2**16), pct=st.booleans())
def test_generated_batches_over_the_generated_world(batch: Batch, scheduler: str, seed: int, pct: bool) -> None:
    """check_scheduler's generated part (its world with a symlink and a hard link, PCT order per batch,
    the oracles' labels, the serializability replays on the same world): lean and pyfakefs agree."""
    scenario = Scenario(name=GENERATED, batches=(batch,), world=generated_state())

    def chooser() -> PCT | None:
        return PCT(Random(seed), [*batch.ids, TIME], 16) if pct else None

    lean = _summary(run(scenario, get_scheduler(scheduler), seed, chooser=chooser()), True)
    assert isinstance(World.from_state(scenario.world), LeanWorld)
    with pyfakefs_worlds():
        fake = _summary(run(scenario, get_scheduler(scheduler), seed, chooser=chooser()), True)
    for key in lean:
        assert lean[key] == fake[key], f"{batch} under {scheduler}, seed {seed}: {key} differs"
