"""The digest of a reported value, as the trace keeps a produced one (`harness.sim.trace.value_digest`),
remembered by the value's canonical bytes.

Owns `reported_digest`. The protocol oracle digests every value a scheduler reported, to find the
attempt that produced it: the canonical bytes are cheap (orjson), the SHA-256 over them is not (OpenSSL
3 sets up a context per hash: ~0.9 us, most of a small value's digest). Runs of one scenario report the
same values again and again, so the digest is kept by the bytes it is a pure function of: the same
answer, without the hash. Only short values are kept, and only so many (the memo is dropped when full),
so a sweep over many scenarios or huge values cannot grow it without bound. It never judges.
"""

from __future__ import annotations

import hashlib
from typing import Any

from harness.sim.trace import canonical_bytes

#: Values whose canonical bytes are longer than this are hashed every time (a file's content, say).
MAX_BYTES = 1024
#: Digests kept at most; past this the memo starts again.
MAX_ENTRIES = 4096

_memo: dict[bytes, str] = {}


def reported_digest(value: Any) -> str:
    """`value_digest(value)` exactly (the same digest, the same exception for a value JSON cannot
    spell): SHA-256 of the canonical bytes, cut to 16 hex digits, looked up by those bytes first."""
    data = canonical_bytes(value)
    found = _memo.get(data)
    if found is None:
        found = hashlib.sha256(data).hexdigest()[:16]
        if len(data) <= MAX_BYTES:
            if len(_memo) >= MAX_ENTRIES:
                _memo.clear()
            _memo[data] = found
    return found


def forget() -> None:
    """Drop every remembered digest (tests)."""
    _memo.clear()
