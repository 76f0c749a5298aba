"""The bridge's asyncio event loop: virtual time, one loop per thread, lent to one run at a time.

Owns `VirtualLoop` (an asyncio loop whose clock is the simulation's and whose selector never waits),
the creation-order list of its tasks, task hashing by creation sequence, and lending the loop to a
run: `lend()` first cancels and drains whatever the previous run left behind, then hands the clock
to the new run. Reusing one loop is what keeps asyncio primitives created at import time (seed 003's
module-level `asyncio.Semaphore(5)`, bound to the first loop that waits on it) working from one run
to the next. It never advances time (the bridge's pump does, through SimPy), never sleeps in real
time and never touches I/O.
"""

from __future__ import annotations

import asyncio
import atexit
import heapq
import sys
import threading
from asyncio import base_events, events, format_helpers
from collections.abc import Callable, Coroutine, Generator
from contextvars import Context, copy_context
from random import Random
from typing import Any, TypeVar

_T = TypeVar("_T")

#: The Python versions whose `BaseEventLoop._run_once` the loop's lean iteration (in `VirtualLoop.run_ready`,
#: with `_due_timers`) was checked against: 3.11.7, 3.12.1 and 3.13.0 differ only in the select timeout,
#: which the lean iteration never computes (its selector never waits). On any other version, and in debug
#: mode, each iteration is the stock `_run_once`: slower, never wrong. tests/policies/test_asyncio_loop_step.py
#: compares the two handle by handle, and runs the bridge's tests on the stock path too.
LEAN_VERSIONS = ((3, 11), (3, 12), (3, 13))
#: Whether `run_ready` steps with its lean iteration (tests set it False to run the bridge on the stock path).
lean = sys.version_info[:2] in LEAN_VERSIONS

#: How many loop iterations a drain may take: enough for any cancellation cascade; a task that keeps
#: swallowing its cancellation is given up on (a real `asyncio.run` would hang on it).
_DRAIN_ITERATIONS = 1000


class _NoIO:
    """The selector of a loop with nothing to select: asked to wait, it returns at once."""

    def select(self, timeout: float | None = None) -> list[Any]:
        return []

    def close(self) -> None:
        pass

    def get_map(self) -> dict[Any, Any]:
        return {}


class _SequencedTask(asyncio.Task[_T]):
    """A task hashed by its creation number instead of its address.

    `asyncio.wait`, `TaskGroup` and `as_completed` keep tasks in sets and iterate them (adding done
    callbacks, cancelling): with address hashing that order changes from process to process. Equality
    stays identity, so set semantics are unchanged.
    """

    _sequence: int
    #: What the borrower said the task belongs to when it was made (`VirtualLoop.owner_of`).
    owner: object

    def __init__(self, coro: Coroutine[Any, Any, _T] | Generator[Any, None, _T], *, loop: VirtualLoop,
                 sequence: int, owner: object, name: str | None = None, context: Context | None = None) -> None:
        # Set before Task.__init__: registering the task in asyncio's weak set already hashes it.
        self._sequence = sequence
        self.owner = owner
        super().__init__(coro, loop=loop, name=name, context=context)

    def __hash__(self) -> int:
        return self._sequence


class VirtualLoop(asyncio.BaseEventLoop):
    """An asyncio loop whose `time()` is the simulation clock (seconds); stepped by the bridge."""

    def __init__(self) -> None:
        super().__init__()
        self._selector = _NoIO()
        self._now_ms: Callable[[], int] = _zero
        #: Every task created on the loop and not yet drained, in creation order.
        self.tasks: list[asyncio.Task[Any]] = []
        self._created = 0
        self._release: Callable[[], None] | None = None
        self.stepping = False
        #: Where errors the loop would log (an exception in a callback, a task's exception nobody
        #: retrieved) go while a run steps it; outside a step they are dropped, never printed.
        self.on_error: Callable[[str], None] | None = None
        #: Where work handed to a thread goes while a run holds the loop (None: inline).
        self.offload: Callable[[Callable[..., Any], tuple[Any, ...]], asyncio.Future[Any]] | None = None
        #: Read in the context a task is created in: what it belongs to (the bridge's batch, so the
        #: batches of a run's concurrent agents each see their own leftover tasks). None: nothing.
        self.owner_of: Callable[[], object] | None = None
        #: The borrowing run's blocking (`blocking.Blocker`): what `time.sleep` and a sync tool called on
        #: the loop hold the loop with, and what tells `harness.bridges.clock` that code on it is bridged.
        self.blocker: Any = None
        #: Where `asyncio.as_completed` finds the stream of the run holding the loop (`harness.bridges.start_order`).
        self.start_order_stream: Callable[[], Random] | None = None
        self.set_exception_handler(_handler)
        #: `run_forever`'s async generator hooks, made once (bound methods).
        self._own_hooks = (self._asyncgen_firstiter_hook, self._asyncgen_finalizer_hook)  # type: ignore[attr-defined]

    def time(self) -> float:
        return self._now_ms() / 1000.0

    def set_debug(self, enabled: bool) -> None:
        super().set_debug(enabled)
        # Every future and task asks its loop `get_debug()` when made (from C, a Python call each time):
        # answered by a C callable kept in step with the flag instead (by BaseEventLoop.__init__ too).
        self.get_debug = _TRUE if enabled else _FALSE  # type: ignore[method-assign]

    def call_soon(self, callback: Callable[..., object], *args: Any,  # type: ignore[override]
                  context: Context | None = None) -> events.Handle:
        """`BaseEventLoop.call_soon`: the same handle appended to the ready queue, made without its
        three Python calls in the common case (every task step and future callback is one: ~30 a
        run); in debug mode, on a closed loop and off the lean versions, the stock method."""
        if self._debug or self._closed or not lean:  # type: ignore[attr-defined]
            return super().call_soon(callback, *args, context=context)
        handle: Any = _new(_Handle)
        handle._context = context if context is not None else copy_context()
        handle._loop = self
        handle._callback = callback
        handle._args = args
        handle._cancelled = False
        handle._repr = None
        handle._source_traceback = None
        self._ready.append(handle)  # type: ignore[attr-defined]
        return handle  # type: ignore[no-any-return]

    def create_task(self, coro: Any, *, name: str | None = None,  # type: ignore[override]
                    context: Context | None = None) -> asyncio.Task[Any]:
        if self._closed:  # type: ignore[attr-defined]
            self._check_closed()  # type: ignore[attr-defined]
        self._created += 1
        owner_of = self.owner_of
        # `_SequencedTask(...)` without its Python `__init__` (once per task: gather makes one per call).
        task: Any = _new_task(_SequencedTask)
        task._sequence = self._created
        task.owner = None if owner_of is None else owner_of() if context is None else context.run(owner_of)
        _init_task(task, coro, loop=self, name=name, context=context)
        self.tasks.append(task)
        return task  # type: ignore[no-any-return]

    def run_in_executor(  # type: ignore[override]
            self, executor: Any, func: Callable[..., _T], *args: Any) -> asyncio.Future[_T]:
        """Hand `func(*args)` to a thread, as a runtime does with sync work (`run_in_executor`,
        `asyncio.to_thread`: a sync tool, pydantic-ai's sync functions).

        While a run holds the loop, the run's `offload` gives the work a bridge thread on the virtual
        clock (see `threads`): it may block on the simulation (a sync tool waiting for its call) while
        the loop goes on with other tasks. Real threads would run beside the simulation, outside its
        clock and order, and a run waiting on one would hang. The `executor` argument is not used: each
        piece of work gets a thread of its own, as from a pool with a worker free. Outside a run (the
        drain of a finished one) the work runs at once, inline, taking no virtual time.
        """
        self._check_closed()  # type: ignore[attr-defined]
        if self.offload is not None:
            return self.offload(func, args)
        future: asyncio.Future[_T] = self.create_future()
        try:
            future.set_result(func(*args))
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:  # the work's own failure, delivered to whoever awaits it
            future.set_exception(exc)
        return future

    def set_default_executor(self, executor: Any) -> None:
        pass  # work handed to a thread never reaches an executor: see run_in_executor

    def _process_events(self, event_list: list[Any]) -> None:
        pass

    def _write_to_self(self) -> None:
        pass

    # -- stepping (the bridge drives these private parts of BaseEventLoop; stable in 3.11-3.13) --

    def run_ready(self, limit: int | None = None) -> None:
        """Run loop iterations until nothing is ready (at most `limit`): callbacks, task steps and
        the timers due at the current virtual time."""
        if self.stepping:
            raise RuntimeError("the virtual loop is already running (a run inside a bridged executor?)")
        self.stepping = True
        hooks = sys.get_asyncgen_hooks()
        # As run_forever does: async generators are finalised on this loop, not by the GC.
        sys.set_asyncgen_hooks(*self._own_hooks)
        self._thread_id = threading.get_ident()
        events._set_running_loop(self)
        try:
            iterations = 0
            ready = self._ready  # type: ignore[attr-defined]
            stock = self._debug or not lean  # type: ignore[attr-defined]
            popleft = ready.popleft
            while True:
                if stock:
                    self._run_once()  # type: ignore[attr-defined]
                else:
                    # One lean iteration (see `_due_timers`): the timers due now join the ready queue,
                    # then the handles ready when it began run, in order (`Handle._run` inline for the
                    # plain handles the loop makes itself: ~30 a run).
                    if self._scheduled:  # type: ignore[attr-defined]
                        self._due_timers(ready)
                    for _ in range(len(ready)):
                        handle = popleft()
                        if handle._cancelled:
                            continue
                        if type(handle) is _Handle:
                            try:
                                handle._context.run(handle._callback, *handle._args)
                            except (SystemExit, KeyboardInterrupt):
                                raise
                            except BaseException as exc:
                                _report(handle, exc)
                        else:
                            handle._run()
                    handle = None  # breaks the cycle an exception's traceback would make, as _run_once does
                iterations += 1
                if not ready or (limit is not None and iterations >= limit):
                    break
        finally:
            events._set_running_loop(None)
            self._thread_id = None  # type: ignore[assignment]
            sys.set_asyncgen_hooks(*hooks)
            self.stepping = False

    def _due_timers(self, ready: Any) -> None:
        """The first half of one iteration of the loop, `BaseEventLoop._run_once` (3.11-3.13, see
        `LEAN_VERSIONS`), without its debug timing and without the I/O poll, which has nothing to
        select here and never waits: the timers due now move to the ready queue (`run_ready` then runs
        the ready handles, the second half); the same handles run in the same order. A bridged run
        takes ~20 iterations, where they were a tenth of what the bridge adds to it."""
        loop: Any = self  # BaseEventLoop's private parts, untyped
        scheduled = loop._scheduled
        if scheduled:
            count = len(scheduled)
            if (count > base_events._MIN_SCHEDULED_TIMER_HANDLES  # type: ignore[attr-defined]
                    and loop._timer_cancelled_count / count
                    > base_events._MIN_CANCELLED_TIMER_HANDLES_FRACTION):  # type: ignore[attr-defined]
                kept = []
                for handle in scheduled:
                    if handle._cancelled:
                        handle._scheduled = False
                    else:
                        kept.append(handle)
                heapq.heapify(kept)
                loop._scheduled = scheduled = kept
                loop._timer_cancelled_count = 0
            else:
                while scheduled and scheduled[0]._cancelled:
                    loop._timer_cancelled_count -= 1
                    handle = heapq.heappop(scheduled)
                    handle._scheduled = False
            if scheduled:
                end_time = self.time() + loop._clock_resolution
                while scheduled:
                    handle = scheduled[0]
                    if handle._when >= end_time:
                        break
                    handle = heapq.heappop(scheduled)
                    handle._scheduled = False
                    ready.append(handle)

    def next_timer_ms(self) -> int | None:
        """The virtual millisecond of the earliest live timer (asyncio.sleep, wait_for...), if any."""
        scheduled = self._scheduled  # type: ignore[attr-defined]
        if not scheduled:
            return None
        live = [h.when() for h in scheduled if not h.cancelled()]
        if not live:
            return None
        return _ceil_ms(min(live))

    def pending_since(self, index: int, owner: object = None) -> list[asyncio.Task[Any]]:
        """Tasks created at position `index` or later that have not finished, in creation order (only
        those made for `owner`, if given)."""
        return [task for task in self.tasks[index:]
                if not task.done() and (owner is None or getattr(task, "owner", None) is owner)]

    # -- lending -------------------------------------------------------------------------------

    def reclaim(self) -> None:
        """End the current lease: the borrower releases what it holds, then every task still
        pending is cancelled and drained, as `asyncio.run` does when its main coroutine returns."""
        release, self._release = self._release, None
        self.offload = None  # the drain hands work over inline: the run's threads are gone
        if release is not None:
            release()
        pending = [task for task in self.tasks if not task.done()]
        for task in pending:
            task.cancel()
        drained = bool(self._ready or pending)  # type: ignore[attr-defined]
        if drained:
            self.run_ready(_DRAIN_ITERATIONS)
        if self._asyncgens:  # type: ignore[attr-defined]
            drained = True
            self.create_task(self.shutdown_asyncgens())
            self.run_ready(_DRAIN_ITERATIONS)
        # Every task is done unless a drain ran (the common end of a run: one walk over them, not two).
        for task in self.tasks:
            if drained and not task.done():
                # It swallowed its cancellation and waits on a run that is over: nothing can wake it.
                task._log_destroy_pending = False  # type: ignore[attr-defined]
            elif not task.cancelled():
                task.exception()  # retrieved: its error belonged to the run that is over
        self.tasks.clear()
        for handle in self._scheduled:  # type: ignore[attr-defined]
            handle.cancel()
        self._scheduled.clear()  # type: ignore[attr-defined]
        self._ready.clear()  # type: ignore[attr-defined]
        self._timer_cancelled_count = 0
        # Tasks hash by their number (an `asyncio.wait` set's order): every run numbers from 1, as in
        # a fresh process, whatever runs this thread's loop served before.
        self._created = 0
        self._now_ms = _zero
        self.on_error = None
        self.owner_of = None


def _zero() -> int:
    return 0


_Handle: Any = events.Handle
_new_task, _init_task = asyncio.Task.__new__, asyncio.Task.__init__
_new = object.__new__
#: `get_debug` as C callables (see `VirtualLoop.set_debug`).
_TRUE, _FALSE = True.__bool__, False.__bool__


def _report(handle: Any, exc: BaseException) -> None:
    """What `Handle._run` does with a callback's exception (outside debug mode, where the lean
    iteration runs): handed to the loop's exception handler."""
    callback = format_helpers._format_callback_source(handle._callback, handle._args)
    context = {"message": f"Exception in callback {callback}", "exception": exc, "handle": handle}
    if handle._source_traceback:
        context["source_traceback"] = handle._source_traceback
    handle._loop.call_exception_handler(context)


def _ceil_ms(seconds: float) -> int:
    # A timer due at 3.5004 s fires at 3501 ms, never before its time.
    ms = seconds * 1000
    whole = int(ms)
    return whole if ms - whole <= 1e-9 else whole + 1


def _handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's exception handler: into the run's trace while a run steps the loop, else dropped."""
    assert isinstance(loop, VirtualLoop)
    if loop.on_error is None or not loop.stepping:
        return
    message = str(context.get("message", "asyncio error"))
    exception = context.get("exception")
    if isinstance(exception, BaseException):
        message += f": {type(exception).__name__}: {exception}"
    loop.on_error(message)


_local = threading.local()
#: Every loop made, so the last lease of each is drained and the loop closed at interpreter exit.
_LOOPS: list[VirtualLoop] = []


def lend(now_ms: Callable[[], int], release: Callable[[], None],
         on_error: Callable[[str], None]) -> VirtualLoop:
    """This thread's loop, drained of the previous run and set to the new run's clock; `release` is
    called when the next run (or interpreter exit) takes it back."""
    loop: VirtualLoop | None = getattr(_local, "loop", None)
    if loop is None or loop.is_closed() or loop.stepping:
        # A run started from inside a bridged executor gets a loop of its own.
        loop = VirtualLoop()
        _LOOPS.append(loop)
        if getattr(_local, "loop", None) is None:
            _local.loop = loop
    loop.reclaim()
    loop._now_ms, loop._release, loop.on_error = now_ms, release, on_error
    return loop


@atexit.register
def _close_all() -> None:
    for loop in _LOOPS:
        if not loop.is_closed() and not loop.stepping:
            loop.reclaim()
            loop.close()
