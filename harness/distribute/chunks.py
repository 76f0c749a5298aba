"""How many items each task of a cluster gets, from what the items measured so far cost.

Owns the chunk sizes of a stream of tasks (guided self-scheduling): a few small probe chunks first,
then chunks sized in real seconds from the cost per item the finished chunks measured, large while
much is left (each task costs the scheduler and the client a round trip and a pickle, whatever its
size) and shrinking as the end nears, so that no worker is left idle for long while the last chunks
run. It never runs anything, never decides what an item is, and never changes a result: only which
items travel together, which the callers' results never depend on (harness.sweep sorts its rows).
"""

from __future__ import annotations

from collections.abc import Iterator

#: Items of each first chunk, before any cost is known (one per task slot of the cluster).
PROBE_ITEMS = 8

#: Real seconds a chunk aims at: never shorter (a task's round trip, a few milliseconds, stays a small
#: share of it), never longer (progress, `--out` and a lost worker's loss stay within it).
LEAST_S, MOST_S = 0.15, 3.0

#: A chunk takes this share of the work left per worker: the sizes fall geometrically toward the end.
SHARE = 4


class Chunker:
    """`items` items in order, as (start, stop) ranges whose sizes follow the cost per item measured
    so far (a range travels as two integers: the items themselves go to the workers once).

    Iterate lazily (a cluster's stream asks for the next chunk when a slot frees) and call `measured`
    with each finished chunk's item count and real seconds on its worker."""

    def __init__(self, items: int, workers: int, *, probe: int = PROBE_ITEMS,
                 least_s: float = LEAST_S, most_s: float = MOST_S) -> None:
        self._items = items
        self._workers = max(1, workers)
        self._probe = max(1, probe)
        self._least_s, self._most_s = least_s, most_s
        self._next = 0
        self._items_measured = 0
        self._seconds_measured = 0.0
        self.sizes: list[int] = []  # every chunk's size, in the order handed out (for benchmarks and tests)

    def measured(self, items: int, seconds: float) -> None:
        """A finished chunk: `items` items took `seconds` of real time on its worker."""
        self._items_measured += items
        self._seconds_measured += max(0.0, seconds)

    @property
    def seconds_per_item(self) -> float | None:
        """The mean cost measured so far (None before the first chunk came back)."""
        if not self._items_measured:
            return None
        return self._seconds_measured / self._items_measured

    def size(self) -> int:
        """The size of the next chunk (at least 1, at most what is left)."""
        left = self._items - self._next
        cost = self.seconds_per_item
        if cost is None or cost <= 0.0:
            # Nothing measured yet, or too fast to measure: the probe size, but never so large that
            # the first chunks alone would leave some worker without any.
            return max(1, min(left, self._probe, left // self._workers or 1))
        seconds = min(self._most_s, max(self._least_s, left * cost / (self._workers * SHARE)))
        return max(1, min(left, round(seconds / cost)))

    def __iter__(self) -> Iterator[tuple[int, int]]:
        while self._next < self._items:
            size = self.size()
            self.sizes.append(size)
            start = self._next
            self._next += size
            yield start, self._next
