"""The run's trace: an append-only list of events with integer virtual times.

Owns the canonical serialisation (one JSON object per line, sorted keys, no spaces) and the SHA-256
fingerprint over it. It never reads the clock itself (the kernel stamps time) and never interprets
events: oracles and reports do that.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from itertools import repeat
from json.encoder import c_make_encoder as _c_encoder  # type: ignore[attr-defined]
from json.encoder import encode_basestring as _encode_string
from typing import Any

import orjson  # a C encoder ten times faster than json's for the trace; the bytes are json's (see `_fast`)

TraceEvent = dict[str, Any]


#: What `json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)` builds on every
#: call, built once (its `encode` starts from a fresh state each time, so sharing it changes nothing).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _fast(value: Any) -> bytes | None:
    """`canonical_json(value)` as UTF-8 by orjson, or None when only json can say it.

    For the plain JSON types orjson writes exactly json's canonical bytes (sorted keys, `,`/`:`,
    the same escapes; checked against json on generated values in tests/unit/test_canonical_json.py)
    except for floats, which it spells differently (`1e-05` is `0.00001`). So a value holding a float
    or anything but str, int, bool, None, dict, list and tuple (an enum, a subclass) goes to json, and
    so does whatever orjson refuses (a lone surrogate, an int beyond 64 bits, a non-str key): json then
    gives the bytes, or the error, it always gave."""
    if _needs_json(value):
        return None
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        return None


#: Containers `_needs_json` looks into at most.
_WALKED = 10_000


def _needs_json(value: Any) -> bool:
    """Whether `value` holds anything but str, int, bool, None, dict, list and tuple (exactly those
    types). Containers wait on a stack (no recursion limit); their plain members are passed over
    where they are met, so a trace's flat events take one loop each. A value with more containers
    than `_WALKED` (or a cycle, which json reports as one) is left to json."""
    pending = [value]
    budget = _WALKED
    while pending:
        budget -= 1
        if not budget:
            return True
        item = pending.pop()
        kind = type(item)
        if kind is dict or kind is list or kind is tuple:
            for member in item.values() if kind is dict else item:
                if type(member) is str or type(member) is int or member is None:
                    continue
                pending.append(member)
        elif kind is not str and kind is not int and kind is not bool and item is not None:
            return True
    return False


def canonical_bytes(value: Any) -> bytes:
    """`canonical_json(value)` encoded as digests hash it (UTF-8, lone surrogates passed through)."""
    if not _needs_json(value):  # `_fast`, inlined: every call's value is digested through here
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except (TypeError, orjson.JSONEncodeError):
            pass
    return canonical_json(value).encode("utf-8", "surrogatepass")


def plain_bytes(value: Any) -> bytes | None:
    """`canonical_bytes(value)` of a value known to hold nothing but str, int, bool, None, dict and list,
    by orjson with no type walk first; None where orjson refuses it (a lone surrogate, a huge int)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        return None


def value_digest(value: Any, plain: bool = False) -> str:
    """A short digest of a returned value, so a result can be matched to the attempt that made it.
    `plain`: the value is known to hold nothing but str, int, bool, None, dict and list (a built-in
    tool's, `harness.tools.catalogue.PLAIN_VALUED`), so orjson writes it with no type walk first
    (what it refuses, a lone surrogate or a huge int, still goes to json)."""
    encoded = plain_bytes(value) if plain else None
    if encoded is None:
        encoded = canonical_bytes(value)
    return _small_bytes_digest(encoded) if len(encoded) <= _MEMO_BYTES else bytes_digest(encoded)


def bytes_digest(encoded: bytes) -> str:
    """The first 16 hex digits of the SHA-256 of `encoded`: a value's digest from its canonical bytes."""
    return hashlib.sha256(encoded).hexdigest()[:16]


#: `bytes_digest` of short canonical bytes, remembered: a built-in tool returns the same few values run
#: after run (the same file read, the same canned answer), and hashing the bytes to look one up is
#: cheaper than SHA-256 over them (at most 4096 x 4 KB).
_small_bytes_digest = functools.lru_cache(maxsize=4096)(bytes_digest)
_MEMO_BYTES = 4096


def canonical_json(value: Any) -> str:
    """The one JSON spelling used wherever bytes must be reproducible."""
    fast = _fast(value)
    if fast is not None:
        return fast.decode("utf-8")
    if _c_encoder is not None and type(value) in (dict, list):
        # What `_CANONICAL.encode` does for a container, without its Python-level steps (a fresh C
        # encoder with fresh circular-reference markers, as `iterencode` builds for each call).
        return "".join(_c_encoder({}, _CANONICAL.default, _encode_string, None, ":", ",", True, False, True)(value, 0))
    return _CANONICAL.encode(value)


class TraceRecorder:
    """Collects events in the order they happen; `seq` breaks ties between equal times.

    `looks` lists the events `add` recorded with a field other than a str, int or bool (a list of
    ids, a float): the only events of this trace that `recorded_sha256` must look into. Events the
    harness appends to `events` itself (an attempt's start, end and touches) hold only such fields by
    construction."""

    __slots__ = ("_events", "looks")

    def __init__(self) -> None:
        self._events: list[TraceEvent] = []
        self.looks: list[TraceEvent] = []

    def record(self, t: int, ev: str, **fields: Any) -> TraceEvent:
        return self.add(t, ev, fields)

    def add(self, t: int, ev: str, fields: Mapping[str, Any], known: bool = False) -> TraceEvent:
        """`record` with the fields as one mapping (the kernel's hot path: no second keyword copy).
        Fields that are None are left out. `known`: the caller vouches that every list among the fields
        is a list of call ids (strings, as `ToolCall` has them): only a field of another type puts the
        event in `looks`."""
        events = self._events
        event: TraceEvent = {"t": t, "seq": len(events), "ev": ev}
        plain = True
        for name, value in fields.items():
            if value is not None:
                event[name] = value
                kind = type(value)
                if kind is not str and kind is not int and kind is not bool and (kind is not list or not known):
                    plain = False
        if not plain:
            self.looks.append(event)
        events.append(event)
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
    events = events if isinstance(events, list | tuple) else list(events)
    fast = _fast_jsonl(events)
    if fast is not None:
        return fast.decode("utf-8")
    if _c_encoder is not None:
        # One C encoder for the whole trace, not one `json.dumps` per event: the same bytes at half
        # the cost (events are dicts, never a bare string, for which `encode` has its own path).
        encode = _c_encoder({}, _CANONICAL.default, _encode_string, None, ":", ",", True, False, True)
        try:
            return "".join(["".join(encode(event, 0)) + "\n" for event in events])
        except Exception:  # the plain path below raises its own error
            pass
    return "".join(canonical_json(event) + "\n" for event in events)


#: Events the harness records itself with nothing but str, int and bool fields, by construction: a
#: call's start and end and its world touches (`harness.scheduling.attempt`), over half of a trace.
#: `recorded_sha256` writes them with no look at their fields; a trace read from elsewhere is looked at.
RECORDED_PLAIN = frozenset({"start", "end", "touch"})


def _fast_jsonl(events: list[TraceEvent] | tuple[TraceEvent, ...], plain: frozenset[str] = frozenset()
                ) -> bytes | None:
    """`to_jsonl(events)` as UTF-8 by orjson, or None for json to write (see `_fast`). An event's
    plain fields are passed over here, not one call each: a trace is mostly strings and numbers.
    Events whose kind is in `plain` are known to hold only such fields and are not looked into."""
    for event in events:
        if type(event) is not dict:
            return None
        if plain and event.get("ev") in plain:
            continue
        if _fields_need_json(event):
            return None
    return _orjson_lines(events)


def _known_jsonl(events: list[TraceEvent] | tuple[TraceEvent, ...], looks: list[TraceEvent] | tuple[TraceEvent, ...]
                 ) -> bytes | None:
    """`_fast_jsonl` of a trace whose only events holding more than str, int and bool fields are `looks`."""
    for event in looks:
        if _fields_need_json(event):
            return None
    return _orjson_lines(events)


def _fields_need_json(event: TraceEvent) -> bool:
    """Whether one of the event's fields is something orjson would write differently from json."""
    for value in event.values():
        kind = type(value)
        if kind is str or kind is int or value is None or kind is bool:
            continue
        if _needs_json(value):
            return True
    return False


_LINES = orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE


def _orjson_lines(events: list[TraceEvent] | tuple[TraceEvent, ...]) -> bytes | None:
    """The events as sorted-key JSON lines by orjson, or None where it refuses one (json writes it then)."""
    try:
        # One orjson call per event from C (`map`), none of them a Python-level step: (event, default, option).
        return b"".join(map(orjson.dumps, events, repeat(None), repeat(_LINES)))
    except (TypeError, orjson.JSONEncodeError):
        return None


def sha256(events: Iterable[TraceEvent]) -> str:
    events = events if isinstance(events, list | tuple) else list(events)
    encoded = _fast_jsonl(events)
    if encoded is None:
        encoded = to_jsonl(events).encode("utf-8", "surrogatepass")
    return hashlib.sha256(encoded).hexdigest()


def recorded_sha256(events: list[TraceEvent] | tuple[TraceEvent, ...],
                    looks: list[TraceEvent] | tuple[TraceEvent, ...] | None = None) -> str:
    """`sha256(events)` of a trace this harness recorded (a `RunResult`'s): the same digest, with no
    type walk over the events of `RECORDED_PLAIN` kinds before orjson writes them. With `looks` (the
    recorder's: the events holding anything but str, int and bool fields), only those are looked into."""
    encoded = _fast_jsonl(events, RECORDED_PLAIN) if looks is None else _known_jsonl(events, looks)
    if encoded is None:
        encoded = to_jsonl(events).encode("utf-8", "surrogatepass")
    return hashlib.sha256(encoded).hexdigest()


def fingerprint(trace_sha256: str, world_digest: str) -> str:
    """A run's fingerprint: the trace hash and the final world digest, hashed together."""
    return hashlib.sha256(f"{trace_sha256}:{world_digest}".encode()).hexdigest()
