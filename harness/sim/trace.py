"""The run's trace: an append-only list of events with integer virtual times.

Owns the canonical serialisation (one JSON object per line, sorted keys, no spaces) and the SHA-256
fingerprint over it. It never reads the clock itself (the kernel stamps time) and never interprets
events: oracles and reports do that.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from typing import Any

TraceEvent = dict[str, Any]


def canonical_json(value: Any) -> str:
    """The one JSON spelling used wherever bytes must be reproducible."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class TraceRecorder:
    """Collects events in the order they happen; `seq` breaks ties between equal times."""

    __slots__ = ("_events",)

    def __init__(self) -> None:
        self._events: list[TraceEvent] = []

    def record(self, t: int, ev: str, **fields: Any) -> TraceEvent:
        event: TraceEvent = {"t": t, "seq": len(self._events), "ev": ev}
        for name, value in fields.items():
            if value is not None:
                event[name] = value
        self._events.append(event)
        return event

    @property
    def events(self) -> list[TraceEvent]:
        return self._events

    def __iter__(self) -> Iterator[TraceEvent]:
        return iter(self._events)

    def __len__(self) -> int:
        return len(self._events)

    def to_jsonl(self) -> str:
        return to_jsonl(self._events)

    def sha256(self) -> str:
        return sha256(self._events)


def to_jsonl(events: Iterable[TraceEvent]) -> str:
    """The canonical JSONL of a trace: one canonical JSON object per line."""
    return "".join(canonical_json(event) + "\n" for event in events)


def sha256(events: Iterable[TraceEvent]) -> str:
    return hashlib.sha256(to_jsonl(events).encode("utf-8", "surrogatepass")).hexdigest()


def fingerprint(trace_sha256: str, world_digest: str) -> str:
    """A run's fingerprint: the trace hash and the final world digest, hashed together."""
    return hashlib.sha256(f"{trace_sha256}:{world_digest}".encode()).hexdigest()
