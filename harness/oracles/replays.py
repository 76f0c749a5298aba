"""Model-order replays, remembered: the serial reference a serializability check compares a run
with depends only on the initial world, the tool catalogue and the calls replayed (with their
idempotency keys and where each call of unknown effect stopped), not on the schedule. Many runs of
one scenario share it (every run that reports the same outcomes), so it is computed once.

Owns the memo and its key. The initial world and the catalogue are matched by identity (both are
immutable, and a scenario changed in place is a new object: see `harness.scenario.library`); the
entry holds them, so neither can be freed and its id reused while the entry lives. The calls are
matched by value. The memo keeps the most recently used replays, bounded in number and in the size of
their worlds, so a long sweep over many scenarios cannot grow it without bound. It never judges a run
and never computes a replay itself (the caller passes the function that does).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from typing import Any, TypeVar

from harness.world.state import WorldState

#: Replays kept (least recently used first out): a few per scenario for a whole library sweep...
MAX_ENTRIES = 512
#: ...and no more than about this many characters of worlds and calls: an entry weighs its initial
#: world's file contents (the replay's final world and values are of that order) and its calls, so a
#: sweep over big `from_dir` worlds (up to 16 MB each) or huge batches keeps a few of them, not 512.
MAX_CHARS = 64 << 20

_R = TypeVar("_R")


class _Key:
    """A memo key that hashes its parts once: the memo's lookup and its LRU move both hash the key,
    and the calls of a 100,000-call batch are 100,000 dataclasses to hash each time."""

    __slots__ = ("_hash", "parts")

    def __init__(self, parts: tuple[int, int, Hashable]) -> None:
        self.parts = parts
        self._hash = hash(parts)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Key) and self._hash == other._hash and self.parts == other.parts


class Hashed:
    """A tuple of a memo key's calls, hashed once: equal to (and hashed as) the tuple it holds, so a
    key made with it finds what a key made with the bare tuple stored, and the other way round. For
    what is made once and keyed by many times (`harness.oracles.model_order.CertainSteps`)."""

    __slots__ = ("_hash", "items", "key")

    def __init__(self, items: tuple[Hashable, ...]) -> None:
        self.items = items
        self._hash = hash(items)
        #: The memo key `remembered` last made with these calls: made again for the same initial world
        #: and catalogue, it is this very object, which the memo's dict finds without comparing.
        self.key: _Key | None = None

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        if isinstance(other, Hashed):
            return self._hash == other._hash and self.items == other.items
        if isinstance(other, tuple):
            return self.items == other
        return NotImplemented

    def __len__(self) -> int:
        return len(self.items)


_memo: OrderedDict[_Key, tuple[WorldState, Mapping[str, Any], Any, int]] = OrderedDict()
_weight = [0]


def remembered(initial: WorldState, catalogue: Mapping[str, Any], calls: Hashable, replay: Callable[[], _R]) -> _R:
    """`replay()`, or what it returned for the same initial world, catalogue and calls before.

    `calls` must hold, by value, everything else the replay reads. An exception from `replay` is
    not remembered: it propagates and the next call computes again.
    """
    key = calls.key if type(calls) is Hashed else None
    if key is None or key.parts[0] != id(initial) or key.parts[1] != id(catalogue):
        key = _Key((id(initial), id(catalogue), calls))
        if type(calls) is Hashed:
            calls.key = key
    # (A key kept from an earlier call names the ids of objects that may be gone and their ids reused:
    # the entry's own initial world and catalogue are compared by identity below, as for any key.)
    entry = _memo.get(key)
    if entry is not None and entry[0] is initial and entry[1] is catalogue:
        _memo.move_to_end(key)
        found: _R = entry[2]
        return found
    value = replay()
    # A replay weighs its initial world and its calls (an observation and a key a call: about 256
    # characters' worth), so a sweep over 100,000-call batches keeps two, not 512.
    weight = 1024 + sum(len(content) for _, content in initial.files) + 64 * _length(calls)
    if weight <= MAX_CHARS:
        _memo[key] = (initial, catalogue, value, weight)
        _weight[0] += weight
        while len(_memo) > MAX_ENTRIES or _weight[0] > MAX_CHARS:
            _weight[0] -= _memo.popitem(last=False)[1][3]
    return value


def _length(calls: Hashable) -> int:
    try:
        return len(calls)  # type: ignore[arg-type]
    except TypeError:
        return 1


def forget() -> None:
    """Drop every remembered replay (tests; or to give the memory back)."""
    _memo.clear()
    _weight[0] = 0


def size() -> int:
    return len(_memo)
