"""Liveness: the turn ends, and ends on time.

Owns the labels `hang` (the scheduler did not return within the virtual-time bound or the event
budget, or deadlocked; the witness names the calls started and still pending and the calls that
never started), `orphaned-call` (the scheduler returned, raised or broke the contract while a call it
started was still running and had not been abandoned: its result can only arrive in a later turn, or
never; the message says the runtime left it running after its turn ended or was cancelled, and
when it ended, if it did: a bridge lets what a runtime left behind run on, so its effects land in the
run), `start-after-interrupt` and `grace-exceeded` (after a user interrupt, no call may start, and
running calls must end or be abandoned within the grace period; a call that starts after the
interrupt is that, not also an orphan, even when it starts after its batch answered, as a leftover
task's call reported skipped does), and `dropped-call` (a call answered
"cancelled" without ever starting, though nothing had stopped the turn: no user interrupt, no crash,
no call that failed, was refused or was abandoned before it; a scheduler that skips work for no
reason would otherwise pass every safety check by doing nothing), and `loop-blocked` (the runtime held
its asyncio event loop, calling a sync tool on it or `time.sleep`, while other work on the loop was
ready: every other task of the turn, and of every session on that loop, waited; the bridge traces
each hold as `blocked`, see `harness.bridges.asyncio.blocking`. A tool's own synchronous
work before its first await is the tool's doing, not the runtime's, and is not judged).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from harness.model import Outcome
from harness.oracles.facts import Attempt, RunFacts
from harness.oracles.verdict import Kind, Verdict, Violation, passing
from harness.run import RunResult, RunStatus

NAME = "liveness"

#: The passing verdict, made once: handed out without calling `Verdict.of` (a classmethod call per
#: oracle per checked run).
_PASSED = passing(NAME)


def check(result: RunResult) -> Verdict:
    facts = RunFacts.of(result)
    violations: list[Violation] = []
    if result.status is RunStatus.HANG:
        violations.append(_hang(facts))
    if not _settled_in_time(facts):  # else `_orphans` finds nothing: not even its generator is made
        violations.extend(_orphans(facts))
    if facts.interrupts:  # `_interrupts` walks the interrupts only
        violations.extend(_interrupts(facts))
    violations.extend(_dropped(facts))
    if "blocked" in facts.kinds:  # only a bridged event loop records holds
        violations.extend(_loop_holds(result))
    return Verdict.of(NAME, violations) if violations else _PASSED


def _hang(facts: RunFacts) -> Violation:
    """The hung batches' witness names what they were waiting for: `pending`, calls started and still
    unsettled when the run stopped; `never_started`, calls of the batch that never started and got
    no result (a deadlock before a call is the usual cause); `skipped`, calls the scheduler decided
    not to run but never reported; `waits`, what each unfinished call waited on, and `deadlock`, the
    lock cycle among them if any (harness.run.hang).

    A run hangs in one batch, or, with several agents, in each agent's turn still running when it
    stopped (a deadlock between agents hangs both): `batches` lists them, `batch` is the first, and
    the calls and waits are those of all of them (a wait line then says its batch), as the hang
    report lists them."""
    hung = [b for b in facts.result.batches if b.status is RunStatus.HANG] or [facts.result.batches[-1]]
    pending: list[str] = []
    never_started: list[str] = []
    skipped: list[str] = []
    waits: list[str] = []
    deadlock: list[str] = []
    for batch_run in hung:
        reported = {r.call_id for r in batch_run.results}
        pending += dict.fromkeys(a.call for a in facts.attempts
                                 if a.batch == batch_run.index and a.opened and a.settled_t > batch_run.end_ms)
        unstarted = [c for c in batch_run.batch.ids if not facts.started(c) and c not in reported]
        never_started += [c for c in unstarted if c not in facts.skipped]
        skipped += [c for c in unstarted if c in facts.skipped]
        if batch_run.waits is not None:  # read from the live simulation at the hang (harness.run.hang)
            where = f"batch {batch_run.index}: " if len(hung) > 1 else ""
            waits += [where + wait.line() for wait in batch_run.waits.waits]
            deadlock = deadlock or list(batch_run.waits.cycle)  # a cycle across batches: each read the same
    message = facts.result.error or "the scheduler did not return"
    if never_started:
        message += f"; never started: {', '.join(never_started)}"
    first = hung[0]
    witness = {"batch": first.index, "batches": [b.index for b in hung], "stopped_at_ms": first.end_ms,
               "stop": first.stop.value, "pending": pending, "never_started": never_started, "skipped": skipped}
    if any(b.waits is not None for b in hung):
        witness["waits"] = waits
        witness["deadlock"] = deadlock
    return Violation("hang", message, witness, Kind.LIVENESS)


#: Batches whose scheduler stopped on its own (returned, raised, or broke the contract): a call it
#: started and left running is orphaned. A hang has no end to be orphaned by (its witness lists the
#: pending calls) and a crash abandons every call itself, so neither is judged here.
_ENDED = {RunStatus.COMPLETED: "returned", RunStatus.SCHEDULER_ERROR: "raised",
          RunStatus.CONTRACT_ERROR: "broke the contract"}


def _orphans(facts: RunFacts) -> Iterator[Violation]:
    # (`check` asks `_settled_in_time` first: when every attempt settled in time this finds nothing.)
    # Each batch's attempts, in trace order, gathered once (not a scan of every attempt per batch).
    by_batch: dict[int, list[Attempt]] = {}
    for a in facts.attempts:
        by_batch.setdefault(a.batch, []).append(a)
    interrupted = {batch: (t, seq) for t, seq, batch, _ in facts.interrupts}
    for batch_run in facts.result.batches:
        how = _ENDED.get(batch_run.status)
        if how is None:
            continue
        # By trace position, not time: a call still running when the scheduler's answer was taken
        # is orphaned even if it ends in the same millisecond.
        returned_seq = facts.batch_end_seq.get(batch_run.index, 1 << 62)
        interrupt = interrupted.get(batch_run.index)
        for a in by_batch.get(batch_run.index, ()):
            if a.settled_seq <= returned_seq:
                continue
            if interrupt is not None and a.opened and a.start_seq > interrupt[1]:
                continue  # it started after the user interrupt: `start-after-interrupt` says what happened
            ended = None if a.end_t == math.inf else a.end_t
            turn = (f"its turn was cancelled by the user interrupt at {interrupt[0]} ms" if interrupt is not None
                    else "its turn ended")
            later = f"it ended at {int(ended)} ms" if ended is not None else "it never ended within the run"
            witness: dict[str, object] = {"batch": batch_run.index, "call": a.call, "status": batch_run.status.value,
                                          "returned_at_ms": batch_run.end_ms, "call_ended_at_ms": ended}
            if interrupt is not None:
                witness["interrupt_at_ms"] = interrupt[0]
            if a.opened and a.start_seq > returned_seq:  # started later, by what the runtime left behind
                witness["started_at_ms"] = a.start_t
                message = (f"{a.call} was started at {a.start_t} ms by work the runtime left running after {turn} "
                           f"(batch {batch_run.index} {how} at {batch_run.end_ms} ms); {later}")
            else:
                message = (f"{a.call} was left running by the runtime after {turn}: batch {batch_run.index} {how} "
                           f"at {batch_run.end_ms} ms while {a.call} was still running; {later}")
            yield Violation("orphaned-call", message, witness, Kind.LIVENESS)


def _settled_in_time(facts: RunFacts) -> bool:
    """Whether every attempt of a batch `_orphans` judges settled by the time its answer was taken
    (then it reports nothing). The answer's trace position depends only on the batch's index."""
    answered = {b.index: facts.batch_end_seq.get(b.index, 1 << 62) for b in facts.result.batches
                if b.status in _ENDED}
    # A loop with `a.settled_seq` inlined, not all() over a generator of property calls: this runs
    # for every attempt of every checked run.
    for a in facts.attempts:
        by = answered.get(a.batch)
        if by is None:
            continue
        settled = a.abandoned_seq
        if settled is None:
            settled = a.background_seq if a.background_seq is not None else a.end_seq
        if settled > by:
            return False
    return True


def _interrupts(facts: RunFacts) -> Iterator[Violation]:
    skip_of = {call: (t, seq, reason) for t, seq, call, reason in facts.skips}
    for t, seq, batch, grace in facts.interrupts:
        for a in facts.attempts:
            if a.batch != batch or not a.opened:
                continue  # an attempt abandoned before it started neither started nor ran
            if a.start_seq > seq:
                message = f"{a.call} started at {a.start_t} ms, after the user interrupt at {t} ms"
                witness: dict[str, object] = {"call": a.call, "interrupt_at_ms": t, "started_at_ms": a.start_t}
                skipped = skip_of.get(a.call)
                if skipped is not None and skipped[1] < a.start_seq:
                    # Reported as never run, then run: the leftover task of a runtime that was told to stop.
                    message += f", though it had been reported skipped at {skipped[0]} ms ({skipped[2]!r})"
                    witness["skipped_at_ms"] = skipped[0]
                yield Violation("start-after-interrupt", message, witness, Kind.LIVENESS)
            elif a.settled_t > t + grace:
                settled = None if a.settled_t == float("inf") else a.settled_t
                yield Violation("grace-exceeded",
                                f"{a.call} was still running {grace} ms after the interrupt at {t} ms",
                                {"call": a.call, "interrupt_at_ms": t, "grace_ms": grace, "settled_at_ms": settled},
                                Kind.LIVENESS)


def _loop_holds(result: RunResult) -> Iterator[Violation]:
    """Holds of the event loop by the runtime (a sync tool called on it, `time.sleep`) that kept other
    work of the loop waiting."""
    for event in result.trace:
        if event["ev"] != "blocked" or event.get("by") not in ("sync-tool", "sleep") or not event.get("delayed"):
            continue
        what, since, held = event["what"], event["since"], event["held_ms"]
        ended = f"for {held} ms" if event.get("returned", True) else "and never returned"
        yield Violation(
            "loop-blocked",
            f"{what} held the event loop from {since} ms {ended} while other work on the loop was ready to run: "
            "every other task of the turn (and of every session on that loop) waited",
            {"what": what, "since_ms": since, "held_ms": held, "by": event["by"]}, Kind.LIVENESS)


def _dropped(facts: RunFacts) -> Iterator[Violation]:
    """Calls reported cancelled that never started, before anything in the run could explain it.

    What explains a skip, at or before it: the user interrupt (hermes skips the calls it has not
    started), the runtime's crash, a call that went wrong (ended in error or timeout, was abandoned
    as timed out or of unknown effect, as a batch deadline abandons the calls it stops, or was
    refused with an error, e.g. a tool marked unavailable), or a user who denied an approval. A
    runtime that cancels the rest of a batch once one call fails is doing what it says; a call the
    scheduler itself cancelled explains nothing. A runtime that declines calls for none of these (a
    cap that answers the excess "cancelled" instead of queueing it, a policy that skips every write)
    is reported, with the reason it gave."""
    dropped: dict[int, list[tuple[int, str, str]]] = {}
    candidates: list[tuple[int, int, str, str]] = []
    # The skip that made the reported answer is the call's last: a bridge may first refuse a call
    # (a denied approval, traced as a skip) and report it later as it stands then.
    skip_of = {call: (t, reason) for t, _, call, reason in facts.skips}
    cancelled = Outcome.CANCELLED
    for batch_run in facts.result.batches:
        for r in batch_run.results:
            if r.outcome is not cancelled or facts.started(r.call_id):
                continue
            # A skip traced by the context, or a cancelled result the scheduler made itself (then
            # the moment it answered is when the batch ended).
            t, reason = skip_of.get(r.call_id, (batch_run.end_ms, r.error or ""))
            candidates.append((batch_run.index, t, r.call_id, reason))
    if not candidates:
        return
    first_cause = _first_cause(facts)
    for index, t, call, reason in candidates:
        if t < first_cause:
            dropped.setdefault(index, []).append((t, call, reason))
    for index, calls in dropped.items():
        t, call, reason = calls[0]
        blames_interrupt = "interrupt" in reason.lower()
        message = (f"batch {index} answered {', '.join(c for _, c, _ in calls)} \"cancelled\" without starting "
                   f"{'it' if len(calls) == 1 else 'them'}, though nothing had stopped the turn "
                   f"(no user interrupt, crash, or failed, refused or abandoned call before {t} ms)")
        if blames_interrupt:
            message += f"; the answer {reason!r} blames a user interrupt that never happened"
        yield Violation("dropped-call", message,
                        {"batch": index, "calls": [c for _, c, _ in calls], "call": call,
                         "skipped_at_ms": t, "reason": reason}, Kind.LIVENESS)


def _first_cause(facts: RunFacts) -> float:
    """The earliest moment something in the run could explain a skip (inf: nothing ever did)."""
    causes: list[float] = [t for t, _, _, _ in facts.interrupts]
    if facts.crash_t is not None:
        causes.append(facts.crash_t)
    for a in facts.attempts:
        if a.abandoned_t is not None:
            # Given up on as timed out or of unknown effect; a plain "cancelled" is the scheduler's
            # own choice, which explains nothing (or a lazy one would excuse itself).
            if a.abandoned_as != "cancelled":
                causes.append(a.abandoned_t)
        elif a.outcome is not None and a.outcome not in ("ok", "cancelled"):
            causes.append(a.end_t)
    for t, _, call, _ in facts.skips:
        refused = facts.reported.get(call)
        if refused is not None and refused.outcome is Outcome.ERROR:
            causes.append(t)
    # A user who says no (read only here: a run with a cancelled, never-started call is rare).
    if "approval" in facts.kinds:
        causes.extend(e["t"] for e in facts.result.trace if e["ev"] == "approval" and e.get("answer") != "approve")
    return min(causes, default=math.inf)
