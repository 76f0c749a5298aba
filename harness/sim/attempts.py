"""A trace's attempts, read event by event: what each call's attempts did and when, as the trace tells it.

Owns `Attempt` and `AttemptReader`, the one reading of the attempt lifecycle events (`start`, `end`,
`faults`, `background`, `abandon`) and of the few other events judging asks about (`batch`,
`batch_end`, `interrupt`, `skip`, `crash`). The reader takes a trace in as many pieces as it comes:
whole, after a run (`harness.oracles.facts`), or a stretch at a time while a large run records it
(`Kernel.run_until`), while the stretch is still in the processor's cache. A 100,000-call run's
trace is some 550,000 events and 150 MB; read after the run, every event is a miss to main memory,
and that was most of what made judging such a run cost three times as much per call as judging a
small one. Both ways give the same attempts, field for field: the code is the same.

It never judges and never changes an event: it only reads what the trace says.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from harness.sim.realtime import WallClockExceeded
from harness.sim.trace import TraceEvent


@dataclass(slots=True)
class Attempt:
    call: str
    attempt: int
    tool: str
    start_t: int
    start_seq: int
    batch: int
    key: str | None = None
    end_t: float = math.inf  # when it really stopped running (inf: never, within the run)
    end_seq: int = 1 << 62
    outcome: str | None = None
    error: str | None = None
    fault: str | None = None  # set when the harness injected the failure
    value_digest: str | None = None
    injected: tuple[str, ...] = ()  # fault-plan faults this attempt met (torn_write, duplicate_delivery)
    abandoned_t: int | None = None  # when the scheduler gave up on it, if it did
    abandoned_seq: int | None = None
    abandoned_as: str | None = None  # the outcome the scheduler gave it then (timeout, cancelled, unknown)
    # False while the trace has not recorded its start: a handle abandoned in the instant it was
    # started (its process records `start` right after), or one a crashed runtime never ran.
    opened: bool = True
    #: When the tool itself reported its result and went on in the background (`terminal(background=True)`).
    background_t: int | None = None
    background_seq: int | None = None

    @property
    def settled_t(self) -> float:
        """When the scheduler stopped waiting for it: abandonment, its result reported by a process
        that runs on in the background, or its end."""
        if self.abandoned_t is not None:
            return self.abandoned_t
        return self.background_t if self.background_t is not None else self.end_t

    @property
    def settled_seq(self) -> int:
        """The trace position of that moment (orders events of one instant)."""
        if self.abandoned_seq is not None:
            return self.abandoned_seq
        return self.background_seq if self.background_seq is not None else self.end_seq


#: How many keys an ok `end` event has as the context writes it (t, seq, ev, call, attempt, outcome,
#: vd): such an event has no error, fault or tool_code to ask for (tests set it to -1: never so).
OK_END_KEYS = 7

#: How many keys a `start` event has as the context writes it (t, seq, ev, call, tool, attempt): one
#: with no idempotency `key` (tests set it to -1: never so).
START_KEYS = 6


def _register(latest: dict[str, Attempt], older: dict[tuple[str, int], Attempt], a: Attempt) -> None:
    """`a` is now the attempt found by its call and number: the one it replaces as its call's latest
    stays findable by its own number (unless `a` has that number too: then `a` replaces it)."""
    before = latest.get(a.call)
    if before is not None and before.attempt != a.attempt:
        older[(a.call, before.attempt)] = before
    latest[a.call] = a


class AttemptReader:
    """Reads a trace's events in order, in one piece or several (`feed`), into its attempts and the
    other facts listed below. `tool_of` names the tool of a call whose events come before its start
    (or without one); `owner`, on a run of several agents, maps each call to its batch (their batches
    overlap in time: an attempt belongs to its call's batch, not to the one that began last)."""

    __slots__ = ("_batch", "_ended", "_kinds", "_older", "_owner", "_started", "_tool_of", "_touched",
                 "attempts", "batch_end_seq", "crash_t", "fed", "interrupts", "keyed", "last", "latest", "skipped",
                 "skips", "tool_code")

    def __init__(self, tool_of: Callable[[str], str], owner: Mapping[str, int] | None = None) -> None:
        self._tool_of = tool_of
        self._owner = owner
        #: Every attempt, in the order the trace first mentions it.
        self.attempts: list[Attempt] = []
        self.interrupts: list[tuple[int, int, int, int]] = []  # (t, seq, batch, grace)
        #: Batch index -> seq of its `batch_end` event (when the scheduler's answer was taken).
        self.batch_end_seq: dict[int, int] = {}
        self.skipped: set[str] = set()
        #: Every `skip` event, in trace order: (t, seq, call, reason).
        self.skips: list[tuple[int, int, str, str]] = []
        #: When the runtime crashed (the fault plan's crash), if it did.
        self.crash_t: int | None = None
        #: Whether an attempt ended in an error of a user's tool's own code (an `end` marked `tool_code`).
        self.tool_code = False
        #: Whether any attempt's start carries an idempotency key.
        self.keyed = False
        #: Each call's latest attempt (with `_older`, how an event finds its attempt by call and number).
        self.latest: dict[str, Attempt] = {}
        self._older: dict[tuple[str, int], Attempt] = {}
        self._kinds: set[str] = set()
        self._touched = self._started = self._ended = False
        self._batch = -1
        #: How many events have been read, and the last of them (what a trace must end with to be the
        #: one these facts were read from).
        self.fed = 0
        self.last: TraceEvent | None = None

    @property
    def kinds(self) -> frozenset[str]:
        """Every kind of event (`ev`) read so far."""
        kinds = set(self._kinds)
        for seen, kind in ((self._touched, "touch"), (self._started, "start"), (self._ended, "end")):
            if seen:
                kinds.add(kind)
        return frozenset(kinds)

    def read(self, events: Sequence[TraceEvent]) -> bool:
        """Whether these facts were read from exactly `events` (the whole trace, no more): the same
        number of events, ending with the same one. A trace is a tuple a run made once; a result
        holding another (`dataclasses.replace`) is read again."""
        return self.fed == len(events) and (self.last is None or self.last is events[-1])

    def feed(self, events: Sequence[TraceEvent]) -> None:
        """Read `events` from the first not yet read: `events` is the trace so far, a longer one each
        time (the recorder's growing list, or the whole trace at once)."""
        start = self.fed
        if start >= len(events):
            return
        piece = events if start == 0 else events[start:]
        # Attempts are found by (call, attempt number) as their events come. Nearly every call has
        # one attempt: `latest` holds each call's latest one by call id (no tuple key made per event)
        # and `older` any other still to be found.
        latest, older = self.latest, self._older
        tool_of, owner = self._tool_of, self._owner
        kinds = self._kinds
        touched, started, ended = self._touched, self._started, self._ended
        batch = self._batch
        attempts = self.attempts

        def placeholder(e: TraceEvent) -> Attempt:
            # An event for an attempt whose start is not (yet) in the trace. It still counts, as an
            # attempt that occupied no time, so that what happened to it is judged.
            call = e["call"]
            a = Attempt(call, e["attempt"], tool_of(call), e["t"], e["seq"],
                        batch if owner is None else owner.get(call, batch), end_t=e["t"], end_seq=e["seq"],
                        opened=False)
            _register(latest, older, a)
            attempts.append(a)
            return a

        def find(e: TraceEvent) -> Attempt | None:
            # `open_attempts.get((call, attempt))`, the latest attempt registered with that key.
            a = latest.get(e["call"])
            return a if a is not None and a.attempt == e["attempt"] else older.get((e["call"], e["attempt"]))

        try:
            for e in piece:
                ev = e["ev"]
                if ev == "touch":  # most of a trace: asked first (touches are read by whoever asks)
                    touched = True
                elif ev == "end":
                    ended = True
                    call = e["call"]
                    a_or_none = latest.get(call)
                    a = (a_or_none if a_or_none is not None and a_or_none.attempt == e["attempt"]
                         else older.get((call, e["attempt"])) or placeholder(e))
                    a.end_t, a.end_seq, a.outcome = e["t"], e["seq"], e["outcome"]
                    if len(e) == OK_END_KEYS and "vd" in e:
                        # An ok end as the context writes it: t, seq, ev, call, attempt, outcome and vd
                        # only (no error, fault or tool_code), read without asking for each absent key.
                        a.error = a.fault = None
                        a.value_digest = e["vd"]
                    else:
                        a.error, a.value_digest, a.fault = e.get("error"), e.get("vd"), e.get("fault")
                        if e.get("tool_code"):
                            self.tool_code = True
                elif ev == "start":
                    # Always a new attempt: the context never traces the start of an attempt it
                    # abandoned first (it never runs), so an earlier unopened one is another handle's.
                    started = True
                    call = e["call"]
                    a = Attempt(call, e["attempt"], e["tool"], e["t"], e["seq"],
                                batch if owner is None else owner.get(call, batch))
                    if len(e) != START_KEYS:  # the context writes `key` only when there is one
                        key = e.get("key")
                        if key is not None:
                            a.key = key
                            self.keyed = True
                    attempts.append(a)
                    if call in latest:
                        _register(latest, older, a)
                    else:
                        latest[call] = a
                else:
                    kinds.add(ev)
                    if ev == "batch":
                        batch = e["index"]
                    elif ev == "faults":
                        a = find(e) or placeholder(e)
                        a.injected = tuple(e["kinds"])
                    elif ev == "background":
                        a = find(e) or placeholder(e)
                        a.background_t, a.background_seq = e["t"], e["seq"]
                    elif ev == "abandon":
                        found = find(e)
                        # A second abandon of the same attempt number is a second handle (a scheduler
                        # that started the same attempt twice), never a re-abandon: a settled handle
                        # cannot be.
                        a = found if found is not None and found.abandoned_t is None else placeholder(e)
                        a.abandoned_t, a.abandoned_seq, a.abandoned_as = e["t"], e["seq"], e.get("outcome")
                    elif ev == "interrupt":
                        self.interrupts.append((e["t"], e["seq"], e["index"], e["grace_ms"]))
                    elif ev == "batch_end":
                        self.batch_end_seq[e["index"]] = e["seq"]
                    elif ev == "skip":
                        self.skipped.add(e["call"])
                        self.skips.append((e["t"], e["seq"], e["call"], e.get("reason") or ""))
                    elif ev == "crash":
                        self.crash_t = e["t"]
        finally:
            self._touched, self._started, self._ended = touched, started, ended
            self._batch = batch
        self.fed, self.last = len(events), events[-1]

    def catch_up(self, events: Sequence[TraceEvent]) -> bool:
        """`feed(events)` for a run reading its own trace: False when an event is one it cannot read
        (one a scheduler recorded itself, without the runner's fields), and the reader is then to be
        dropped, part read: judging reads the whole trace itself, and fails there as it would have.
        The watchdog's expiry, Ctrl-C and the like go on up, as from anywhere else in the run."""
        try:
            self.feed(events)
        except WallClockExceeded:
            raise
        except Exception:
            return False
        return True

    def attempts_by_call(self) -> dict[str, Attempt] | None:
        """Call id -> its one attempt, in trace order, when no call has two (nor two handles of one):
        `latest` is then that index already. None otherwise."""
        return self.latest if len(self.latest) == len(self.attempts) else None
