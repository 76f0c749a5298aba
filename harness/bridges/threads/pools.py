"""The real `ThreadPoolExecutor`'s module-level state while `from_threads` batches are open.

Owns `number_pools` / `stop_numbering`: from a batch's start to its end, `ThreadPoolExecutor._counter`
numbers a pool made in a bridge thread by its run (`_PoolNumbers`), and the pool's registry of workers
for the exit-time join, `concurrent.futures.thread._threads_queues`, leaves bridged workers out
(`_Workers`); both are put back when the last open batch ends. It never creates threads or pools.
"""

from __future__ import annotations

import concurrent.futures.thread as futures_thread
import itertools
from collections.abc import Callable, Iterator
from typing import Any

from harness.bridges.threads import thread as bridged_thread
from harness.bridges.threads.turnstile import Turnstile, current
from harness.scheduling.context import SchedulerContext


class _PoolNumbers:
    """`ThreadPoolExecutor._counter` while `from_threads` batches are open: a pool made in a bridge thread
    is numbered by its run (`ThreadPoolExecutor-0_0` for the run's first pool, in every process and on
    every run), so worker names a runtime writes into results or traces replay; anywhere else, the
    process-wide counter it replaces. Not a function: the class attribute must not bind as a method."""

    def __init__(self, real: Callable[[], int]) -> None:
        self.real = real

    def __call__(self) -> int:
        me = current()
        numbers = _pool_numbers.get(me.turnstile) if me is not None else None
        return next(numbers) if numbers is not None else self.real()


#: Each open batch's turnstile -> its run's pool numbers (one counter per run, in `ctx.session`).
_pool_numbers: dict[Turnstile, Iterator[int]] = {}
_SESSION_POOLS = "threads:pool-numbers"


class _Workers:
    """`concurrent.futures.thread._threads_queues` (the real pool's registry of its workers, joined at
    interpreter exit) while `from_threads` batches are open: a bridged worker is not registered (it
    ends with its run, never at exit; the real registry would make a weak reference to each worker and
    call back when its `Thread` is freed: ~30 Python calls a pool run); any other thread is registered
    in the real registry, which everything else reads."""

    __slots__ = ("real",)

    def __init__(self, real: Any) -> None:
        self.real = real

    def __setitem__(self, thread: Any, queue: Any) -> None:
        if type(thread) is not bridged_thread.Thread:
            self.real[thread] = queue

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.real)

    def __len__(self) -> int:
        return len(self.real)


def number_pools(turnstile: Turnstile, ctx: SchedulerContext) -> None:
    """A batch opens: its pools are numbered by its run, its workers left out of the exit-time registry."""
    numbers = ctx.session.get(_SESSION_POOLS)
    if numbers is None:
        numbers = ctx.session[_SESSION_POOLS] = itertools.count()
    if not _pool_numbers:
        futures_thread.ThreadPoolExecutor._counter = _PoolNumbers(  # type: ignore[attr-defined]
            futures_thread.ThreadPoolExecutor._counter)  # type: ignore[attr-defined]
        futures_thread._threads_queues = _Workers(futures_thread._threads_queues)  # type: ignore[assignment]
    _pool_numbers[turnstile] = numbers


def stop_numbering(turnstile: Turnstile) -> None:
    """A batch ends: the real counter and registry are back once no batch is open."""
    if _pool_numbers.pop(turnstile, None) is not None and not _pool_numbers:
        numbering: Any = futures_thread.ThreadPoolExecutor._counter  # type: ignore[attr-defined]
        if isinstance(numbering, _PoolNumbers):
            futures_thread.ThreadPoolExecutor._counter = numbering.real  # type: ignore[attr-defined]
        registry: Any = futures_thread._threads_queues
        if isinstance(registry, _Workers):
            futures_thread._threads_queues = registry.real
