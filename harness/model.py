"""Frozen values that cross every boundary of the harness: calls, batches and results.

This module owns the vocabulary (`ToolCall`, `Batch`, `Outcome`, `CallResult`) and validates it
on construction. It never touches the simulation, the world or the tools: a value here means the
same thing whether it came from a scenario file, a Hypothesis strategy or a user's scheduler.
"""

from __future__ import annotations

import enum
import functools
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

JSONValue = Any  # JSON-compatible data: what a tool returns and what a trace records.


class Outcome(enum.StrEnum):
    """How a call ended, as the runtime reported it to the model."""

    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    #: The runtime cannot say whether the effect landed (e.g. a batch deadline hit a running call).
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call of a model turn.

    `arguments` is the raw JSON text exactly as the model emitted it; it may be malformed, and that
    is a legitimate test input. `index` is the call's position in its batch (model order).
    """

    id: str
    name: str
    arguments: str
    index: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"ToolCall.id must be a non-empty string, got {self.id!r}")
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"ToolCall.name must be a non-empty string, got {self.name!r}")
        if not isinstance(self.arguments, str):
            raise TypeError(
                f"ToolCall.arguments must be the raw JSON string, got {type(self.arguments).__name__}"
            )
        if not isinstance(self.index, int) or self.index < 0:
            raise ValueError(f"ToolCall.index must be an int >= 0, got {self.index!r}")

    def parsed_arguments(self) -> dict[str, JSONValue] | None:
        """The arguments as a JSON object, or None when they are not valid JSON or not an object.
        Each call gets an object of its own: the caller may change it."""
        text = self.arguments
        if len(text) <= _REMEMBERED_CHARS:
            value, flat = _remembered_arguments(text)
            if flat and value is not None:
                return dict(value)  # a copy: its plain values cannot be shared
            if value is None:
                return None
        return _parse_arguments(text)  # nested lists or objects: parsed afresh, nothing shared


#: Arguments texts up to this long are parsed once per process (a run parses each call's, a sweep
#: the same calls again and again); longer ones (a file's content) every time.
_REMEMBERED_CHARS = 1024


@functools.lru_cache(maxsize=4096)
def _remembered_arguments(text: str) -> tuple[dict[str, JSONValue] | None, bool]:
    """The parsed arguments and whether every value is a plain scalar (a shallow copy of such an
    object is as good as parsing the text again). The object itself is never handed out."""
    value = _parse_arguments(text)
    return value, value is not None and all(type(v) in _SCALARS for v in value.values())


_SCALARS = (str, int, float, bool, type(None))


def _parse_arguments(text: str) -> dict[str, JSONValue] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


@dataclass(frozen=True, slots=True)
class Batch:
    """The ordered tool calls of one model turn; the order is *model order*."""

    calls: tuple[ToolCall, ...]
    label: str = ""

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for position, call in enumerate(self.calls):
            if not isinstance(call, ToolCall):
                raise TypeError(f"Batch.calls[{position}] is {type(call).__name__}, not ToolCall")
            if call.id in seen:
                raise ValueError(f"Batch has two calls with id {call.id!r}")
            if call.index != position:
                raise ValueError(
                    f"Batch.calls[{position}] ({call.id!r}) has index {call.index}; "
                    "index must equal the position in the batch"
                )
            seen.add(call.id)

    @classmethod
    def of(cls, calls: Sequence[tuple[str, str, str | Mapping[str, JSONValue]]], label: str = "") -> Batch:
        """Build a batch from `(id, name, arguments)` triples, numbering them in order.

        A mapping is serialised with `json.dumps`; a string is kept byte for byte.
        """
        built = []
        for index, (call_id, name, arguments) in enumerate(calls):
            raw = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
            built.append(ToolCall(call_id, name, raw, index))
        return cls(tuple(built), label)

    def __iter__(self) -> Iterator[ToolCall]:
        return iter(self.calls)

    def __len__(self) -> int:
        return len(self.calls)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(call.id for call in self.calls)


@dataclass(frozen=True, slots=True)
class CallResult:
    """What the runtime reported for one call.

    `start_ms`/`end_ms` are virtual times: when the call first started and when its result was
    settled (for a timed-out or cancelled call, the moment it was abandoned). `attempts` counts
    every execution, retries included.
    """

    call_id: str
    outcome: Outcome
    value: JSONValue = None
    error: str | None = None
    attempts: int = 1
    start_ms: int = 0
    end_ms: int = 0
    notes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if not isinstance(self.outcome, Outcome):
            object.__setattr__(self, "outcome", Outcome(self.outcome))
        if self.attempts < 0:
            raise ValueError(f"CallResult.attempts must be >= 0, got {self.attempts}")
        if self.end_ms < self.start_ms:
            raise ValueError(
                f"CallResult for {self.call_id!r} ends ({self.end_ms}) before it starts ({self.start_ms})"
            )

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.OK

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "id": self.call_id,
            "outcome": self.outcome.value,
            "value": self.value,
            "error": self.error,
            "attempts": self.attempts,
            "start_ms": self.start_ms,
            "end_ms": self.end_ms,
            "notes": list(self.notes),
        }
