"""Gates: when each call of a plan may start, in time linear in calls and edges.

Owns `Gates`, the waiting of a plan that uses prefix waits (`Plan.prefix`: "wait for the first n
calls of this list", resource_keys' "a read waits for every earlier write"). Listing those waits as
edges is quadratic (N reads x N writes, in the plan and in SimPy `AllOf` conditions); a gate is
one event per waiting call, released when its explicit predecessors have settled and the settled
*frontier* of the prefix (how many of its leading calls have all settled) has reached its n.

It reproduces `AllOf` exactly, so a plan run through gates makes the same run as the same plan
with every wait listed: a condition is checked when one of its events is *processed*, and when
that completes it, it is scheduled then; the conditions one event completes are scheduled in the
order they were created (the order of that event's callbacks), which for a plan is model order,
since every call's runner creates its condition in the first instant of the batch, in model order,
before any call can settle. Gates release the calls one processed event completes in model order,
one scheduled event each, so the simulation takes the same steps in the same order. It never
decides which call waits for which: plans do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial

import simpy
from simpy.events import Condition


class Gate(Condition):
    """One call's wait: succeeds once every event it waits for has been processed.

    A `Condition` (an "all of") to whoever inspects a waiting process (the hang diagnosis lists its
    pending events), but it registers no callback per event: `Gates` releases it.
    """

    def __init__(self, env: simpy.Environment, gates: Gates, index: int) -> None:
        simpy.Event.__init__(self, env)
        self._evaluate = Condition.all_events
        self._count = 0
        self._gates, self._index = gates, index

    @property
    def _events(self) -> tuple[simpy.Event, ...]:  # type: ignore[override]
        """The events still to be processed, for descriptions (computed when asked, never in a run)."""
        return self._gates.pending_of(self._index)


class Gates:
    """Each call's gate for one run of a plan with prefix waits (see the module docstring)."""

    def __init__(self, env: simpy.Environment, ids: Sequence[str], after: Mapping[str, tuple[str, ...]],
                 prefix: Sequence[str], after_prefix: Mapping[str, int], settled: Mapping[str, simpy.Event]) -> None:
        self._env = env
        self._ids = ids
        self._settled = settled
        self._after = [tuple(dict.fromkeys(after[call_id])) for call_id in ids]
        #: Per call: how many explicit predecessors have not been processed yet.
        self._remaining = [len(deps) for deps in self._after]
        self._successors: dict[str, list[int]] = {}
        for i, deps in enumerate(self._after):
            for dep in deps:
                self._successors.setdefault(dep, []).append(i)
        self._prefix = tuple(prefix)
        self._prefix_position = {call_id: j for j, call_id in enumerate(self._prefix)}
        self._prefix_done = [False] * len(self._prefix)
        #: How many leading calls of the prefix have all been processed.
        self.frontier = 0
        self._needs = [after_prefix.get(call_id, 0) for call_id in ids]
        #: n -> calls (model positions, ascending) that wait for the first n calls of the prefix.
        self._waiting_for: dict[int, list[int]] = {}
        for i, n in enumerate(self._needs):
            if n:
                self._waiting_for.setdefault(n, []).append(i)
        self.gates: list[Gate | None] = [
            Gate(env, self, i) if self._after[i] or self._needs[i] else None for i in range(len(ids))]
        for call_id in dict.fromkeys([*self._successors, *self._prefix]):
            callbacks = settled[call_id].callbacks
            assert callbacks is not None  # nothing has settled before the batch's first instant
            callbacks.append(partial(self._processed, call_id))

    def _processed(self, call_id: str, event: simpy.Event) -> None:
        released: list[int] = []
        for i in self._successors.get(call_id, ()):
            self._remaining[i] -= 1
            if not self._remaining[i] and self.frontier >= self._needs[i]:
                released.append(i)
        j = self._prefix_position.get(call_id)
        if j is not None:
            self._prefix_done[j] = True
            old = self.frontier
            while self.frontier < len(self._prefix) and self._prefix_done[self.frontier]:
                self.frontier += 1
            for n in range(old + 1, self.frontier + 1):
                released.extend(i for i in self._waiting_for.get(n, ()) if not self._remaining[i])
        # A condition's callbacks run in the order they were added: the conditions this event
        # completes are scheduled in model order.
        released.sort()
        for i in released:
            gate = self.gates[i]
            assert gate is not None
            gate.succeed()

    def pending_of(self, index: int) -> tuple[simpy.Event, ...]:
        """The events call `index` still waits for, explicit predecessors first, then the prefix."""
        settled = self._settled
        explicit = [settled[d] for d in self._after[index] if not settled[d].processed]
        upto = self._needs[index]
        rest = [settled[c] for c in self._prefix[self.frontier:upto] if not settled[c].processed]
        return tuple(explicit + rest)
