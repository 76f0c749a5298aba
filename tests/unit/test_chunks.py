"""Chunk sizes of a cluster's stream follow the measured cost per item (harness.distribute.chunks):
probes first, large chunks while much is left, small ones at the end, every item exactly once."""

from __future__ import annotations

import pytest

from harness.distribute.chunks import LEAST_S, MOST_S, PROBE_ITEMS, Chunker


def _drain(chunker: Chunker, seconds_per_item: float, workers: int = 2) -> list[tuple[int, int]]:
    """Every range, each measured as it is handed out (as a stream with `workers` slots would, a chunk late)."""
    ranges, late = [], []
    for span in chunker:
        ranges.append(span)
        late.append(span)
        if len(late) > workers:  # the oldest chunk in flight comes back
            start, stop = late.pop(0)
            chunker.measured(stop - start, (stop - start) * seconds_per_item)
    return ranges


@pytest.mark.parametrize("items", [0, 1, 7, 100, 10_000, 156_000])
def test_every_item_once_in_order(items: int) -> None:
    ranges = _drain(Chunker(items, workers=2), seconds_per_item=0.001)
    assert [i for start, stop in ranges for i in range(start, stop)] == list(range(items))
    assert all(stop > start for start, stop in ranges)


def test_probes_first_then_chunks_sized_in_seconds_falling_toward_the_end() -> None:
    cost = 0.001  # 1 ms a cell: 10,000 cells are 10 s of work for 2 workers
    chunker = Chunker(10_000, workers=2)
    sizes = [stop - start for start, stop in _drain(chunker, cost)]
    assert sizes[:2] == [PROBE_ITEMS, PROBE_ITEMS]  # nothing measured yet
    measured = sizes[3:]
    assert max(measured) * cost <= MOST_S + cost  # never a chunk longer than the most
    assert all(size * cost >= LEAST_S - cost for size in measured[:-1])  # nor shorter than the least but the last
    assert measured[-2] < max(measured) / 4  # the last chunks are small: no worker idles long at the end
    assert 10 <= len(sizes) <= 200  # a few dozen tasks, not thousands
    assert chunker.sizes == sizes


def test_expensive_items_make_small_chunks_and_cheap_items_large_ones() -> None:
    slow = [stop - start for start, stop in _drain(Chunker(10_000, workers=4), seconds_per_item=0.05)]
    fast = [stop - start for start, stop in _drain(Chunker(10_000, workers=4), seconds_per_item=0.0001)]
    assert max(slow) * 0.05 <= MOST_S + 0.05 and max(slow) < 100
    assert max(fast) > 1000


def test_fewer_items_than_a_probe_per_worker() -> None:
    assert [stop - start for start, stop in Chunker(5, workers=4)] == [1, 1, 1, 1, 1]
