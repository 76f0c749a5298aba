"""What a hung batch waits on, as values: one `Wait` per unfinished call (or scheduler, task or
thread) and the `Diagnosis` of a batch (its waits and the lock cycle among them).

Owns these frozen values and their JSON and text forms. Reading them from a live run is the runner's
(`harness.run.hang`) and the thread bridge's (`harness.diagnosis.threads`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Wait:
    """One unfinished call (or the scheduler itself, `who` = "scheduler") and what it waits on."""

    who: str
    state: str  # "running", "not started", "waiting", "task", "thread"
    on: str  # in words
    at: str | None = None  # the user's source line where it waits
    stack: tuple[str, ...] = ()  # "path:line (function)", outermost first

    def to_json(self) -> dict[str, Any]:
        return {"who": self.who, "state": self.state, "on": self.on, "at": self.at, "stack": list(self.stack)}

    def line(self) -> str:
        at = f"  at {self.at}" if self.at else ""
        return f"{self.who} ({self.state}): {self.on}{at}"


@dataclass(frozen=True)
class Diagnosis:
    """What the hung batch waits on, and the lock cycle among its calls when there is one."""

    waits: tuple[Wait, ...]
    cycle: tuple[str, ...] = ()  # "a holds X and waits for Y", ... around the cycle

    def to_json(self) -> dict[str, Any]:
        return {"waits": [w.to_json() for w in self.waits], "deadlock": list(self.cycle)}

    def lines(self) -> list[str]:
        lines = [w.line() for w in self.waits]
        if self.cycle:
            lines.append("deadlock: " + "; ".join(self.cycle))
        return lines

