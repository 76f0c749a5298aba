"""Liveness: the turn ends, and ends on time.

Owns the labels `hang` (the scheduler did not return within the virtual-time bound or the event
budget, or deadlocked; the witness names the calls still pending), `orphaned-call` (the scheduler
returned while a call it started was still running and had not been abandoned: its result can only
arrive in a later turn), `start-after-interrupt` and `grace-exceeded` (after a user interrupt, no
call may start, and running calls must end or be abandoned within the grace period).
"""

from __future__ import annotations

from collections.abc import Iterator

from harness.oracles.facts import RunFacts
from harness.oracles.verdict import Kind, Verdict, Violation
from harness.run import RunResult, RunStatus

NAME = "liveness"


def check(result: RunResult) -> Verdict:
    facts = RunFacts(result)
    violations: list[Violation] = []
    if result.status is RunStatus.HANG:
        stuck = [a.call for a in facts.attempts if a.settled_t > result.batches[-1].end_ms]
        violations.append(Violation(
            "hang", result.error or "the scheduler did not return",
            {"batch": result.batches[-1].index, "stopped_at_ms": result.batches[-1].end_ms,
             "stop": result.batches[-1].stop.value, "pending": stuck}, Kind.LIVENESS))
    violations.extend(_orphans(facts))
    violations.extend(_interrupts(facts))
    return Verdict.of(NAME, violations)


def _orphans(facts: RunFacts) -> Iterator[Violation]:
    for batch_run in facts.result.batches:
        if batch_run.status is not RunStatus.COMPLETED:
            continue
        for a in facts.attempts:
            if a.batch == batch_run.index and a.settled_t > batch_run.end_ms:
                yield Violation(
                    "orphaned-call",
                    f"batch {batch_run.index} returned at {batch_run.end_ms} ms while {a.call} was still running",
                    {"batch": batch_run.index, "call": a.call, "returned_at_ms": batch_run.end_ms,
                     "call_ended_at_ms": None if a.end_t == float("inf") else a.end_t}, Kind.LIVENESS)


def _interrupts(facts: RunFacts) -> Iterator[Violation]:
    for t, seq, batch, grace in facts.interrupts:
        for a in facts.attempts:
            if a.batch != batch:
                continue
            if a.start_seq > seq:
                yield Violation("start-after-interrupt",
                                f"{a.call} started at {a.start_t} ms, after the user interrupt at {t} ms",
                                {"call": a.call, "interrupt_at_ms": t, "started_at_ms": a.start_t}, Kind.LIVENESS)
            elif a.settled_t > t + grace:
                settled = None if a.settled_t == float("inf") else a.settled_t
                yield Violation("grace-exceeded",
                                f"{a.call} was still running {grace} ms after the interrupt at {t} ms",
                                {"call": a.call, "interrupt_at_ms": t, "grace_ms": grace, "settled_at_ms": settled},
                                Kind.LIVENESS)
