"""A scenario's writes-first order is made once per scenario, and large scenarios keep two shapes.

`reference._reordered` remembers, per scenario object (with its shape), the scenario in writes-first order, so
every run of a scenario judged against writes-first (`resource_keys` declares it) is judged on one
reordered scenario object, whose shape, certain steps and replay key the oracles then find again
instead of rebuilding them per run. `shape._large`/`_large_before` keep the shapes of the last two
large scenarios (a run's and its reordered one's). Here: the remembered reordering is the reordering
made anew (batches, indexes, verdicts), it goes when its scenario does, and two large scenarios
asked in turn keep their shapes.
"""

from __future__ import annotations

import gc
import weakref
from dataclasses import replace

import pytest

from harness import find_scenario, get_scheduler, run
from harness.model import Batch
from harness.oracles import reference, serializability
from harness.oracles import shape as shapes
from harness.oracles.reference import in_reference_order
from harness.scenario.spec import Scenario
from tests.catalogue.cases import CASES


def _fresh(scenario: Scenario) -> Scenario:
    batches = tuple(reference._writes_first(batch, scenario) for batch in scenario.batches)
    if all(new is old for new, old in zip(batches, scenario.batches, strict=True)):
        return scenario
    return replace(scenario, batches=batches)


def _scenarios() -> list[Scenario]:
    found = {case.load().name: case.load() for case in CASES}
    return [*found.values(), find_scenario("test-then-edit")]


def test_every_run_of_a_scenario_is_judged_on_one_reordering_equal_to_a_fresh_one() -> None:
    resource_keys = get_scheduler("resource_keys")
    shared = 0
    for scenario in _scenarios():
        one, two = run(scenario, resource_keys, 1), run(scenario, resource_keys, 2)
        first = in_reference_order(one, "writes-first").scenario
        second = in_reference_order(two, "writes-first").scenario
        if one.scenario is two.scenario:  # a loop or agents run has a scenario of its own
            assert first is second, scenario.name
            shared += first is not scenario
        scenario = one.scenario
        fresh = _fresh(scenario)
        assert first.batches == fresh.batches and (first is scenario) == (fresh is scenario), scenario.name
        assert [[c.index for c in b] for b in first.batches] == [[c.index for c in b] for b in fresh.batches]
    assert shared


def test_verdicts_on_the_remembered_reordering_are_those_on_a_fresh_one(monkeypatch: pytest.MonkeyPatch) -> None:
    resource_keys = get_scheduler("resource_keys")
    reordered = failing = 0
    for scenario in _scenarios():
        for seed in (1, 2, 3):
            result = run(scenario, resource_keys, seed)
            kept = serializability.check(result)
            with monkeypatch.context() as patch:
                patch.setattr(reference, "_reordered", _fresh)
                fresh = serializability.check(run(scenario, resource_keys, seed))
            assert kept == fresh, f"{scenario.name} seed {seed}"
            reordered += in_reference_order(result, "writes-first").scenario is not result.scenario
            failing += not kept.ok
    assert reordered and failing


def test_a_remembered_reordering_goes_with_its_scenario() -> None:
    shapes._memo.clear()  # a memo filled by earlier tests would start again between the two asks below
    scenario = replace(find_scenario("test-then-edit"), name="short-lived")
    result = run(scenario, get_scheduler("resource_keys"), 1)
    reordered = in_reference_order(result, "writes-first").scenario
    assert reordered is not scenario and in_reference_order(result, "writes-first").scenario is reordered
    key = id(scenario)
    alive, alive_reordered = weakref.ref(scenario), weakref.ref(reordered)
    for held in (key, id(reordered)):  # the shape memo keeps a few small scenarios alive by design
        shapes._memo.pop(held, None)
    del scenario, result, reordered
    gc.collect()
    assert alive() is None and alive_reordered() is None


def test_two_large_scenarios_asked_in_turn_keep_their_shapes() -> None:
    calls = [(f"c{i}", "read_file", {"path": "a.txt"}) for i in range(shapes.MAX_CALLS + 1)]
    base = find_scenario("config-clobber")
    one = replace(base, name="large-one", batches=(Batch.of(calls),))
    two = replace(base, name="large-two", batches=(Batch.of(calls),))
    first, second = shapes.shape_of(one), shapes.shape_of(two)
    for _ in range(2):
        assert shapes.shape_of(one) is first and shapes.shape_of(two) is second
    three = replace(base, name="large-three", batches=(Batch.of(calls),))
    shapes.shape_of(three)
    assert shapes.shape_of(two) is second  # the last two are kept; `one` was the oldest
    alive = [weakref.ref(one), weakref.ref(two), weakref.ref(three)]
    del one, two, three
    gc.collect()
    assert all(ref() is None for ref in alive) and shapes._large is None and shapes._large_before is None


def test_the_reordered_run_s_facts_are_those_read_from_its_trace() -> None:
    """`RunFacts.reordered` hands the judged run the facts of the run it reorders (the same trace and
    results) with its own scenario's shape: everything an oracle reads equals a fresh reading."""
    from harness.oracles.facts import RunFacts

    resource_keys = get_scheduler("resource_keys")
    compared = 0
    for scenario in _scenarios():
        for seed in (1, 2):
            result = run(scenario, resource_keys, seed)
            original = RunFacts.of(result)
            for name in ("calls", "reported", "every_call_ok", "attempts_by_call", "touches"):
                getattr(original, name)  # worked out before the copy, as the oracles before it would
            judged = in_reference_order(result, "writes-first")
            if judged is result:
                continue
            kept, fresh = RunFacts.of(judged), RunFacts(judged)
            assert kept is not original and kept.result is judged and kept.shape is shapes.shape_of(judged.scenario)
            for name in ("attempts", "interrupts", "batch_end_seq", "skipped", "skips", "crash_t", "kinds",
                         "tool_code", "keyed", "calls", "position", "batch_of", "reported", "every_call_ok",
                         "attempts_by_call", "touches"):
                assert getattr(kept, name) == getattr(fresh, name), f"{scenario.name} seed {seed}: {name}"
            assert list(kept.calls) == list(fresh.calls) and list(kept.position) == list(fresh.position)
            compared += 1
    assert compared
