"""The simulation kernel: a `simpy.Environment` with integer-millisecond time and hard limits.

Owns the virtual clock, the stepping loop with its event budget and virtual-time bound, and the
reason a simulation stopped. SimPy breaks ties between events scheduled for the same time by an
insertion counter, which is exactly the sequence-number rule we need, so the kernel relies on it
instead of adding its own. It never knows about tools, worlds or schedulers.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Generator
from dataclasses import dataclass
from heapq import heappop, heappush
from itertools import count
from types import MethodType
from typing import Any, TypeVar

import simpy
from simpy.core import BoundClass, StopSimulation
from simpy.events import NORMAL, URGENT, EventPriority, Initialize

from harness.sim.attempts import AttemptReader
from harness.sim.streams import RandomStreams
from harness.sim.trace import TraceRecorder


class StopReason(enum.StrEnum):
    """Why `Kernel.run_until` returned."""

    DONE = "done"  # the awaited event happened
    IDLE = "idle"  # nothing left to happen, but the awaited event never did: a deadlock
    TIME_BOUND = "time-bound"  # the next event lies beyond the virtual-time bound
    EVENT_BUDGET = "event-budget"  # too many events: a livelock or runaway scheduler


@dataclass(frozen=True, slots=True)
class Limits:
    """Hard limits that keep the code under test from hanging the harness."""

    time_bound_ms: int = 600_000
    event_budget: int = 200_000

    def __post_init__(self) -> None:
        if self.time_bound_ms <= 0 or self.event_budget <= 0:
            raise ValueError("time_bound_ms and event_budget must be positive")


class Kernel:
    """One simulation: clock, random streams and trace, stepped under `Limits`."""

    __slots__ = ("env", "limits", "reader", "steps", "streams", "trace")

    def __init__(self, seed: int, limits: Limits | None = None) -> None:
        self.env = _environment()
        self.streams = RandomStreams(seed)
        self.trace = TraceRecorder()
        self.limits = limits or Limits()
        self.steps = 0
        #: Reads the trace's attempts as they are recorded, every `READ_EVERY` steps (a large run's: see
        #: `harness.sim.attempts`); dropped if an event is one it cannot read.
        self.reader: AttemptReader | None = None

    @property
    def now(self) -> int:
        # All delays are integers, so the float SimPy keeps is always integral. (`_now` is what
        # `Environment.now` returns; read directly, as in `run_until`: this runs ~100 times a run.)
        return int(self.env._now)

    def record(self, ev: str, **fields: object) -> None:
        self.trace.add(int(self.env._now), ev, fields)

    def record_ids(self, ev: str, **fields: object) -> None:
        """`record` for the runner's own events whose lists are lists of call ids (a batch's calls, the
        order reported): the trace hash need not look into those (see `TraceRecorder.add`)."""
        self.trace.add(int(self.env._now), ev, fields, True)

    def delay(self, ms: int, purpose: str | None = None) -> simpy.Timeout:
        """A timer `ms` from now. `purpose` names it (timeout, interrupt, backoff...) for the
        order-first arbiter, which offers pending timers as choices and reports which fired."""
        if not isinstance(ms, int) or ms < 0:
            raise ValueError(f"virtual delays are non-negative integer milliseconds, got {ms!r}")
        timer = self.env.timeout(ms)
        if purpose is not None:
            timer.purpose = purpose  # type: ignore[attr-defined]
        return timer

    def end_of_instant(self) -> simpy.Event:
        """An event processed after every other event of the current instant, those scheduled after
        it included: whoever becomes ready in this instant has asked by then."""
        return _EndOfInstant(self.env)

    def run_until(self, event: simpy.Event | None) -> StopReason:
        """Step until `event` has been processed (or, with None, until nothing is left).

        Stops early, without raising, at the virtual-time bound or the event budget.
        """
        env = self.env
        # SimPy's event heap, read directly (what `env.peek()` does, without a call per step).
        queue = env._queue
        bound = self.limits.time_bound_ms
        budget = self.limits.event_budget
        # One comparison a step for both the budget and the reader's next read (`_read_on`).
        checkpoint = budget if self.reader is None else min(budget, self.steps + READ_EVERY)
        idle = StopReason.IDLE
        if event is None:  # an event nobody schedules: stepping goes on until nothing is left
            event, idle = env.event(), StopReason.DONE
        # `callbacks is None` is `event.processed`. `self.steps` is re-read every step: the run's
        # driver counts resumes SimPy never sees into it.
        while event.callbacks is not None:
            if not queue:
                return idle
            at = queue[0][0]
            if at > bound:  # (an event scheduled for infinity, never, is past every bound)
                return idle if at == math.inf else StopReason.TIME_BOUND
            if self.steps >= checkpoint:
                if self.steps >= budget:
                    return StopReason.EVENT_BUDGET
                checkpoint = self._read_on(budget)
            # `env.step()`, inlined (a few dozen steps a run, each one Python call less): the same pop,
            # callbacks and crash on a failed event nobody defused. This frame is where every callback
            # runs: the origins recorder stops its walk up at it (`harness.diagnosis.origins`).
            env._now, _, _, current = heappop(queue)
            callbacks, current.callbacks = current.callbacks, None  # type: ignore[assignment]
            try:
                for callback in callbacks:
                    callback(current)
            except StopSimulation:
                current.callbacks = callbacks[callbacks.index(callback) + 1:]
                env.schedule(current, EventPriority(-1))
                raise
            if not current._ok and not hasattr(current, "_defused"):
                exc = type(current._value)(*current._value.args)
                exc.__cause__ = current._value
                raise exc
            self.steps += 1
        return StopReason.DONE

    def _read_on(self, budget: int) -> int:
        """Let the reader read what was recorded since it last did (while it is still in the processor's
        cache), and say at which step count `run_until` stops next: the budget, or the next read."""
        reader = self.reader
        if reader is None:
            return budget
        self.reader = None  # part read, should anything stop it: judging then reads the trace itself
        if not reader.catch_up(self.trace.events):
            return budget
        self.reader = reader
        return min(budget, self.steps + READ_EVERY)


#: Steps between two reads of a large run's trace by its reader: a few thousand events, recorded
#: recently enough to be in the processor's cache still (see `harness.sim.attempts`).
READ_EVERY = 1_024


def _bound_classes() -> tuple[tuple[str, type], ...] | None:
    """What `simpy.Environment.__init__` binds to each environment (`BoundClass.bind_early`: `process`,
    `timeout`, `event`, `all_of`, `any_of`), or None when a new environment holds anything else than
    those and the four attributes `_environment` sets (another SimPy: then it is made by its `__init__`)."""
    bound = tuple((name, value.cls) for name, value in vars(simpy.Environment).items()
                  if type(value) is BoundClass)
    made = simpy.Environment()
    expected = {"_now", "_queue", "_eid", "_active_proc", *(name for name, _ in bound)}
    if set(vars(made)) != expected or made._now != 0 or made._queue or made._active_proc is not None:
        return None
    return bound


_BOUND = _bound_classes()


def _environment() -> simpy.Environment:
    """`simpy.Environment()`: what its `__init__` sets, without `bind_early`'s walk over the class's
    attributes (a few dozen steps, once per run): the same clock, queue, counter and bound classes."""
    if _BOUND is None:
        return simpy.Environment()
    env: simpy.Environment = _new(simpy.Environment)
    env._now, env._queue, env._eid, env._active_proc = 0, [], count(), None
    for name, cls in _BOUND:  # (`setattr`: the environment's `__dict__` read would make its attributes slower)
        setattr(env, name, MethodType(cls, env))
    return env


_new = object.__new__

_P = TypeVar("_P", bound=simpy.Process)


def new_process(env: simpy.Environment, generator: Generator[simpy.Event, Any, Any], kind: type[_P]) -> _P:
    """`env.process(generator)` for a process of class `kind`: SimPy's `Process.__init__` and its
    `Initialize` event, inlined as SimPy inlines `Event.__init__` in them (a process per attempt of
    every run): the same objects, the same urgent queue entry."""
    process = _new(kind)
    process.env, process.callbacks, process._generator = env, [], generator
    begin = process._target = _new(Initialize)
    begin.env, begin.callbacks, begin._value, begin._ok = env, [process._resume], None, True
    heappush(env._queue, (env._now, URGENT, next(env._eid), begin))
    return process


class CallStep(simpy.Timeout):
    """A call's wait for its next touch point or its end: what `Kernel.delay(ms, "call")` gives, for the
    attempt's hot path (a few per call). `ms` must be a positive int (the caller computed it from the
    clock); the purpose is the class's, not set per timer."""

    purpose = "call"

    def __init__(self, env: simpy.Environment, ms: int) -> None:
        # `simpy.Timeout.__init__` and `Environment.schedule`, inlined as SimPy inlines `Event.__init__`
        # in its own events: the same queue entry, (time, priority, insertion count, event).
        self.env = env
        self.callbacks = []
        self._value = None
        self._delay = ms
        self._ok = True
        heappush(env._queue, (env._now + ms, NORMAL, next(env._eid), self))


class _EndOfInstant(simpy.Event):
    def __init__(self, env: simpy.Environment) -> None:
        super().__init__(env)
        self._ok = True  # how SimPy's own Timeout readies an event it schedules itself
        self._value = None
        env.schedule(self, priority=_AFTER_NORMAL)


#: SimPy processes events by (time, priority, insertion): URGENT is 0, NORMAL 1.
_AFTER_NORMAL = EventPriority(2)
