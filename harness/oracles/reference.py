"""The reference order serializability judges a run against: the model's order, or an order a design
intends.

Owns which reference a run is judged against and the scenario with each batch in that order. The
reference is the scenario's `reference`, else the one the scheduler declares (its `reference_order`
attribute, which the run records in its trace), else `model`. `writes-first` is design note 002's rule
("同一批调用里只要出现写操作，所有读操作都排在写操作之后"): in a batch with a write, every read comes
after the batch's writes, reads and writes each in model order; a call is a read when its tool
declares itself read-only. It never judges: the serializability oracle does, on the reordered scenario.
"""

from __future__ import annotations

from dataclasses import replace
from typing import cast

from harness.model import Batch, ToolCall
from harness.oracles.facts import RunFacts
from harness.oracles.shape import shape_of
from harness.run import RunResult
from harness.scenario.spec import REFERENCE_ORDERS, Scenario

MODEL = "model"

#: What each reference means, as a report says it.
MEANINGS = {
    "model": "model order: each batch's calls in the order the model emitted them",
    "writes-first": "design note 002's writes-first order: in a batch with a write, every read after the batch's "
                    "writes",
}


def reference_of(result: RunResult) -> tuple[str, str]:
    """(reference, where it comes from: "scenario", "scheduler" or "default") for `result`; a scheduler
    declaring a reference no one knows is judged against model order (its `reference_note` says so)."""
    declared = result.replayable.reference
    if declared is not None:
        return declared, "scenario"
    for event in result.trace[:1]:
        if event.get("ev") == "run" and event.get("reference") in REFERENCE_ORDERS:
            return str(event["reference"]), "scheduler"
    return MODEL, "default"


def reference_note(result: RunResult) -> str:
    """A scheduler's declared reference the oracle could not use, in words (empty when there is none)."""
    for event in result.trace[:1]:
        declared = event.get("reference") if event.get("ev") == "run" else None
        if declared is not None and declared not in REFERENCE_ORDERS:
            return (f"the scheduler declares reference_order {declared!r}, not one of {', '.join(REFERENCE_ORDERS)}: "
                    "judged against model order")
    return ""


def in_reference_order(result: RunResult, reference: str) -> RunResult:
    """`result` with its scenario's batches in `reference` order (itself for model order)."""
    if reference == MODEL:
        return result
    scenario = result.scenario
    reordered = _reordered(scenario)
    if reordered is scenario:
        return result
    judged = replace(result, scenario=reordered)
    # The same trace and results: its facts are the run's own, not read from the trace again.
    RunFacts.of(result).reordered(judged)
    return judged


#: The key under which a scenario's shape keeps the scenario in writes-first order (see `_reordered`).
_WRITES_FIRST = "reference.writes_first"


def _reordered(scenario: Scenario) -> Scenario:
    """`scenario` with every batch in writes-first order: itself when no batch changes. Made once per
    scenario and kept with its shape (`harness.oracles.shape`: as long as the scenario's shape is kept),
    so every run of a scenario is judged against the same reordered scenario object, whose own shape,
    certain steps and replay key the oracles then find again instead of rebuilding them per run."""
    derived = shape_of(scenario).derived
    known = derived.get(_WRITES_FIRST)
    if known is None:
        batches = tuple(_writes_first(batch, scenario) for batch in scenario.batches)
        unchanged = all(new is old for new, old in zip(batches, scenario.batches, strict=True))
        known = derived[_WRITES_FIRST] = scenario if unchanged else replace(scenario, batches=batches)
    return cast(Scenario, known)


def _writes_first(batch: Batch, scenario: Scenario) -> Batch:
    reads: list[ToolCall] = []
    writes: list[ToolCall] = []
    for call in batch.calls:
        spec = scenario.catalogue.get(call.name)
        (reads if spec is not None and spec.declared.read_only else writes).append(call)
    if not writes or not reads or batch.calls[: len(writes)] == tuple(writes):
        return batch
    # Numbered anew: a call's index is its position in the order it is judged in.
    return replace(batch, calls=tuple(replace(call, index=i) for i, call in enumerate((*writes, *reads))))
