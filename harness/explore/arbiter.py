"""Order-first execution: in-flight calls advance one step at a time, in the order a chooser picks.

Owns the `Arbiter`. In this mode a call does not sleep for a latency; at each of its touch points it
asks the arbiter for a step, and once every call that can ask at the current instant has asked,
the chooser picks one of them (the *enabled* set) to proceed, one virtual millisecond later. The
sequence of picks is the run's order tape: replaying it reproduces the run exactly. Virtual times in
this mode count steps, not latency, so never report latency statistics from it. It never decides
what to pick: choosers do.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import simpy

from harness.sim.kernel import Kernel


class Chooser(Protocol):
    """Picks which enabled call takes the next step."""

    def choose(self, enabled: Sequence[str], step: int) -> str: ...


@dataclass(frozen=True, slots=True)
class Decision:
    enabled: tuple[str, ...]  # in model order
    chosen: str
    #: The chosen call's step index within its current attempt (0 = its first step).
    step_of_call: int


class Arbiter:
    def __init__(self, kernel: Kernel, chooser: Chooser, positions: dict[str, int]) -> None:
        self.kernel = kernel
        self.chooser = chooser
        self.positions = positions
        self.pending: list[tuple[str, int, simpy.Event]] = []
        self.decisions: list[Decision] = []
        self.steps_taken: dict[tuple[str, int], int] = {}
        self._wakeup: simpy.Event | None = None
        kernel.env.process(self._loop())

    def step(self, call_id: str, attempt: int) -> simpy.Event:
        """The event a call waits on before its next touch point."""
        granted = self.kernel.env.event()
        self.pending.append((call_id, attempt, granted))
        if self._wakeup is not None and not self._wakeup.triggered:
            self._wakeup.succeed()
        return granted

    def _loop(self) -> Generator[simpy.Event, Any, None]:
        env = self.kernel.env
        while True:
            if not self.pending:
                self._wakeup = env.event()
                yield self._wakeup  # nothing scheduled while idle: deadlocks stay detectable
            # One tick lets every call that reaches a touch point at this instant ask first.
            yield self.kernel.delay(1)
            live = [p for p in self.pending if not p[2].triggered]
            if not live:
                self.pending = []
                continue
            live.sort(key=lambda p: (self.positions.get(p[0], 1 << 30), p[0]))
            enabled = tuple(p[0] for p in live)
            chosen = self.chooser.choose(enabled, len(self.decisions))
            if chosen not in enabled:
                raise ValueError(f"chooser picked {chosen!r}, which is not enabled ({', '.join(enabled)})")
            picked = next(p for p in live if p[0] == chosen)
            key = (picked[0], picked[1])
            self.decisions.append(Decision(enabled, chosen, self.steps_taken.get(key, 0)))
            self.steps_taken[key] = self.steps_taken.get(key, 0) + 1
            self.pending = [p for p in live if p is not picked]
            picked[2].succeed()

    @property
    def tape(self) -> tuple[str, ...]:
        return tuple(d.chosen for d in self.decisions)


class Tape:
    """Follow a recorded tape; past its end (or where it no longer fits), take the first enabled
    call in model order — the schedule closest to model order."""

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
