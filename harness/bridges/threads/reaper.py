"""Noticing, from inside the simulation, that a run is about to stop while bridge threads wait.

Owns `Reaper`. A run that hangs (deadlock, virtual-time bound, event budget) stops stepping the kernel
without resuming the bridge, and `run()` has no hook to say so; real threads parked on the turnstile
would then outlive the run. While the bridge waits, the reaper is an event processed after an
instant's other events: first the instant it starts waiting, then the latest instant already scheduled
within the time bound (nothing can stop the run before it, as SimPy never takes an event back), or,
near the event budget, the next instant; each time it looks at what is left: nothing (a deadlock),
only events past the time bound, or no step left in the event budget, and the run is over — it calls
`on_stop` (which releases the threads) there and then. It is invisible to
order-first exploration (the arbiter counts as timers only events someone waits on, and the reaper's
callback list reads as empty) and never adds an instant of its own. It never touches threads itself.

Every reaper of a run shares one watch (one pending event at a time): two batches running at once
(the agents of a crew, each with its own bridge) would otherwise each see the other's event as the
next thing to happen at the same instant and reschedule behind it forever, spending the event budget
at one instant and stopping the run as a false hang.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from typing import Any

import simpy
from simpy.events import EventPriority

from harness.sim.kernel import Kernel

#: After the instant's other events (SimPy: URGENT 0, NORMAL 1), like the arbiter's end of instant.
_LAST = EventPriority(2)
#: Steps left of the event budget below which the watch looks at every instant again.
_NEAR_BUDGET = 1000


class _Unheard(list[Callable[[Any], None]]):
    """A callback list that reads as empty: the arbiter then never offers the reaper as a timer."""

    def __bool__(self) -> bool:
        return False


class Reaper:
    """One waiting bridge's part of the run's watch: `on_stop(why)` once the run is over while armed."""

    def __init__(self, kernel: Kernel, on_stop: Callable[[str], None]) -> None:
        self.kernel = kernel
        self.on_stop = on_stop
        self.armed = False
        self.fired = False
        watch = _watches.get(kernel.env)
        if watch is None:
            watch = _watches[kernel.env] = _Watch()
        self._watch = watch

    # `armed` is exactly whether it is in its watch's list (`_Watch.arm` and `disarm`, inlined: the
    # driver arms and disarms it around every wait).
    def arm(self) -> None:
        if self.fired:
            return
        watch = self._watch
        if not self.armed:
            self.armed = True
            watch.armed.append(self)
        if not watch._scheduled:
            watch._schedule(self.kernel, self.kernel.env._now)

    def disarm(self) -> None:
        if self.armed:
            self.armed = False
            self._watch.armed.remove(self)


class _Watch:
    """The run's one reaper event: at each instant that has anything scheduled, after its other events,
    it looks whether the run is over and, if so, stops every armed reaper, in the order they armed."""

    def __init__(self) -> None:
        # No reference to the kernel of its own: this watch is the value of `_watches`, whose key (the
        # kernel's environment) is weak, and a strong reference back would keep every run's kernel,
        # environment and trace alive for good. The armed reapers' kernel is the one it watches.
        self.armed: list[Reaper] = []
        self._scheduled = False

    def _schedule(self, kernel: Kernel, at: float, event: simpy.Event | None = None) -> None:
        """Schedule the watch's event at `at`: `event`, the one just processed, again (SimPy is done with
        it), else a new one. Never kept here: the watch must not hold its run's environment."""
        env = kernel.env
        if event is None:
            event = simpy.Event(env)
            event._ok = True  # how SimPy readies an event it schedules itself (as Timeout does)
            event._value = None
        event.callbacks = _Unheard((self._check,))
        env.schedule(event, _LAST, at - env._now)
        self._scheduled = True

    def _check(self, event: simpy.Event) -> None:
        self._scheduled = False
        if not self.armed:
            return
        kernel = self.armed[0].kernel
        upcoming = kernel.env.peek()
        if upcoming == math.inf:
            why = "nothing left to happen (deadlock)"
        elif upcoming > kernel.limits.time_bound_ms:
            why = f"nothing left before the {kernel.limits.time_bound_ms} ms time bound"
        elif kernel.steps + 1 >= kernel.limits.event_budget:
            why = f"the event budget ({kernel.limits.event_budget}) is spent"
        else:
            # Nothing can stop the run before its latest event already due within the bound (SimPy
            # never takes an event back): look again then, not at every instant between. Near the
            # event budget, at every instant, as the budget is counted in steps, not instants.
            env = kernel.env
            if kernel.limits.event_budget - kernel.steps > _NEAR_BUDGET + len(env._queue):
                bound = kernel.limits.time_bound_ms
                upcoming = max(at for at, *_ in env._queue if at <= bound)
            self._schedule(kernel, upcoming, event)
            return
        stopping, self.armed = self.armed, []
        for reaper in stopping:
            reaper.fired, reaper.armed = True, False
            reaper.on_stop(why)


#: The watch of each run (by its SimPy environment, which ends with the run).
_watches: weakref.WeakKeyDictionary[simpy.Environment, _Watch] = weakref.WeakKeyDictionary()
