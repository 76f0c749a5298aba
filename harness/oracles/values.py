"""When a value a scheduler reported is the value a tool produced: the one rule the oracles share.

Runtimes hand the model text, not objects: LangGraph's `ToolNode` reports a tool's value as its JSON
text, AutoGen's workbench as `str(value)`. A result is judged by the value it stands for, so a
reported value R stands for a produced value V when

1. R equals V (as before: `==` where the oracle holds both values, the canonical digest where the
   trace holds only V's digest), or, failing that,
2. R is a `str` and one of its *readings* equals V canonically (the JSON spelling digests use, so
   `1` and `True` stay apart): `json.loads(R)` (the JSON text of V, `json.dumps(V)` in any spacing)
   or `ast.literal_eval(R)` (`str(V)` or `repr(V)` of a value built of dicts, lists, strings,
   numbers, booleans and None, as tool values are). A `str` value's own `str()` is itself (rule 1).

Nothing else is decoded: no other type, no nested text inside a value, no lenient parsing.

What the rule cannot tell apart, it lets pass: two calls whose values have the same text (`1` and
`"1"` both read "1"; two calls that both returned "ok"). A runtime that reports the text "1" for
either is judged to have reported that call's own value: swapped, the model reads exactly what it
would have read unswapped, so there is nothing it could be misled by. Swapped values whose texts
differ are a `mispaired-result` (or a `divergent-result`) as before, and so is a raw value reported
for a call whose own value is another (`1` reported for the call that produced `"1"`: rule 2 reads
text only).

Used by `harness.oracles.protocol` (`mispaired-result`: is the value one of the call's own
attempts'?) and `harness.oracles.serializability` (`divergent-result`: is it the model-order value?).
It never looks at the trace or the world, and never decides a label.
"""

from __future__ import annotations

import ast
import functools
import json
from typing import Any

from harness.sim.trace import value_digest


def readings(reported: Any) -> tuple[Any, ...]:
    """The values `reported` may stand for besides itself (rule 2): for a `str`, what JSON and the
    Python literal syntax read it as, when they can; nothing for any other type."""
    if not isinstance(reported, str):
        return ()
    found: list[Any] = []
    for decode in (json.loads, ast.literal_eval):
        try:
            found.append(decode(reported))
        except Exception:  # not that syntax (or too deep, too long a number): no reading
            continue
    return tuple(found)


def reading_digests(reported: Any) -> tuple[str, ...]:
    """The canonical digests of `readings(reported)` (what the trace keeps of a produced value), for
    an oracle that knows a produced value only by its digest."""
    return _text_digests(reported) if isinstance(reported, str) else ()


@functools.lru_cache(maxsize=4096)
def _text_digests(reported: str) -> tuple[str, ...]:
    # Cached: the serializability oracle asks again for every branch it weighs, and decoding a long
    # text that is not JSON or a literal still parses it.
    digests: list[str] = []
    for value in readings(reported):
        try:
            digests.append(value_digest(value))
        except (TypeError, ValueError):  # a reading JSON cannot spell (a set, bytes, complex)
            continue
    return tuple(dict.fromkeys(digests))


def matches(reported: Any, value: Any) -> bool:
    """Whether `reported` stands for `value` (rule 1, else rule 2)."""
    if reported == value:
        return True
    if not isinstance(reported, str):
        return False
    try:
        wanted = value_digest(value)
    except (TypeError, ValueError):
        return False
    return wanted in reading_digests(reported)
