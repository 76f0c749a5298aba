"""The order `asyncio.as_completed` starts coroutines in, during a bridged run: drawn from the run's seed.

`as_completed(coros)` wraps its argument in a set before it makes a task of each coroutine
(`{ensure_future(f) for f in set(fs)}`), so the tasks start in the order of the coroutines'
addresses: another order in a fresh process, and a reproducer that replays as "nondeterministic". A
real process may show any of those orders, so the bridge neither keeps the order the executor gave
(exploration would never see another) nor lets addresses decide (a run would not be a function of its
seed): while a run holds the loop, the coroutines (and other awaitables that are not futures yet)
are made tasks in an order drawn from the run's stream `asyncio/start-order`, one shuffle per call,
and only then handed to the real `as_completed`, whose set of tasks iterates in creation order (the
loop hashes its tasks by creation sequence). Futures and tasks given as they are keep the order
their creator started them in. Different seeds show different start orders; one seed always the same.

Owns `as_completed` (the stand-in) and where it finds the run's stream: the lent loop's
`start_order_stream` (see `lend`), asked for only when `as_completed` first draws. `harness.bridges.threads.patches`
installs it with the clocks, as `asyncio.as_completed`, `asyncio.tasks.as_completed` and any name
the executor's module bound to the original (`from asyncio import as_completed`); code in other
modules that imported the original by name keeps it. Outside a run's loop it is the original. It
never changes what `as_completed` yields, only the start order.
"""

from __future__ import annotations

import asyncio
import asyncio.tasks
from collections.abc import Awaitable, Callable, Iterable, Iterator
from random import Random
from typing import Any

#: The real `asyncio.as_completed`, read once at import (before anything here replaced it).
ORIGINAL = asyncio.tasks.as_completed

#: The attribute of a lent loop that gives the stream its run draws start orders from (set while a run
#: holds the loop): on the loop itself, so that lending costs an attribute, not a weak mapping's entry.
_ATTRIBUTE = "start_order_stream"


def as_completed(fs: Iterable[Awaitable[Any]], *, timeout: float | None = None) -> Iterator[Any]:
    """`asyncio.as_completed`, starting the coroutines in an order drawn from the run's seed."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    stream: Callable[[], Random] | None = getattr(loop, _ATTRIBUTE, None) if loop is not None else None
    rng = stream() if stream is not None else None
    if rng is None or asyncio.isfuture(fs) or asyncio.iscoroutine(fs):
        return ORIGINAL(fs, timeout=timeout)  # outside a run, or its own TypeError
    # One of each, in the order given (a coroutine listed twice is one task, as in the set).
    given = list(dict.fromkeys(fs))
    unstarted = [i for i, f in enumerate(given) if not asyncio.isfuture(f)]
    order = rng.sample(unstarted, len(unstarted))
    started: dict[int, Any] = {i: asyncio.ensure_future(given[i], loop=loop) for i in order}
    return ORIGINAL([started.get(i, f) for i, f in enumerate(given)], timeout=timeout)


def lend(loop: asyncio.AbstractEventLoop, stream: Callable[[], Random]) -> None:
    """`loop` now runs a run whose start orders come from `stream()` (asked when first drawn from: most
    runs never call `as_completed`, and making a stream allocates a generator's state)."""
    setattr(loop, _ATTRIBUTE, stream)


def reclaim(loop: asyncio.AbstractEventLoop) -> None:
    if getattr(loop, _ATTRIBUTE, None) is not None:
        setattr(loop, _ATTRIBUTE, None)


#: Where `patches` installs the stand-in, with the clocks: (module, attribute, replacement).
TARGETS: tuple[tuple[Any, str, Any], ...] = (
    (asyncio, "as_completed", as_completed), (asyncio.tasks, "as_completed", as_completed))
