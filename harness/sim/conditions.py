"""`AllOf` and `AnyOf` for the run's hot paths: SimPy's conditions, with their checks written out.

Owns `FlatAllOf` and `FlatAnyOf`, subclasses of `simpy.AllOf` / `simpy.AnyOf` that are the same event:
the same attributes (`_evaluate` is SimPy's own function, as the hang diagnosis reads it), the same
callbacks appended in the same order, triggered by the same processed event, the same `ConditionValue`,
the same clean-up. What they leave out is SimPy's generality where it costs a call per event: `_check`
compares the count itself instead of calling `_evaluate`, and when none of the events is a condition
(the run's driver process and crash event, a batch's handles), the value is built in one pass instead
of two recursive walks. A run waits on two of them per batch. It never decides what to wait for.
tests/unit/test_core8_conditions.py holds them to SimPy's.
"""

from __future__ import annotations

from collections.abc import Iterable
from heapq import heappush

import simpy
from simpy.events import NORMAL, PENDING, Condition, ConditionValue


class _Flat(Condition):
    """The shared body of `FlatAllOf` / `FlatAnyOf` (`Condition.__init__`, inlined)."""

    _flat: bool

    def __init__(self, env: simpy.Environment, events: Iterable[simpy.Event]) -> None:
        # `Event.__init__` and `Condition.__init__`, in their order; `_evaluate` is the subclass's own.
        self.env = env
        self.callbacks = []
        self._value = PENDING
        self._evaluate = self._kind
        self._events = tuple(events)
        self._count = 0
        if not self._events:
            self.succeed(ConditionValue())
            return
        flat = True
        for event in self._events:
            if env != event.env:
                raise ValueError("It is not allowed to mix events from different environments")
            if isinstance(event, Condition):
                flat = False
        self._flat = flat
        check = self._check
        for event in self._events:
            if event.callbacks is None:
                check(event)
            else:
                event.callbacks.append(check)
        self.callbacks.append(self._build_value)

    _kind = staticmethod(Condition.all_events)

    def _succeed(self) -> None:
        """`self.succeed()` of a condition `_check` found pending: `Event.succeed` and the
        `Environment.schedule` it calls, written out (one call instead of three)."""
        self._ok = True
        self._value = None
        env = self.env
        heappush(env._queue, (env._now, NORMAL, next(env._eid), self))

    def _build_value(self, event: simpy.Event) -> None:
        if not self._flat:
            Condition._build_value(self, event)
            return
        # `_remove_check_callbacks` and `_populate_value` for events none of which is a condition: one pass
        # each over the events, no recursion (the removal first, as SimPy does, then the value).
        check = self._check
        events = self._events
        for waited in events:
            callbacks = waited.callbacks
            if callbacks and check in callbacks:
                callbacks.remove(check)
        if event._ok:
            value = self._value = ConditionValue()
            value.events.extend([waited for waited in events if waited.callbacks is None])


class FlatAllOf(_Flat, simpy.AllOf):
    """`simpy.AllOf(env, events)`: triggered once every event is processed (failed at the first failure)."""

    _kind = staticmethod(Condition.all_events)

    def _check(self, event: simpy.Event) -> None:
        if self._value is not PENDING:
            return
        self._count += 1
        if not event._ok:
            event._defused = True
            self.fail(event._value)
        elif self._count == len(self._events):  # `Condition.all_events(events, count)`
            self._succeed()


class FlatAnyOf(_Flat, simpy.AnyOf):
    """`simpy.AnyOf(env, events)`: triggered when the first event is processed (failed if it failed)."""

    _kind = staticmethod(Condition.any_events)

    def _check(self, event: simpy.Event) -> None:
        if self._value is not PENDING:
            return
        self._count += 1  # `Condition.any_events(events, count)` holds from here: count > 0
        if not event._ok:
            event._defused = True
            self.fail(event._value)
        else:
            self._succeed()
