"""Injected call failures: transient errors (this attempt fails, a retry may succeed) and permanent
ones (every attempt of the call fails).

Owns the failure spelling in scenarios (`failure = { rate = 0.3 }`, `permanent = true`, a message)
and the draw, from the stream `failure/<call id>/<attempt>` (permanent: `failure/<call id>/0`), so a
call fails the same way whichever scheduler runs it. A failed attempt has no effect: it fails half
way through, before the tool touches the world. It never decides what a runtime does about it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.sim.streams import RandomStreams
from harness.suggest import SpecError, check_keys


@dataclass(frozen=True, slots=True)
class FailureModel:
    rate: float = 0.0
    permanent: bool = False
    message: str = "503 Service Unavailable"
    attempts: tuple[int, ...] = ()  # attempts that fail for certain (a per-call override)

    def fails(self, streams: RandomStreams, call_id: str, attempt: int) -> bool:
        if attempt in self.attempts:
            return True
        if self.rate <= 0:
            return False
        draw_for = 0 if self.permanent else attempt
        return streams.stream("failure", call_id, draw_for).random() < self.rate

    def uncertain(self, attempt: int) -> bool:
        """Whether this attempt may fail or not, depending on the draw (exhaustive search enumerates
        both where this holds)."""
        return attempt not in self.attempts and 0 < self.rate < 1

    def error_text(self) -> str:
        return f"{'permanent' if self.permanent else 'transient'} failure: {self.message}"


class FailureSpecError(SpecError):
    """A failure spelling is wrong; the message says what was expected, `field` which key, if one."""


def parse_failure(data: Any) -> FailureModel:
    """`{rate = R, permanent = B, message = S, attempts = [N...]}`; raises FailureSpecError."""
    if not isinstance(data, Mapping):
        raise FailureSpecError("a table with keys rate (0..1), permanent (bool), message (string), attempts (list)")
    check_keys(data, ("rate", "permanent", "message", "attempts"), error=FailureSpecError)
    rate = data.get("rate", 0.0)
    if not isinstance(rate, int | float) or isinstance(rate, bool) or not 0 <= rate <= 1:
        raise FailureSpecError(f"rate must be a number in [0, 1], got {rate!r}")
    permanent = data.get("permanent", False)
    if not isinstance(permanent, bool):
        raise FailureSpecError(f"permanent must be true or false, got {permanent!r}")
    message = data.get("message", FailureModel.__dataclass_fields__["message"].default)
    if not isinstance(message, str):
        raise FailureSpecError(f"message must be a string, got {message!r}")
    attempts = data.get("attempts", [])
    if not isinstance(attempts, list) or not all(isinstance(a, int) and a >= 1 for a in attempts):
        raise FailureSpecError(f"attempts must be a list of attempt numbers >= 1, got {attempts!r}")
    return FailureModel(float(rate), permanent, message, tuple(attempts))
