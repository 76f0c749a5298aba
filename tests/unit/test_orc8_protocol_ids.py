"""Protocol keeps each batch's ids with the scenario's shape (issue 27's cheaper oracles).

`protocol._ids` works a batch's ids (in model order, and as a set) out once per batch of a scenario
and keeps them beside the scenario's shape. Here: what it returns is what the batch holds, for the
scenario's own batch, for another batch object put in its place (never the kept one), and for a batch
past the scenario's; and the protocol verdict of every catalogue run is the one it gives when the ids
are worked out anew for every run.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness import get_scheduler, run
from harness.model import Batch
from harness.oracles import protocol
from harness.oracles.facts import RunFacts
from harness.run import RunResult
from tests.catalogue.cases import CASES, CORRECT


def _fresh(facts: RunFacts, index: int, batch: Batch) -> tuple[list[str], frozenset[str]]:
    expected = list(batch.ids)
    return expected, frozenset(expected)


def _runs() -> list[tuple[str, RunResult]]:
    found = []
    for case in CASES:
        scenario = case.load()
        found.append((case.name, run(scenario, case.scheduler, 1)))
        for name, scheduler in (*CORRECT[:1], ("parallel", get_scheduler("parallel"))):
            found.append((f"{name} on {case.name}", run(scenario, scheduler, 2)))
    return found


def test_the_kept_ids_are_the_batch_s_own() -> None:
    for name, result in _runs():
        facts = RunFacts.of(result)
        for batch_run in result.batches:
            for _ in range(2):  # worked out, then kept
                expected, in_model = protocol._ids(facts, batch_run.index, batch_run.batch)
                assert expected == list(batch_run.batch.ids) and in_model == set(expected), name


def test_another_batch_in_the_scenario_s_place_is_never_read_from_the_kept_ids() -> None:
    result = run(CASES[0].load(), CASES[0].scheduler, 1)
    facts = RunFacts.of(result)
    own = result.batches[0].batch
    protocol._ids(facts, 0, own)  # kept
    other = Batch(tuple(replace(call, index=i) for i, call in enumerate(reversed(own.calls))), own.label)
    expected, in_model = protocol._ids(facts, 0, other)
    assert expected == list(other.ids) != list(own.ids) and in_model == set(other.ids)
    past = protocol._ids(facts, len(result.scenario.batches), other)
    assert past[0] == list(other.ids)
    # A run whose batch is that other object is judged by the other's ids.
    moved = replace(result, batches=(replace(result.batches[0], batch=other), *result.batches[1:]))
    assert protocol.check(moved) == _fresh_verdict(moved)


def _fresh_verdict(result: RunResult) -> object:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(protocol, "_ids", _fresh)
        return protocol.check(result)


def test_protocol_verdicts_with_kept_ids_are_those_worked_out_anew() -> None:
    failing = 0
    for name, result in _runs():
        kept = protocol.check(result)
        assert kept == _fresh_verdict(replace(result)), name
        failing += not kept.ok
    assert failing  # the catalogue's mispaired and reordered results are among them
