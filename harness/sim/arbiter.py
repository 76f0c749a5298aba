"""Order-first execution: steps, timers and faults happen in the order a chooser picks.

Owns the `Arbiter`, the `Chooser` protocol and `Tape`. In this mode a call does not sleep for a
latency: at each of its touch points it asks the arbiter for a step, and once every call that can ask
at the current instant has asked (at the end of the instant), the chooser picks one of them (the
*enabled* set) to proceed. An entry is the call id, or `call#N` for attempt N >= 2 (a retry may run
beside its abandoned first attempt).

Time is a choice too. Whenever a timer is pending in the kernel — a call timeout, `with_timeout`, a
batch deadline, the user interrupt, a grace period, a retry backoff, a poll interval, a scheduler's
own sleep, a fault plan's crash — the enabled set also holds `TIME`: picking it lets the clock run to
the earliest pending timer, which fires before any waiting call moves. So exploration covers "the
timer fires before / after this touch" while virtual time stays monotonic and timers keep their
deadline order (two timers fire in the order of their deadlines, with steps taking 1 ms each).
Against timers, a call's steps keep to its latency model: a step at fraction f of an attempt that
started at s lands in [s + f * min, s + f * max]. A step that must land before the next timer's
deadline disables `TIME`; one that cannot land before it is not enabled until the timer fired; a
granted step moves the clock to its earliest time (and never to or past the deadline), so time passes
as the calls' latencies say and timers set at fixed times (the interrupt, a crash, a batch deadline)
meet calls where real runs would. Deciding takes no time, so the clock after a set of steps does not
depend on their order. Among themselves, calls' steps may come in any order (latencies are abstracted
there: a call may be slower than its model relative to another call, never relative to a timer).

A bridged thread that can run (`@thread:NNN`, offered by the thread bridges) runs before the clock
moves: while one asks, only entries that can happen now are enabled — no step landing later, no timer.

Faults are choices where the chooser wants them: an attempt the scenario gives a chance (strictly
between 0 and 1) of failing, of being delivered twice or of tearing its write asks `fault()`; a
chooser with `choose_fault` decides (exhaustive search enumerates), others keep the seed's draw.

The sequence of picks is the run's order tape (call ids, `TIME`, and `FAULT`/`NO_FAULT` tokens for
decided faults): replaying it reproduces the run exactly. Virtual times in this mode count steps, not
latency, so never report latency statistics from it. It never decides what to pick: choosers do.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import simpy

from harness.sim.kernel import Kernel

#: The enabled-set entry that lets virtual time run to the next pending timer.
TIME = "@time"
#: Entries of threads a thread bridge runs (`@thread:001`): a switch to one is a choice like a step.
THREAD_PREFIX = "@thread:"
#: Prefixes of the tape entries for a decided fault: injected, or not.
FAULT = "@fault:"
NO_FAULT = "@ok:"


def fault_token(kind: str, call_id: str, attempt: int) -> str:
    """The name of one fault decision, without its prefix: `failure:call-3/1`."""
    return f"{kind}:{call_id}/{attempt}"


def fault_decision(entry: str) -> tuple[str, int] | None:
    """The (call id, attempt) of a tape entry that decides a fault (`@fault:KIND:CALL/ATTEMPT` or
    `@ok:...`, the inverse of `fault_token`), else None."""
    if not entry.startswith((FAULT, NO_FAULT)):
        return None
    call, _, attempt = entry.partition(":")[2].partition(":")[2].rpartition("/")
    return (call, int(attempt)) if call and attempt.isdigit() else None


def entry_of(call_id: str, attempt: int) -> str:
    """The enabled-set entry of an attempt's step: the call id, `call#N` for attempt N >= 2."""
    return call_id if attempt <= 1 else f"{call_id}#{attempt}"


def call_of(entry: str) -> str:
    """The call id of an enabled-set entry."""
    return entry.rpartition("#")[0] if "#" in entry and entry.rpartition("#")[2].isdigit() else entry


class Chooser(Protocol):
    """Picks which enabled entry (a call id, or `TIME`) takes the next step.

    A chooser may also define `choose_fault(token, drawn, step) -> bool | None` to decide injected
    faults (None: keep the seed's draw, and no decision is recorded) and `bind(arbiter)` to see the
    arbiter's requests (e.g. whether a step is the one that completes its call).
    """

    def choose(self, enabled: Sequence[str], step: int) -> str: ...


@dataclass(frozen=True, slots=True)
class Decision:
    enabled: tuple[str, ...]  # call ids in model order, then TIME; or the two tokens of a fault
    chosen: str
    #: The chosen call's step index within its current attempt (0 = its first step; 0 for TIME).
    step_of_call: int
    #: Virtual time of the decision.
    t: int = 0
    #: TIME only: the purposes of the timers that fired (timeout, interrupt, backoff, ...).
    fired: tuple[str, ...] = ()


@dataclass(slots=True)
class StepRequest:
    """A call waiting for its next step."""

    call_id: str
    attempt: int
    granted: simpy.Event
    #: True when the step is known to end the attempt (an injected failure's only step, a completion).
    final: bool = False
    #: The virtual times between which the latency model puts this step (for ordering against timers).
    earliest: int = 0
    latest: float = math.inf

    @property
    def entry(self) -> str:
        return entry_of(self.call_id, self.attempt)


class Arbiter:
    def __init__(self, kernel: Kernel, chooser: Chooser, positions: dict[str, int]) -> None:
        self.kernel = kernel
        self.chooser = chooser
        self.positions = positions
        self.pending: list[StepRequest] = []
        self.decisions: list[Decision] = []
        self.steps_taken: dict[tuple[str, int], int] = {}
        #: The faults decided by the chooser (token -> injected), for the exploration's scope.
        self.faults_decided: dict[str, bool] = {}
        self._wakeup: simpy.Event | None = None
        self._tick: simpy.Event | None = None  # the arbiter's own wait, never a timer to choose
        bind = getattr(chooser, "bind", None)
        if bind is not None:
            bind(self)
        kernel.env.process(self._loop())

    def step(self, call_id: str, attempt: int, *, final: bool = False, earliest: int = 0,
             latest: float = math.inf) -> simpy.Event:
        """The event a call waits on before its next touch point, which its latency model puts
        between `earliest` and `latest` (virtual ms)."""
        granted = self.kernel.env.event()
        self.pending.append(StepRequest(call_id, attempt, granted, final, earliest, latest))
        if self._wakeup is not None and not self._wakeup.triggered:
            self._wakeup.succeed()
        return granted

    def request(self, entry: str) -> StepRequest | None:
        """The pending request of an enabled-set entry at the current decision, if any."""
        return next((r for r in self.pending if r.entry == entry), None)

    def fault(self, kind: str, call_id: str, attempt: int, drawn: bool) -> bool:
        """Whether the fault `kind` hits this attempt: the chooser's decision, or `drawn`.

        Asked only where the scenario gives the fault a chance strictly between 0 and 1. The same
        token (e.g. a permanent failure, asked with attempt 0 by every attempt) is decided once."""
        token = fault_token(kind, call_id, attempt)
        if token in self.faults_decided:
            return self.faults_decided[token]
        choose = getattr(self.chooser, "choose_fault", None)
        decided = choose(token, drawn, len(self.decisions)) if choose is not None else None
        if decided is None:
            return drawn
        self.faults_decided[token] = bool(decided)
        chosen = (FAULT if decided else NO_FAULT) + token
        self.decisions.append(Decision((NO_FAULT + token, FAULT + token), chosen, 0, self.kernel.now))
        return bool(decided)

    def timer_pending(self) -> bool:
        """Whether some timer is pending (a call then makes its completion a step of its own, so the
        timer can be ordered against it)."""
        return self._next_timer() is not None

    def _next_timer(self) -> tuple[int, tuple[str, ...]] | None:
        """The deadline of the earliest pending timer someone waits on (within the time bound), and
        the purposes of the timers due then."""
        env = self.kernel.env
        now = env.now
        earliest: float | None = None
        purposes: list[str] = []
        # SimPy keeps its schedule as a heap of (time, priority, id, event); only timeouts lie in
        # the future. A timeout nobody waits on any more (its condition already fired) has no
        # callbacks: firing it changes nothing, so it is not a choice.
        for when, _, _, event in env._queue:
            if (when <= now or not event.callbacks or (earliest is not None and when > earliest)
                    or event is self._tick):
                continue
            if earliest is None or when < earliest:
                earliest, purposes = when, []
            purposes.append(getattr(event, "purpose", "timer"))
        if earliest is None or earliest > self.kernel.limits.time_bound_ms:
            return None
        return int(earliest), tuple(sorted(set(purposes)))

    def _loop(self) -> Generator[simpy.Event, Any, None]:
        env = self.kernel.env
        while True:
            if not self.pending:
                self._wakeup = env.event()
                yield self._wakeup  # nothing scheduled while idle: deadlocks stay detectable
            # Decide at the end of the instant: every call that reaches a touch point now has asked,
            # and whatever a timer firing now sets off (a cancel, a retry) has happened.
            self._tick = self.kernel.end_of_instant()
            yield self._tick
            # A request is live while its call still waits on it (a cancelled call stopped waiting).
            live = [r for r in self.pending if not r.granted.triggered and r.granted.callbacks]
            self.pending = live
            if not live:
                continue
            live.sort(key=lambda r: (self.positions.get(r.call_id, 1 << 30), r.call_id, r.attempt))
            now = self.kernel.now
            timer = self._next_timer()
            if any(r.entry.startswith(THREAD_PREFIX) for r in live):
                # A bridged thread is runnable: it runs before the clock moves (running takes no
                # virtual time), so only what can happen now is enabled, never a later step or a timer.
                enabled = tuple(r.entry for r in live if r.earliest <= now)
            elif timer is None:
                enabled = tuple(r.entry for r in live)
            else:
                # A step that cannot land before the deadline waits for the timer; a step that must
                # land before it keeps the timer from firing. One of the two is always possible.
                deadline = timer[0]
                enabled = tuple(r.entry for r in live if max(r.earliest, now) < deadline)
                if all(r.latest >= deadline for r in live):
                    enabled += (TIME,)
            chosen = self.chooser.choose(enabled, len(self.decisions))
            if chosen not in enabled:
                raise ValueError(f"chooser picked {chosen!r}, which is not enabled ({', '.join(enabled)})")
            if chosen == TIME:
                assert timer is not None
                deadline, fired = timer
                self.decisions.append(Decision(enabled, TIME, 0, now, fired))
                # Inserted after the timer, so the timer fires first; the next decision comes at the
                # end of that instant, after what it set off.
                self._tick = self.kernel.delay(deadline - now)
                yield self._tick
                continue
            picked = next(r for r in live if r.entry == chosen)
            key = (picked.call_id, picked.attempt)
            self.decisions.append(Decision(enabled, chosen, self.steps_taken.get(key, 0), now))
            self.steps_taken[key] = self.steps_taken.get(key, 0) + 1
            self.pending = [r for r in live if r is not picked]
            if picked.earliest > now:
                # The step cannot come sooner: let its latency pass (no timer falls due meanwhile:
                # it was enabled only if it lands before the next deadline).
                self._tick = self.kernel.delay(picked.earliest - now)
                yield self._tick
            picked.granted.succeed()

    @property
    def tape(self) -> tuple[str, ...]:
        return tuple(d.chosen for d in self.decisions)


class Tape:
    """Follow a recorded tape; past its end (or where it no longer fits), take the first enabled
    call in model order — the schedule closest to model order, in which timers fire only when no
    call can move — and keep the seed's fault draws."""

    def __init__(self, tape: Sequence[str] = ()) -> None:
        self.tape = tuple(tape)
        self.diverged_at: int | None = None

    def choose(self, enabled: Sequence[str], step: int) -> str:
        if step < len(self.tape):
            if self.tape[step] in enabled:
                return self.tape[step]
            if self.diverged_at is None:
                self.diverged_at = step
        return enabled[0]

    def choose_fault(self, token: str, drawn: bool, step: int) -> bool | None:
        if step < len(self.tape):
            entry = self.tape[step]
            if entry == FAULT + token:
                return True
            if entry == NO_FAULT + token:
                return False
        return None
