"""The canonical JSON (what fingerprints and digests hash) is json's, byte for byte, whichever encoder
writes it: orjson for plain values, json for floats and anything orjson refuses."""

from __future__ import annotations

import enum
import hashlib
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.sim import trace
from harness.sim.trace import canonical_bytes, canonical_json, to_jsonl


def reference(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class Colour(enum.StrEnum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


# Every code point, lone surrogates and controls included; ints past 64 bits; floats of every size.
texts = st.text(st.characters(codec=None, categories=None), max_size=12)
scalars = (st.none() | st.booleans() | st.integers(-(2**70), 2**70) | texts
           | st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([Colour.RED, Level.HIGH, -0.0, 1e-05]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
                      | st.dictionaries(texts | st.sampled_from([Colour.RED]), inner, max_size=4), max_leaves=12)


@settings(max_examples=400)
@given(values)
def test_canonical_json_is_json_byte_for_byte(value: Any) -> None:
    assert canonical_json(value) == reference(value)
    assert canonical_bytes(value) == reference(value).encode("utf-8", "surrogatepass")  # what digests hash


@settings(max_examples=200)
@given(st.lists(st.dictionaries(texts, values, max_size=5), max_size=6))
def test_a_trace_is_json_lines_byte_for_byte(events: list[dict[str, Any]]) -> None:
    expected = "".join(reference(event) + "\n" for event in events)
    assert to_jsonl(events) == expected
    assert trace.sha256(events) == hashlib.sha256(expected.encode("utf-8", "surrogatepass")).hexdigest()


def test_orjson_writes_the_plain_values() -> None:
    """The fast path is taken for what traces hold (so the tests above compare two encoders)."""
    assert trace._fast({"t": 0, "ev": "start", "calls": ["a", "b"], "ok": True, "none": None}) is not None
    for slow in (1.5, {"x": [math.pi]}, "\ud800", 2**64, {1: "int key"}, Colour.RED):
        assert trace._fast(slow) is None


def test_what_json_refuses_is_still_refused() -> None:
    with pytest.raises(TypeError):
        canonical_json({"when": object()})
    with pytest.raises(TypeError):
        to_jsonl([{"when": object()}])
