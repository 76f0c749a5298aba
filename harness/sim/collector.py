"""Holding off CPython's full garbage collections while a large run, or its judging, executes, and
keeping the heap that was already there out of the full collections of a long search.

Owns `held_full_collections`, `frozen_heap` and `long_search` (the two settings a search of
thousands of small runs makes: the heap frozen, young collections less often). A full
(generation-2) collection visits every live object, and CPython starts one whenever the objects that
survived younger collections grow by a quarter. A run of 100,000 calls grows the heap by millions of
objects, so those collections come again and again over an ever larger heap: measured, 40% of such
a run under `resource_keys` and 30% of judging it, and
the reason its cost per call grew past twice that of a 100-call run. While a hold lasts, young
collections go on (they free the cycles a run makes and drops: finished processes, fired events);
only the full ones wait, and CPython runs the next one when it next decides, after the hold. Runs
below `LARGE_CALLS` are not held, so a long exploration of small runs keeps its full collections and
its memory. It never changes what a run does: collection timing is not part of a trace.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

#: Calls from which a run (and the judging of its result) holds off full collections.
LARGE_CALLS = 1_000
#: A third threshold no run reaches: generation 2 is collected only once that many generation-1
#: collections have happened (CPython <= 3.13; later versions collect incrementally and ignore it).
_NEVER = 1 << 30

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, int, int] | None = None


def held_full_collections(calls: int) -> contextlib.AbstractContextManager[None]:
    """Within this block, for `calls` >= `LARGE_CALLS`, no full collection starts on its own (an
    explicit `gc.collect()` still does). Nested and concurrent holds share one: the thresholds are
    put back as they were when the last one ends."""
    # A small run (nearly every run) gets a shared block that does nothing: no generator to start.
    return _NOT_HELD if calls < LARGE_CALLS else _held()


_NOT_HELD = contextlib.nullcontext()


@contextlib.contextmanager
def _held() -> Iterator[None]:
    global _depth, _saved
    with _lock:
        if _depth == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(_saved[0], _saved[1], _NEVER)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _saved is not None:
                # Only the full-collection threshold is put back: a `long_search` may have changed
                # the young one meanwhile, and puts that back itself.
                young, middle, _ = gc.get_threshold()
                gc.set_threshold(young, middle, _saved[2])
                _saved = None


_frozen = 0


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """Within this block, the objects alive when it began are left out of every collection
    (`gc.freeze`), so the full collections a long search sets off visit only what it made.

    Hypothesis's search keeps a growing tree of what it tried, so the objects that survive young
    collections keep growing and full collections keep coming, each over the whole heap (the test
    session's modules and fixtures included): measured on check_scheduler's generated batches, about
    5% of the search in a bare process. What the block makes is collected as before, so its memory
    stays bounded; what was alive before and dies inside is freed after it. A heap someone else froze
    (a pre-forking server, a benchmark) is left as it is, and nested blocks share the outermost."""
    global _frozen
    with _lock:
        mine = _frozen > 0 or gc.get_freeze_count() == 0
        if mine:
            if _frozen == 0:
                gc.freeze()
            _frozen += 1
    try:
        yield
    finally:
        if mine:
            with _lock:
                _frozen -= 1
                if _frozen == 0:
                    gc.unfreeze()


#: Allocations between young collections during a long search (CPython's default is 700).
SEARCH_YOUNG_THRESHOLD = 2_000

_young_depth = 0
_young_saved: int | None = None


@contextlib.contextmanager
def long_search() -> Iterator[None]:
    """What the collector is set to while thousands of small runs follow one another (an exploration,
    a sweep, check_scheduler's search): the heap already there frozen (`frozen_heap`), and a young
    collection every `SEARCH_YOUNG_THRESHOLD` allocations instead of CPython's 700.

    A run allocates and drops thousands of small objects (trace events, events, results); most are
    freed by reference counting before any collection sees them, and fewer young collections pass
    over the survivors fewer times. Measured on a random exploration of config-clobber: about 5% of
    its time. It costs at most that many more young objects alive at once. A young threshold of 0
    (automatic collection switched off) or above this one is left as it is; nested and concurrent
    blocks share one setting, put back when the last ends."""
    global _young_depth, _young_saved
    with _lock:
        if _young_depth == 0:
            young = gc.get_threshold()[0]
            if 0 < young < SEARCH_YOUNG_THRESHOLD:
                _young_saved = young
                gc.set_threshold(SEARCH_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
        _young_depth += 1
    try:
        with frozen_heap():
            yield
    finally:
        with _lock:
            _young_depth -= 1
            if _young_depth == 0 and _young_saved is not None:
                gc.set_threshold(_young_saved, *gc.get_threshold()[1:])
                _young_saved = None
