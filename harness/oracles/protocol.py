"""Protocol: every call gets exactly one result, reported in model order, paired with the call that
produced it.

Owns the labels `missing-result`, `duplicate-result`, `orphan-result` (an id not in the batch, e.g.
a late result from an earlier turn) — contract violations — and `out-of-order` (results in
completion order, REFERENCE pattern 4), `mispaired-result` (a value produced by another call) and
`fabricated-result` (ok reported for a call that never ran) and `misreported-outcome` (a call that
succeeded reported as failed, or one that failed reported ok: `harness.oracles.outcomes`) — safety
violations, because the model will act on them. A value is compared as a value: the JSON text or
`str()` of the call's own value is that value (`harness.oracles.values`). It never looks at the world.
"""

from __future__ import annotations

from collections.abc import Iterator, Set
from typing import cast

from harness.model import Batch, CallResult, Outcome
from harness.oracles import outcomes, values
from harness.oracles.facts import Attempt, RunFacts
from harness.oracles.verdict import Kind, Verdict, Violation, passing
from harness.run import RunResult, RunStatus
from harness.sim.trace import value_digest

NAME = "protocol"

#: The passing verdict, made once: handed out without calling `Verdict.of` (a classmethod call per
#: oracle per checked run).
_PASSED = passing(NAME)


def check(result: RunResult) -> Verdict:
    facts = RunFacts.of(result)
    violations: list[Violation] = []
    rolled_back = "rollback" in facts.kinds
    for batch_run in result.batches:
        if batch_run.status is not RunStatus.COMPLETED:
            continue  # nothing was reported; the contract oracle says why
        violations.extend(_batch(facts, batch_run.index, rolled_back))
    return Verdict.of(NAME, violations) if violations else _PASSED


def _batch(facts: RunFacts, index: int, rolled_back: bool = False) -> Iterator[Violation]:
    batch_run = facts.result.batches[index]
    expected, in_model = _ids(facts, index, batch_run.batch)
    reported = [r.call_id for r in batch_run.results]
    if not _one_each_in_order(expected, in_model, reported):
        yield from _pairing(facts, index, expected, in_model, reported)
    yield from _values(facts, index, batch_run.results, in_model, rolled_back)


#: The key under which a scenario's shape keeps each batch's ids (see `_ids`).
_IDS = "protocol.ids"


def _ids(facts: RunFacts, index: int, batch: Batch) -> tuple[list[str], frozenset[str]]:
    """The batch's call ids in model order, and as a set (membership by set: a 100,000-call batch is
    judged in linear time). Worked out once per batch of a scenario and kept with its shape (every
    run of the scenario reads the same), for a batch that is the scenario's own; read only."""
    batches = facts.result.scenario.batches
    if index >= len(batches) or batches[index] is not batch:  # not the scenario's batch: never kept
        expected = list(batch.ids)
        return expected, frozenset(expected)
    derived = facts.shape.derived
    known = cast("list[tuple[list[str], frozenset[str]] | None] | None", derived.get(_IDS))
    if known is None:
        known = [None] * len(batches)
        derived[_IDS] = known
    entry = known[index]
    if entry is None:
        expected = list(batch.ids)
        entry = known[index] = (expected, frozenset(expected))
    return entry


def _one_each_in_order(expected: list[str], in_model: Set[str], reported: list[str]) -> bool:
    """Whether the batch reported one result for each of its calls (no two of which share an id), in
    model order: then none is an orphan, a duplicate, missing or out of order, and `_pairing` says
    nothing (the usual report, judged without it)."""
    return reported == expected and len(in_model) == len(expected)


def _pairing(facts: RunFacts, index: int, expected: list[str], in_model: Set[str],
             reported: list[str]) -> Iterator[Violation]:
    """Results for calls not in the batch, twice for one call, for none, or in another order."""
    seen: set[str] = set()
    for call_id in reported:
        if call_id not in in_model:
            other = facts.batch_of.get(call_id)
            why = f"belongs to batch {other}" if other is not None else "is not a call of this scenario"
            yield Violation("orphan-result", f"batch {index} reported a result for {call_id}, which {why}",
                            {"batch": index, "call": call_id, "belongs_to_batch": other}, Kind.CONTRACT)
        elif call_id in seen:
            yield Violation("duplicate-result", f"batch {index} reported {call_id} more than once",
                            {"batch": index, "call": call_id, "reported": reported}, Kind.CONTRACT)
        seen.add(call_id)
    missing = [c for c in expected if c not in seen]
    if missing:
        yield Violation("missing-result", f"batch {index} reported no result for {', '.join(missing)}",
                        {"batch": index, "missing": missing, "reported": reported}, Kind.CONTRACT)
    in_batch = [c for c in dict.fromkeys(reported) if c in in_model]
    if in_batch != [c for c in expected if c in seen]:
        yield Violation("out-of-order", f"batch {index} reported results in another order than model order",
                        {"batch": index, "model_order": list(expected), "reported_order": in_batch})


def _values(facts: RunFacts, index: int, results: tuple[CallResult, ...], in_model: Set[str],
            rolled_back: bool) -> Iterator[Violation]:
    """Each result of a call of the batch against its attempts: the outcome and the value."""
    ok = Outcome.OK
    by_call = facts.attempts_by_call
    for r in results:
        if r.call_id not in in_model:
            continue
        if r.outcome is not ok:  # `r.ok`, without the property call
            misreported = outcomes.reported_failed(facts, index, r)
            if misreported is not None:
                yield misreported
            continue
        only = by_call.get(r.call_id)
        # `facts.opened_attempts(r.call_id)` without its call, for a call with one attempt (the usual).
        attempts = [only] if type(only) is Attempt and only.opened else facts.opened_attempts(r.call_id)
        if not attempts:
            yield Violation("fabricated-result", f"{r.call_id} was reported ok but never started",
                            {"batch": index, "call": r.call_id})
            continue
        digest = value_digest(r.value)  # remembered by its canonical bytes (harness.sim.trace)
        for a in attempts:  # a loop, not any(): this runs for every result of a 100,000-call batch
            if a.outcome == "ok" and a.value_digest == digest:
                undone = outcomes.undone_before_answer(facts, index, r, a) if rolled_back else None
                if undone is not None:
                    yield undone
                break
        else:
            misreported = outcomes.reported_ok(facts, index, r, attempts)
            if misreported is not None:
                yield misreported  # one label per result: not also a value no attempt of it produced
                continue
            # Text the runtime made of the value (JSON, str()): read only when the value itself is no
            # attempt's, so a runtime that reports values as they are pays nothing for it.
            read = values.reading_digests(r.value)
            if any(a.outcome == "ok" and a.value_digest in read for a in attempts):
                continue
            producer = (next((a.call for a in facts.attempts if a.outcome == "ok" and a.value_digest == digest), None)
                        or next((a.call for a in facts.attempts if a.outcome == "ok" and a.value_digest in read), None))
            yield Violation("mispaired-result",
                            f"the value reported for {r.call_id} was not produced by it"
                            + (f" but by {producer}" if producer else ""),
                            {"batch": index, "call": r.call_id, "produced_by": producer})
