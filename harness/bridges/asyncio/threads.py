"""Work an asyncio runtime hands to a thread (`run_in_executor`, `asyncio.to_thread`), on the thread
bridge's turnstile.

Owns `ThreadHost`: one per run of `from_asyncio`, made at the run's first hand-off. Each piece of work
gets a bridge thread of its own (named `asyncio_N`, as the default executor names its workers): a real
OS thread that runs only when it holds the baton, so exactly one thing runs at a time — the virtual
loop (stepped by the run's pump) or one bridge thread. While the host lives the thread bridge's
primitives are installed (`time.sleep`, locks, queues, `ThreadPoolExecutor` inside the work count
virtual time and are switch points), and the work's module has its `from time import sleep`-style
names swapped too. When the work returns or raises, the asyncio future the loop handed out settles —
on the loop's side, by the pump, never from the bridge thread. A sync tool called in such a thread
blocks it until the simulated call ends (see `Toolbox.invoke_blocking`). At the end of the run every
thread still alive is released (`ThreadReleased` unwinds it) and its OS thread joined, and the
patches are restored: no real thread outlives the run.

It never decides which runnable thread goes next (the pump does: the lowest in creation order, or the
run's arbiter in order-first runs) and never advances time.
"""

from __future__ import annotations

import asyncio
import concurrent.futures.thread as futures_thread
import contextvars
import functools
from collections.abc import Callable
from typing import Any

from harness.bridges.threads import patches
from harness.bridges.threads import thread as bridged_thread
from harness.bridges.threads.patches import Installation
from harness.bridges.threads.turnstile import BridgeThread, ThreadReleased, Turnstile
from harness.sim.kernel import Kernel

#: The type of `contextvars.Context().run`, which `asyncio.to_thread` wraps the function in.
_CONTEXT_RUN_TYPE = type(contextvars.Context().run)

#: Turnstile -> the host that owns it, so a tool called in a bridge thread finds its run.
_hosts: dict[Turnstile, ThreadHost] = {}


def host_of(thread: BridgeThread) -> ThreadHost | None:
    """The asyncio run a bridge thread belongs to (None for a `from_threads` thread)."""
    return _hosts.get(thread.turnstile)


class ThreadHost:
    """The bridge threads of one `from_asyncio` run."""

    def __init__(self, kernel: Kernel, on_wake: Callable[[], None], choosing: bool, owner: object) -> None:
        #: The run's state (`run_state.RunState`): its latest toolbox serves tools called in threads that
        #: name no batch (see `toolbox_of`).
        self.owner = owner
        #: The batch (its toolbox) whose task handed each thread its work: a run's concurrent agents
        #: each have batches running, and `run_in_executor` does not carry the caller's context.
        self._toolboxes: dict[BridgeThread, object] = {}
        self.turnstile = Turnstile(lambda: kernel.now, on_wake, lambda: kernel.steps)
        # As in `from_threads`: in order-first runs a yield is a choice and every switch goes through
        # the pump (where the arbiter chooses); in plain runs a thread that blocks hands the baton
        # straight to the next runnable one, the pump's own rule, with half the OS context switches.
        self.turnstile.yields_switch = choosing
        self.turnstile.direct = not choosing
        # The run's declared machine: what `os.cpu_count()` answers in the work (`owner.ctx`, the run's context).
        self.patches = Installation(machine=getattr(getattr(owner, "ctx", None), "machine", None))
        #: Work that ended and whose future the pump has not settled yet: (future, ok, value or error).
        self.finished: list[tuple[asyncio.Future[Any], bool, Any]] = []
        self.closed = False
        _hosts[self.turnstile] = self

    def submit(self, loop: asyncio.AbstractEventLoop, func: Callable[..., Any],
               args: tuple[Any, ...], toolbox: object = None) -> asyncio.Future[Any]:
        """`loop.run_in_executor(executor, func, *args)`: a new bridge thread runs `func(*args)`, for the
        batch whose toolbox is `toolbox` (the handing task's, if any)."""
        future: asyncio.Future[Any] = loop.create_future()
        # `run_in_executor(None, time.sleep, 1)`: the function was read on the loop's thread, where it
        # is the real one; in a bridge thread it must be the bridged one.
        func = patches.replacement_of(func)
        if isinstance(func, functools.partial) and func.func.__class__ is _CONTEXT_RUN_TYPE and func.args:
            # `asyncio.to_thread(os.cpu_count)` hands over `partial(context.run, os.cpu_count)`: the
            # function inside is the one to replace, and whose module to swap.
            inner = patches.replacement_of(func.args[0])
            func = functools.partial(func.func, inner, *func.args[1:], **func.keywords)
            namespace = getattr(getattr(inner, "func", inner), "__globals__", None)
        else:
            namespace = getattr(getattr(func, "func", func), "__globals__", None)  # a partial's function too
        if isinstance(namespace, dict):
            self.patches.swap(namespace)
        finished = self.finished

        def work() -> None:
            try:
                value = func(*args)
            except ThreadReleased:
                raise  # the run is over: unwinding, nobody awaits this any more
            except BaseException as exc:  # as a pool worker does: the failure goes to the future
                finished.append((future, False, exc))
            else:
                finished.append((future, True, value))

        thread = self.turnstile.spawn(work, f"asyncio_{len(self.turnstile.threads)}")
        if toolbox is not None:
            self._toolboxes[thread] = toolbox
        return future

    def toolbox_of(self, thread: BridgeThread) -> object:
        """The toolbox of the batch that handed `thread` its work (None: a thread that work started, or
        work handed over outside any batch's task)."""
        return self._toolboxes.get(thread)

    def runnable(self) -> list[BridgeThread]:
        return self.turnstile.runnable()

    def run(self, thread: BridgeThread) -> None:
        """Hand `thread` the baton until it (or whichever thread it handed the baton to) blocks or
        ends, then settle the futures of the work that ended."""
        self.turnstile.run(thread)
        self.settle()

    def settle(self) -> None:
        finished, self.finished[:] = list(self.finished), []
        for future, ok, value in finished:
            if future.done():  # cancelled by its awaiter (a `wait_for` timeout): the thread ran on anyway
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)

    def next_deadline(self) -> int | None:
        return self.turnstile.next_deadline()

    def expire(self) -> None:
        self.turnstile.expire()

    def close(self) -> list[str]:
        """Release every thread still alive and restore the patches (idempotent). Returns the names
        of threads that would not end (parked for good as daemon threads)."""
        if self.closed:
            return []
        self.closed = True
        try:
            return self.turnstile.release_all()
        finally:
            self.finished.clear()
            self._toolboxes.clear()
            self.patches.close()
            _hosts.pop(self.turnstile, None)
            # A pool the work made registers its workers for an exit-time join; they are over already.
            registry: Any = futures_thread._threads_queues
            for worker in [t for t in registry if isinstance(t, bridged_thread.Thread)]:
                registry.pop(worker, None)
