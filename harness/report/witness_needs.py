"""What a violation's witness rests on: the facts of the run, decided by a random draw, that it
needs (one rule per label), before any probability is put on them.

A need is a fact of the run that the witness rests on and that a random draw decided:
- an attempt was still running at a moment T (it outlived its timeout; it had not ended when another
  call started, when its batch returned, when the grace period ended). Its work ends at most its
  latency after its start, so its drawn latency was at least T minus its start (never computed for
  a tool that holds file locks or delegates: waiting, not latency, may have kept it running);
- an attempt met an injected failure (the call's failure rate), or the transport delivered it twice
  (the fault plan's duplicate-delivery rate).

The rules, one sentence per label:
- ghost-effect: every attempt of the call up to the first whose effect landed ended without success,
  abandoned while still running or by an injected failure;
- duplicate-effect: the second attempt with an effect exists, so every attempt before it ended
  without success (as above); one attempt that landed twice was delivered twice;
- lost-update, stale-read, torn-read, future-read, reordered-effect (and cross-agent-*): a racing
  touch of the call that started later came before one of the call that started first, so the first
  was still running when the later one started (nothing, if they started together; a future-read of
  a result: the producer was still running when the consumer started); an attempt after the first
  adds how its predecessors ended;
- exclusivity: the call that started first was still running when the other started;
- cap-exceeded (exactly one call over the cap): every running call but the last to start was still
  running then;
- grace-exceeded: the call was still running when the grace period ended;
- orphaned-call: the call was still running when its batch returned.
Every other label: not computed. A retry is taken to exist because its predecessor failed or timed out.

Owns the rules (`rule`, `RULED`) and the view of the run's attempts and abandonments they read
(`AttemptView`); the racing touches come from `harness.report.races`. It gives back raw needs
(`Running`, `Fault`) and notes; their probabilities are `harness.report.likelihood`'s. It reads a
finished run; it never runs anything and never steers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.faults.tails import in_ms
from harness.oracles.facts import Attempt, RunFacts
from harness.oracles.verdict import Violation
from harness.report.races import racing_touches
from harness.run import RunResult

#: The labels that have a rule (see the module docstring); others are not computed.
RACES = ("lost-update", "stale-read", "torn-read", "future-read", "reordered-effect", "cross-agent-lost-update",
         "cross-agent-stale-read")
RULED = ("ghost-effect", "duplicate-effect", *RACES, "exclusivity", "cap-exceeded", "grace-exceeded",
         "orphaned-call")

_TIMED_OUT = re.compile(r"timed out after (\d+) ms")


@dataclass(frozen=True, slots=True)
class Running:
    """A need on a latency: the attempt was still running at `until_t` (`fixed`: the same moment in
    every run, a timeout counted from its own start)."""

    attempt: Attempt
    until_t: int
    because: str
    fixed: bool


@dataclass(frozen=True, slots=True)
class Fault:
    """A need on an injected fault: the attempt failed by one, or was delivered twice."""

    kind: str  # "failure" or "duplicate-delivery"
    attempt: Attempt
    because: str


@dataclass
class Found:
    """What a rule found: the raw needs, and the facts that needed no draw, in words."""

    raw: list[Running | Fault] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class AttemptView:
    """The run's attempts and abandonments, as the rules ask for them."""

    def __init__(self, result: RunResult) -> None:
        self.result = result
        self.facts = RunFacts.of(result)
        self.by_key: dict[tuple[str, int], Attempt] = {}
        for a in self.facts.attempts:
            if a.opened:
                self.by_key.setdefault((a.call, a.attempt), a)
        self.reasons = {(e["call"], e["attempt"]): str(e.get("reason") or "") for e in result.trace
                        if e["ev"] == "abandon"}

    def attempt(self, call: str, number: int) -> Attempt | None:
        return self.by_key.get((call, number))

    def running_at(self, call: str, t: int) -> Attempt | None:
        """The call's attempt that was running at `t` (the last started at or before it)."""
        started = [a for a in self.facts.attempts_of(call) if a.opened and a.start_t <= t]
        return max(started, key=lambda a: (a.start_t, a.start_seq)) if started else None

    def unsuccessful(self, found: Found, call: str, upto: int) -> None:
        """How attempts 1..upto of `call` ended without success, as needs: abandoned while still
        running, or an injected failure (a tool's own error and a rate limit need no draw)."""
        for number in range(1, upto + 1):
            a = self.attempt(call, number)
            if a is None:
                continue
            if a.abandoned_t is not None and a.abandoned_seq is not None and a.abandoned_seq < a.end_seq:
                reason = self.reasons.get((call, number), "")
                timed = _TIMED_OUT.search(reason)
                if timed is not None and a.abandoned_t - a.start_t == int(timed.group(1)):
                    because = f"outlived its {in_ms(int(timed.group(1)))} timeout"
                    found.raw.append(Running(a, a.abandoned_t, because, True))
                else:
                    because = (f"was still running when it was abandoned as {a.abandoned_as or 'failed'} at "
                               f"{in_ms(a.abandoned_t)}")
                    found.raw.append(Running(a, a.abandoned_t, because, False))
            elif a.fault == "failure":
                found.raw.append(Fault("failure", a, f"attempt {number + 1} exists: attempt {number} failed"))

    def overlap(self, found: Found, a: Attempt, b: Attempt, interleaved: bool = True) -> None:
        """Two attempts' windows overlapped: the one that started first was still running when the
        other started (`interleaved`: a touch of the later one came before one of the first)."""
        first, later = (a, b) if (a.start_t, a.start_seq) <= (b.start_t, b.start_seq) else (b, a)
        if first.start_t == later.start_t:
            found.notes.append(f"{first.call} and {later.call} started together (at {in_ms(first.start_t)}): "
                               "their windows overlap whatever their latencies")
        elif not interleaved:
            found.notes.append(f"the racing touches came in the order {first.call} and {later.call} started: "
                               "the scheduler's order, no latency")
        else:
            found.raw.append(Running(first, later.start_t,
                                      f"was still running when {later.call} started, "
                                      f"{in_ms(later.start_t - first.start_t)} after it", False))


def _effect_attempts(view: AttemptView, call: str, target: str | None, effects: list[Mapping[str, Any]] | None
                     ) -> list[int]:
    """The attempt numbers of a call whose mutating touches the witness names, in order."""
    numbers: set[int] = set()
    for touch in view.facts.touches_of(call):
        if not touch.mutating:
            continue
        if effects is not None:
            if any(touch.t == e.get("t") and touch.target == e.get("target") and touch.op == e.get("op")
                   for e in effects):
                numbers.add(touch.attempt)
        elif touch.target == target and touch.op == "append":
            numbers.add(touch.attempt)
    return sorted(numbers)


def rule(label: str, w: Mapping[str, Any], view: AttemptView) -> Found | str:
    """The needs of a witness, or why none are computed."""
    found = Found()
    if label == "ghost-effect":
        numbers = _effect_attempts(view, w["call"], None, list(w["effects"]))
        if not numbers:
            return "the witness's effects are not in the trace"
        view.unsuccessful(found, w["call"], numbers[0])
        if not found.raw:
            found.notes.append(f"{w['call']} was reported {w.get('reported')} without being abandoned while running "
                               "or failing by an injected failure: no draw decided that")
        return found
    if label == "duplicate-effect":
        if "attempts" in w:
            call, numbers = w["call"], sorted(int(n) for n in w["attempts"])
        elif "ledger" in w or "duplicated" in w:
            call = w["duplicated"] if "duplicated" in w else w["call"]
            target = w["target"] if "duplicated" in w else f"ledger:{w['ledger']}"
            numbers = _effect_attempts(view, call, target, None)
        else:
            return "the witness names no attempts"
        if len(numbers) >= 2:
            view.unsuccessful(found, call, numbers[1] - 1)
        elif len(numbers) == 1:
            a = view.attempt(call, numbers[0])
            if a is None or "duplicate_delivery" not in a.injected:
                return "one attempt landed twice without a duplicate delivery"
            found.raw.append(Fault("duplicate-delivery", a, "landed twice from one request"))
            view.unsuccessful(found, call, numbers[0] - 1)
        else:
            return "the witness's effects are not in the trace"
        return found
    if label in RACES:
        return _race(label, w, view, found)
    if label == "exclusivity":
        start = int(w["overlap_ms"][0])
        a, b = view.running_at(w["call"], start), view.running_at(w["other"], start)
        if a is None or b is None:
            return "the overlapping attempts are not in the trace"
        view.overlap(found, a, b)
        return found
    if label == "cap-exceeded":
        running, t = list(w["running"]), int(w["t"])
        if len(running) != int(w["cap"]) + 1:
            return f"{len(running)} calls ran at once, more than one over the cap: no single set of them is needed"
        attempts = [view.running_at(call, t) for call in running]
        if any(a is None for a in attempts):
            return "the running attempts are not in the trace"
        for a in attempts:
            assert a is not None
            if a.start_t < t:
                found.raw.append(Running(a, t, f"was still running at {in_ms(t)}, when the cap was exceeded", False))
        if not found.raw:
            found.notes.append(f"all {len(running)} started at {in_ms(t)}: no latency decided that")
        return found
    if label == "grace-exceeded":
        end = int(w["interrupt_at_ms"]) + int(w["grace_ms"])
        a = view.running_at(w["call"], end)
        if a is None:
            return "the attempt is not in the trace"
        found.raw.append(Running(a, end, f"was still running when the grace period ended ({in_ms(end)})", False))
        view.unsuccessful(found, a.call, a.attempt - 1)
        return found
    if label == "orphaned-call":
        returned = int(w["returned_at_ms"])
        a = view.running_at(w["call"], returned)
        if a is None:
            return "the attempt is not in the trace"
        found.raw.append(Running(a, returned, f"was still running when batch {w['batch']} returned "
                                               f"({in_ms(returned)})", False))
        view.unsuccessful(found, a.call, a.attempt - 1)
        return found
    return f"not computed for {label}"


def _race(label: str, w: Mapping[str, Any], view: AttemptView, found: Found) -> Found | str:
    """Two calls raced: the one that started first was still running when the other started."""
    if "consumer" in w:  # data flow: the consumer started before its producer had ended
        consumer = view.running_at(w["consumer"], int(w["started_at_ms"]))
        producer = view.running_at(w["producer"], int(w["started_at_ms"]))
        if consumer is None or producer is None:
            return "the racing attempts are not in the trace"
        view.overlap(found, producer, consumer)
        view.unsuccessful(found, producer.call, producer.attempt - 1)
        return found
    by_seq = {touch.seq: touch for touch in view.facts.touches}
    groups: dict[tuple[str, int], list[int]] = {}
    for picked in racing_touches(Violation(label, "", w), view.result):
        touch = by_seq.get(picked["seq"])
        if touch is not None:
            groups.setdefault((touch.call, touch.attempt), []).append(touch.seq)
    attempts = [(view.attempt(call, number), seqs) for (call, number), seqs in groups.items()]
    parties = [(a, seqs) for a, seqs in attempts if a is not None]
    if len({a.call for a, _ in parties}) < 2:
        return "the witness names no two racing calls"
    for i, (a, seqs_a) in enumerate(parties):
        view.unsuccessful(found, a.call, a.attempt - 1)
        for b, seqs_b in parties[i + 1:]:
            if a.call == b.call:
                continue
            first_seqs, later_seqs = ((seqs_a, seqs_b) if (a.start_t, a.start_seq) <= (b.start_t, b.start_seq)
                                      else (seqs_b, seqs_a))
            view.overlap(found, a, b, interleaved=min(later_seqs) < max(first_seqs))
    return found
