"""Liveness: the turn ends, and ends on time.

Owns the labels `hang` (the scheduler did not return within the virtual-time bound or the event
budget, or deadlocked; the witness names the calls started and still pending and the calls that
never started), `orphaned-call` (the scheduler returned, raised or broke the contract while a call it
started was still running and had not been abandoned: its result can only arrive in a later turn, or
never), `start-after-interrupt` and `grace-exceeded` (after a user interrupt, no call may start, and
running calls must end or be abandoned within the grace period).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from harness.oracles.facts import Attempt, RunFacts
from harness.oracles.verdict import Kind, Verdict, Violation
from harness.run import RunResult, RunStatus

NAME = "liveness"


def check(result: RunResult) -> Verdict:
    facts = RunFacts.of(result)
    violations: list[Violation] = []
    if result.status is RunStatus.HANG:
        violations.append(_hang(facts))
    violations.extend(_orphans(facts))
    violations.extend(_interrupts(facts))
    return Verdict.of(NAME, violations)


def _hang(facts: RunFacts) -> Violation:
    """The hung batch's witness names what it was waiting for: `pending`, calls started and still
    unsettled when the run stopped; `never_started`, calls of the batch that never started and got
    no result (a deadlock before a call is the usual cause); `skipped`, calls the scheduler decided
    not to run but never reported; `waits`, what each unfinished call waited on, and `deadlock`, the
    lock cycle among them if any (harness.schedulers.waits)."""
    batch_run = facts.result.batches[-1]
    reported = {r.call_id for r in batch_run.results}
    pending = list(dict.fromkeys(a.call for a in facts.attempts
                                 if a.batch == batch_run.index and a.opened and a.settled_t > batch_run.end_ms))
    unstarted = [c for c in batch_run.batch.ids if not facts.started(c) and c not in reported]
    never_started = [c for c in unstarted if c not in facts.skipped]
    skipped = [c for c in unstarted if c in facts.skipped]
    message = facts.result.error or "the scheduler did not return"
    if never_started:
        message += f"; never started: {', '.join(never_started)}"
    witness = {"batch": batch_run.index, "stopped_at_ms": batch_run.end_ms, "stop": batch_run.stop.value,
               "pending": pending, "never_started": never_started, "skipped": skipped}
    if batch_run.waits is not None:  # read from the live simulation at the hang (harness.schedulers.waits)
        witness["waits"] = [wait.line() for wait in batch_run.waits.waits]
        witness["deadlock"] = list(batch_run.waits.cycle)
    return Violation("hang", message, witness, Kind.LIVENESS)


#: Batches whose scheduler stopped on its own (returned, raised, or broke the contract): a call it
#: started and left running is orphaned. A hang has no end to be orphaned by (its witness lists the
#: pending calls) and a crash abandons every call itself, so neither is judged here.
_ENDED = {RunStatus.COMPLETED: "returned", RunStatus.SCHEDULER_ERROR: "raised",
          RunStatus.CONTRACT_ERROR: "broke the contract"}


def _orphans(facts: RunFacts) -> Iterator[Violation]:
    # Each batch's attempts, in trace order, gathered once (not a scan of every attempt per batch).
    by_batch: dict[int, list[Attempt]] = {}
    for a in facts.attempts:
        by_batch.setdefault(a.batch, []).append(a)
    for batch_run in facts.result.batches:
        how = _ENDED.get(batch_run.status)
        if how is None:
            continue
        # By trace position, not time: a call still running when the scheduler's answer was taken
        # is orphaned even if it ends in the same millisecond.
        returned_seq = facts.batch_end_seq.get(batch_run.index, 1 << 62)
        for a in by_batch.get(batch_run.index, ()):
            if a.settled_seq > returned_seq:
                yield Violation(
                    "orphaned-call",
                    f"batch {batch_run.index} {how} at {batch_run.end_ms} ms while {a.call} was still running",
                    {"batch": batch_run.index, "call": a.call, "status": batch_run.status.value,
                     "returned_at_ms": batch_run.end_ms,
                     "call_ended_at_ms": None if a.end_t == math.inf else a.end_t}, Kind.LIVENESS)


def _interrupts(facts: RunFacts) -> Iterator[Violation]:
    for t, seq, batch, grace in facts.interrupts:
        for a in facts.attempts:
            if a.batch != batch or not a.opened:
                continue  # an attempt abandoned before it started neither started nor ran
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
