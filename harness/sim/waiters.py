"""The callbacks of an event that many conditions wait on at once, each leaving it in constant time.

Owns `Waiters` and `many_waiters(event)`. A batch's shared stop signals (the noticed interrupt,
sibling cancellation, the batch deadline) are in every running attempt's `any_of`, and SimPy keeps an
event's callbacks in a list: each attempt that ends takes its check out of each signal's list, a scan
and a shift of everything after it. With k calls in flight that is O(k) per attempt, O(k^2) a batch:
measured, a tenth of a 100,000-call `resource_keys` run was moving those lists about.

`Waiters` is that list with an index beside it: the same callbacks in the same order, the same
`append`, `remove` (the first equal one, `ValueError` when there is none), `in`, iteration, length
and indexing, but `remove` and `in` find an entry by hash instead of scanning. Nothing reads a
different callback, or reads one in a different order: the trace cannot tell the two apart. It never
decides which events are shared; `harness.scheduling.runtime` does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, SupportsIndex, overload

import simpy

Callback = Callable[[simpy.Event], None]

#: From how many waiters on one event `Waiters` pays for its upkeep (two index entries a callback:
#: ~0.5 us a waiter, added and removed, against a list's ~0.15 us). Measured with waiters leaving in
#: random order (calls of random latency), a list costs as much at about 64 and 2.4x as much at 256;
#: leaving in the order they came, not before about 8,000.
MANY_WAITERS = 64


class Waiters:
    """An event's callbacks as SimPy keeps them (a list in the order added) with constant-time
    `remove` and `in`: `_entries` holds them by the order they were added (a dict keeps insertion
    order), `_where` maps each callback to its entries' numbers, oldest first.

    It answers as a list would for callbacks that are equal only to callbacks of their own kind, as
    every one SimPy and the harness add is (bound methods, functions, partials); one that cannot be
    hashed is found by a scan. A list asks each entry whether it equals the one removed, and the
    index asks the one removed: a callable claiming equality with a different kind could tell."""

    __slots__ = ("_entries", "_next", "_unhashable", "_where")

    def __init__(self, callbacks: Iterable[Callback] = ()) -> None:
        self._entries: dict[int, Callback] = {}
        #: A callback's entry number, or the numbers of its equal entries (a list) when added twice.
        self._where: dict[Any, int | list[int]] = {}
        self._next = 0
        self._unhashable = 0
        for callback in callbacks:
            self.append(callback)

    def append(self, callback: Callback) -> None:
        number = self._next
        self._next = number + 1
        self._entries[number] = callback
        try:
            known = self._where.get(callback)
        except TypeError:  # a callable that defines equality but no hash: kept, found by a scan
            self._unhashable += 1
            return
        if known is None:
            self._where[callback] = number
        elif isinstance(known, int):
            self._where[callback] = [known, number]
        else:
            known.append(number)

    def remove(self, callback: Callback) -> None:
        """Remove the first callback equal to `callback` (`ValueError` if there is none), as `list.remove`."""
        try:
            known = self._where.get(callback)
        except TypeError:
            known = None
        if known is None:
            if self._unhashable:
                for number, entry in self._entries.items():
                    if entry is callback or entry == callback:
                        self._forget(number, entry)
                        del self._entries[number]
                        return
            raise ValueError("Waiters.remove(x): x not in list")
        if isinstance(known, int):
            del self._where[callback]
            del self._entries[known]
            return
        del self._entries[known.pop(0)]
        if len(known) == 1:
            self._where[callback] = known[0]

    def __contains__(self, callback: object) -> bool:
        try:
            if callback in self._where:
                return True
        except TypeError:
            pass
        return bool(self._unhashable) and any(entry is callback or entry == callback
                                              for entry in self._entries.values())

    def __iter__(self) -> Iterator[Callback]:
        return iter(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def __bool__(self) -> bool:
        return bool(self._entries)

    def index(self, callback: Callback) -> int:
        for position, entry in enumerate(self._entries.values()):
            if entry is callback or entry == callback:
                return position
        raise ValueError("Waiters.index(x): x not in list")

    @overload
    def __getitem__(self, at: SupportsIndex) -> Callback: ...

    @overload
    def __getitem__(self, at: slice) -> list[Callback]: ...

    def __getitem__(self, at: SupportsIndex | slice) -> Callback | list[Callback]:
        return list(self._entries.values())[at]

    def __setitem__(self, at: SupportsIndex, callback: Callback) -> None:
        """Replace the callback at position `at` (in place: the same position, a new callback)."""
        numbers = list(self._entries)
        number = numbers[at]
        self._forget(number, self._entries[number])
        self._entries[number] = callback
        try:
            known = self._where.get(callback)
        except TypeError:
            self._unhashable += 1
            return
        if known is None:
            self._where[callback] = number
        else:
            merged = sorted([known, number] if isinstance(known, int) else [*known, number])
            self._where[callback] = merged

    def _forget(self, number: int, callback: Callback) -> None:
        try:
            known = self._where.get(callback)
        except TypeError:
            self._unhashable -= 1
            return
        if isinstance(known, int):
            del self._where[callback]
        elif known is not None:
            known.remove(number)
            if len(known) == 1:
                self._where[callback] = known[0]

    def __repr__(self) -> str:
        return f"Waiters({list(self._entries.values())!r})"


def many_waiters(event: simpy.Event) -> simpy.Event:
    """`event`, its callbacks kept as `Waiters` from now on (the same ones, in the same order);
    returned for chaining. An event already processed (no callbacks left) is returned as it is."""
    callbacks: object = event.callbacks  # (SimPy types it a list; it may be a `Waiters` already)
    if callbacks is not None and not isinstance(callbacks, Waiters):
        event.callbacks = Waiters(event.callbacks)  # type: ignore[assignment]
    return event
