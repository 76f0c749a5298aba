"""Reported outcome versus what the call did: the protocol oracle's label `misreported-outcome`.

Owns the comparison of a call's reported outcome with the end of its attempts in the trace, both ways:

- *a success reported as a failure*: the call's last attempt ended `ok`, the scheduler held that
  result (the attempt was never abandoned, and it ended in an earlier millisecond than the answer)
  and it reported the call `error`, `timeout`, `cancelled` or `unknown` (hermes-agent once replaced
  every result of a parallel batch with "[Result unavailable]"). The model is told a call failed
  that succeeded: it loses the result and may retry the call or tell the user nothing happened;
- *a failure reported as a success*: the scheduler reported `ok` for a call whose attempts all
  failed, were abandoned or were still running when it answered, or whose change a rollback undid
  before it answered (the runtime restored a snapshot taken before the change, over a file it
  changed). The model acts on work that did not happen, or that is gone. (A call reported ok that
  never started is `fabricated-result`; one whose value another attempt or call produced is
  `mispaired-result`: the protocol oracle asks this module first and reports one label per result.)

What must not fire, and why it does not: a timeout, cancel, batch deadline, interrupt grace or crash
abandons the attempt (its later end is a detached ghost, which serializability judges), so the
scheduler never held an `ok`; a retry is judged by the last attempt the scheduler started (attempt 1
timed out and landed later, attempt 2 failed: the error is what the runtime saw); a call that never
started (skipped, denied, refused, given up while waiting for approval, over a same-signature
limit) has no attempt to compare (`dropped-call` and `fabricated-result` judge those); a call still
running when the scheduler answered is `orphaned-call`'s. `unknown` for a call that ended ok is
accepted when an earlier attempt of it was abandoned (a careful runtime cannot tell how often it
landed), and any failure when a rollback after the call ended restored a file it touched (its
effect, or what it read, is gone).

A call that ended in the very millisecond the scheduler answered is not judged: the scheduler may
have given up on it on a timer due in that millisecond (an executor's `wait_for` whose timeout falls
on the tool's return, a poll that sees the interrupt), and no trace event tells that apart from a
dropped result. So a batch whose calls all end together and are all stubbed out is missed; with
varied latencies every call but the last is caught. A tie in the middle of a batch (a timer due in
the millisecond the call ended, the answer later) is judged like a dropped result: the context's own
timeouts (`with_timeout`, `settle`, the execution policy) resolve such a tie to the call's result,
while a bridged executor's loop may see its timer first. It never looks at the world and never
steers a run.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from harness.model import CallResult, Outcome
from harness.oracles.facts import Attempt, RunFacts
from harness.oracles.verdict import Violation

LABEL = "misreported-outcome"


def reported_failed(facts: RunFacts, index: int, result: CallResult) -> Violation | None:
    """The violation when `result` (not ok, reported by batch `index`) hides an `ok` the scheduler held."""
    attempts = facts.opened_attempts(result.call_id)
    if not attempts:
        return None  # never started: nothing ran to misreport
    last = attempts[-1]  # the last attempt the scheduler started (attempts are in trace order)
    # Ended in an earlier millisecond than the answer: a call that ended in the very millisecond the
    # scheduler answered may have lost a tie with the scheduler's own timer (a real `wait_for` whose
    # timeout falls on the tool's return reports a timeout), which the trace cannot tell apart.
    if last.outcome != Outcome.OK.value or last.abandoned_t is not None \
            or not last.end_t < facts.result.batches[index].end_ms:
        return None
    if result.outcome is Outcome.UNKNOWN and any(a.abandoned_t is not None for a in attempts[:-1]):
        return None  # an earlier attempt was given up on and may have landed too: "unknown" is honest
    if _rolled_back_after(facts, last, facts.batch_end_seq.get(index, 1 << 62)):
        return None
    error = f" ({result.error!r})" if result.error else ""
    return Violation(
        LABEL,
        f"{result.call_id} ended ok at {int(last.end_t)} ms (attempt {last.attempt}) but batch {index} "
        f"reported it as {result.outcome.value}{error}",
        {**_what_it_did(facts, index, result, last), "reported_error": result.error})


def reported_ok(facts: RunFacts, index: int, result: CallResult, attempts: Iterable[Attempt]) -> Violation | None:
    """The violation when `result` (ok, reported by batch `index`) belongs to a call none of whose
    started `attempts` ever ended ok."""
    attempts = list(attempts)
    if not attempts:
        return None  # never started: fabricated-result
    succeeded = [a for a in attempts if a.outcome == Outcome.OK.value]
    if succeeded:  # mispaired-result judges the value; here only whether a rollback undid it
        return undone_before_answer(facts, index, result, succeeded[-1])
    last = attempts[-1]
    witness = _what_it_did(facts, index, result, last)
    if witness["actual"] is None:
        did = "was still running when the batch returned"
    elif witness["abandoned"]:
        did = f"was abandoned as {witness['actual']} at {witness['ended_at_ms']} ms"
    else:
        did = f"ended {witness['actual']} at {witness['ended_at_ms']} ms"
    return Violation(
        LABEL,
        f"{result.call_id} was reported ok by batch {index} but none of its attempts succeeded: "
        f"attempt {last.attempt} {did}",
        {**witness, "actual_error": None if witness["abandoned"] or witness["actual"] is None else last.error})


def undone_before_answer(facts: RunFacts, index: int, result: CallResult, attempt: Attempt) -> Violation | None:
    """The violation when a rollback after `attempt` ended and before batch `index` answered restored,
    to a snapshot taken before the attempt's first change, a file the attempt changed."""
    answered = facts.batch_end_seq.get(index, 1 << 62)
    changed = [t for t in facts.touches_of(attempt.call, attempt.attempt) if t.mutating and t.target.startswith("/")]
    if not changed:
        return None
    for e in facts.result.trace:
        if e["ev"] != "rollback" or not attempt.end_seq < e["seq"] < answered:
            continue
        if not 0 <= e.get("checkpoint_seq", -1) < changed[0].seq:
            continue
        scope = set(e["paths"]) if e.get("paths") is not None else None
        undone = next((t for t in changed if scope is None or t.target in scope), None)
        if undone is not None:
            return Violation(
                LABEL,
                f"{result.call_id} was reported ok by batch {index} but the rollback to checkpoint {e['checkpoint']} "
                f"at {e['t']} ms, before the answer, undid its change to {undone.target}",
                {**_what_it_did(facts, index, result, attempt), "actual_error": None,
                 "rolled_back_at_ms": e["t"], "checkpoint": e["checkpoint"], "target": undone.target})
    return None


def _what_it_did(facts: RunFacts, index: int, result: CallResult, last: Attempt) -> dict[str, Any]:
    """The witness: the call, what the scheduler reported and when, and what its last attempt did.
    `actual` is the attempt's end as the scheduler could see it when it answered: its outcome, the
    outcome it was abandoned with, or None when it was still running."""
    answered = facts.batch_end_seq.get(index, 1 << 62)
    if last.abandoned_seq is not None and last.abandoned_seq < answered:
        actual: str | None = last.abandoned_as
        ended: int | None = last.abandoned_t
    elif last.outcome is not None and last.end_seq < answered:
        actual, ended = last.outcome, int(last.end_t)
    else:
        actual, ended = None, None
    return {"batch": index, "call": result.call_id, "tool": last.tool, "reported": result.outcome.value,
            "reported_at_ms": facts.result.batches[index].end_ms, "actual": actual, "attempt": last.attempt,
            "ended_at_ms": ended, "abandoned": last.abandoned_seq is not None and last.abandoned_seq < answered}


def _rolled_back_after(facts: RunFacts, attempt: Attempt, answered: int) -> bool:
    """Whether a rollback between the attempt's end and the answer restored a file it touched: the
    runtime undid its effect, or the state it read, so a failure is an honest report."""
    rollbacks = [e for e in facts.result.trace
                 if e["ev"] == "rollback" and attempt.end_seq < e["seq"] < answered]
    if not rollbacks:
        return False
    files = {t.target for t in facts.touches_of(attempt.call, attempt.attempt) if t.target.startswith("/")}
    return bool(files) and any(e.get("paths") is None or files & set(e["paths"]) for e in rollbacks)
