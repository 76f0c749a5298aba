"""The greenlet carrier: bridge threads as greenlets on the driver's own OS thread.

Owns `run(turnstile, thread)`, the driver's side of a hand-over (switch into the thread's greenlet;
return once a thread gives the baton back), `give_back` (a thread's side: back to the driver, or,
when it hands the baton straight to the next thread, a switch straight into that thread's greenlet,
one switch where going through the driver took two), what each
thread's greenlet carries of an OS thread that greenlets do not (its thread-state dict, where every
`threading.local` keeps its data and asyncio its running loop; `current()`'s entry) and the signals a
thread would not have received on an OS thread of its own (SIGALRM's wall-clock watchdog, SIGINT: see
`SignalRoute`). A switch costs about a microsecond, where a hand-over between OS threads costs a
lock and GIL round trip (10-30 us of CPU, more on a loaded machine): about a fifth of the CPU time of
an 8-call batch on a `ThreadPoolExecutor`, the rest being Python code either way.

Usable where emptying the thread-state dict resets `threading.local` (3.11, 3.12: `turnstile`
asks once), else the OS-thread carrier of `turnstile` serves. It never decides which thread runs next
(the turnstile's rule, or the driver's arbiter) and never reads a clock.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # the C module `signal` wraps: no enum conversions
import _thread
import asyncio.events
import contextvars
import ctypes
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

import greenlet  # type: ignore[import-untyped]  # no stubs

from harness.bridges.threads.osthreads import thread_state_dict

_getcurrent = greenlet.getcurrent
_get_running_loop = asyncio.events._get_running_loop
_set_running_loop = asyncio.events._set_running_loop


class Carrier(greenlet.greenlet):  # type: ignore[misc]  # greenlet's class is untyped for mypy's purposes
    """A greenlet that runs one bridge thread's body at a time and is then parked for the next (creating
    and first entering a greenlet costs about 20 us, resuming a parked one about 1). Each body starts as
    on a fresh thread: an empty `contextvars` context, an empty thread-state dict (see `run`)."""

    #: Freed while its body waited (its run was dropped undriven): the body unwinds, then it ends.
    dying = False

    def __init__(self) -> None:
        super().__init__(self._loop)

    def join(self) -> None:
        """Nothing to wait for (an OS thread's carrier waits for its thread's end)."""

    def _loop(self) -> None:
        # The thread whose body runs next comes in `_next`, never as a switch argument: a greenlet
        # keeps the arguments it was started with for as long as it lives, and a parked carrier's frame
        # holds nothing of the run it served.
        while True:
            thread, _next[0] = _next[0], None
            following = contextvars.Context().run(thread._main)
            if self.dying:
                return  # greenlet is freeing it: it must end, not switch
            turnstile = thread.turnstile
            thread.saved = thread.loop = None
            state, parked, by_ident, ident = turnstile.green_here
            if len(parked) < MAX_PARKED:
                parked.append(self)
            # Straight into the next thread (this very carrier, if it takes a parked one: then the
            # switch returns at once and the loop starts its body), else back to the driver.
            going = None if following is None else _enter(turnstile, following, state, parked, by_ident, ident)
            if going is None:
                going = self.parent
            thread = following = turnstile = state = parked = by_ident = None
            going.switch()
            going = None


#: The thread whose body a carrier starts next (see `Carrier._loop`).
_next: list[Any] = [None]


#: At most this many carriers stay parked per OS thread.
MAX_PARKED = 64


class _PerOSThread(threading.local):
    """What `run` keeps per OS thread, read while the driver's own thread-state dict is in place."""

    def __init__(self) -> None:
        self.state: dict[str, Any] = thread_state_dict()
        self.parked: list[Carrier] = []


_here = _PerOSThread()


class _Signal:
    """A signal that arrived while a bridge thread ran: handled on the driver (see `SignalRoute`), then
    that thread's carrier resumed."""

    __slots__ = ("carrier", "frame", "handler", "signum")

    def __init__(self, handler: Callable[[int, FrameType | None], Any], signum: int, frame: FrameType | None,
                 carrier: Carrier) -> None:
        self.handler, self.signum, self.frame, self.carrier = handler, signum, frame, carrier


def run(turnstile: Any, thread: Any, by_ident: dict[int, Any], ident: int) -> None:  # a Turnstile, a BridgeThread
    """Switch into `thread`; it and each thread the baton is handed to switch straight into the next
    (`give_back`), until one gives the baton back to the driver. Each thread gets its own contents of
    this OS thread's thread-state dict while it runs (its `threading.local` data) and asyncio's running
    loop; the driver gets its own back after. A signal handler that raises while a thread runs raises
    here, on the driver; that thread is left running for good (`leak`), as an OS thread stuck in a
    blocking call or a loop would be."""
    driver = _getcurrent()
    if turnstile.driver is not driver:  # else the same greenlet as last time: the same OS thread, the same here
        turnstile.driver = driver
        here = _here
        turnstile.green_here = (here.state, here.parked, by_ident, ident)
    state, parked, by_ident, ident = turnstile.green_here
    outer = by_ident.get(ident)  # a bridge thread of another batch driving this one (nested runs)
    mine, my_loop = state.copy(), _get_running_loop()
    try:
        entered = _enter(turnstile, thread, state, parked, by_ident, ident)
        assert entered is not None  # the driver always gets a carrier
        back = entered.switch()
        while isinstance(back, _Signal):
            try:
                back.handler(back.signum, back.frame)
            except BaseException:
                leak(back.carrier)
                raise
            back = back.carrier.switch()  # the handler returned: the thread carries on
    finally:
        if outer is None:
            by_ident.pop(ident, None)
        else:
            by_ident[ident] = outer
        no_loop = _no_loop[0]
        if (my_loop is None and state.get(_LOOP_KEY, _ABSENT) is no_loop
                and mine.get(_LOOP_KEY, _ABSENT) is no_loop):  # `_swap_state`, inlined for its common case
            state.clear()
            state.update(mine)
        else:
            _swap_state(state, mine, my_loop)


def _enter(turnstile: Any, target: Any, state: dict[str, Any], parked: list[Carrier], by_ident: dict[int, Any],
           ident: int) -> Carrier | None:
    """Make `target` the running thread of this OS thread (its thread-state dict contents, its running
    loop, `current()`), and return the carrier to switch into. Whoever switches into a thread, the
    driver or the thread handing it the baton, calls this first. None, having changed nothing, when
    `target` needs a new carrier and the caller is not the driver (see below): go back to the driver."""
    carrier: Carrier | None = target.carrier
    if carrier is None:
        if parked:
            carrier = parked.pop()
        elif _getcurrent() is turnstile.driver:
            carrier = Carrier()
        else:
            # Only the driver makes carriers. A greenlet starts at the Python recursion depth of the
            # greenlet that first switches into it, so a carrier made by a thread handing the baton
            # on (deep in that thread's body) would start deeper still: a hundred threads started in a
            # chain reached the recursion limit (a RecursionError the bridge's own code met, and a
            # hang where OS threads finish), and a parked carrier kept that depth into later runs (so
            # a run's verdict depended on the runs before it). The thread gives the baton back to the
            # driver instead, which picks the very same thread next (`Turnstile._following`), as the
            # OS-thread carrier does when no parked OS thread is free.
            return None
        target.carrier = carrier
        _next[0] = target
    if carrier.parent is not turnstile.driver:
        carrier.parent = turnstile.driver  # it gives the baton back there (another greenlet may have made it)
    saved, no_loop = target.saved, _no_loop[0]
    # `_swap_state`, inlined for its common case (a thread with no running loop after another, or a fresh
    # thread): every switch.
    if target.loop is None and state.get(_LOOP_KEY, _ABSENT) is no_loop:
        if saved is None:
            # A fresh thread's contents, or the bare ones `give_back` saved as None: the shared no-loop entry
            # alone, which a dict holding that one entry already is (most switches: nothing to do).
            if len(state) != 1:
                state.clear()
                state[_LOOP_KEY] = no_loop
        else:
            state.clear()
            state.update(saved)
            if saved.get(_LOOP_KEY, _ABSENT) is not no_loop:
                _swap_state(state, saved, None)
    else:
        _swap_state(state, saved, target.loop)
    by_ident[ident] = target
    if target.state == "runnable":  # else a blocked thread released at the end of its run
        turnstile.ready -= 1
    target.state = "running"
    return carrier


#: Where asyncio (3.11, 3.12) keeps a thread's running loop in its thread-state dict.
_LOOP_KEY = "__asyncio_running_event_loop__"
_ABSENT = object()
#: The entry `_set_running_loop(None)` leaves under `_LOOP_KEY` (3.11: a holder object; 3.12: None), made
#: once and kept for the life of the process (see `_swap_state`); until then a marker no dict holds.
_no_loop: list[Any] = [object()]


def _swap_state(state: dict[str, Any], contents: dict[str, Any] | None, loop: Any) -> None:
    """Give this OS thread's thread-state dict `contents` (None: a fresh thread's) and `loop` as its
    running loop. asyncio's C code caches, per OS thread, a borrowed pointer to the entry under
    `_LOOP_KEY` it last read from the dict, which a swap of the dict's contents leaves stale:
    `_set_running_loop` resets that cache (and costs a `getpid()` system call and a new entry). It is
    skipped when the dict holds the shared no-loop entry both before and after the swap and no loop
    runs: the cache is then unset or that very entry (only `_set_running_loop` writes another one
    there, and this function alone puts the shared one back), which lives as long as the process."""
    no_loop = _no_loop[0]
    keep = loop is None and state.get(_LOOP_KEY, _ABSENT) is no_loop
    state.clear()
    if contents is not None:
        state.update(contents)
        keep = keep and contents.get(_LOOP_KEY, _ABSENT) is no_loop
    elif keep:
        state[_LOOP_KEY] = no_loop
    if keep:
        return
    _set_running_loop(loop)
    if loop is None:
        if type(no_loop) is object:  # the marker: the first entry made is the shared one from now on
            _no_loop[0] = state[_LOOP_KEY]
        else:
            state[_LOOP_KEY] = no_loop  # in place of the entry just made (the cache is unset: no read since)


def give_back(turnstile: Any, thread: Any, following: Any) -> None:
    """`thread` (the caller) hands the baton to `following`, switching straight into it, or back to
    the driver (None); returns once it gets the baton again. If its run is dropped while it waits
    (nobody drove it to the end, so nobody released it), greenlet frees its carrier by raising
    GreenletExit here: it unwinds as a released thread does (`ThreadReleased`, which the caller
    raises), the backstop of OS threads."""
    state, parked, by_ident, ident = turnstile.green_here
    # The bare contents (the shared no-loop entry alone: a thread that keeps no `threading.local` data) are
    # saved as None, what `_enter` gives a fresh thread: no copy to make and none to restore.
    thread.saved = None if len(state) == 1 and state.get(_LOOP_KEY) is _no_loop[0] else state.copy() if state else None
    thread.loop = _get_running_loop()
    try:
        going = None if following is None else _enter(turnstile, following, state, parked, by_ident, ident)
        (turnstile.driver if going is None else going).switch()
        going = None
    except greenlet.GreenletExit:
        thread.killed = True
        thread.carrier.dying = True


#: Carriers that never end (a thread stuck in a loop the watchdog interrupted, or one that swallows
#: its release again and again): never freed, as a stuck daemon thread is never joined. Freeing one
#: would resume it (greenlet raises GreenletExit into a collected greenlet) in whatever code frees it.
_leaked: list[Carrier] = []


def leak(carrier: Carrier) -> None:
    """Keep `carrier` for the life of the process (a reference nobody drops, not even at exit)."""
    _leaked.append(carrier)
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(carrier))


def abandon(turnstile: Any, thread: Any) -> None:
    """`thread` swallowed its release too often: it gives the baton back and is never resumed."""
    assert thread.carrier is not None
    leak(thread.carrier)
    while True:
        turnstile.driver.switch(None)


class SignalRoute:
    """While a batch runs on greenlets: SIGALRM and SIGINT handlers that, when the signal arrives while
    a bridge thread runs, run the real handler on the driver instead (where the signal would have been
    handled had the thread its own OS thread: Python runs handlers on the main thread only). So the
    wall-clock watchdog stops a thread that spins, or blocks in a real call, as it stops the driver,
    and user code in the thread never sees the watchdog's exception. Installed on the main thread only
    (elsewhere no handler runs at all); `close` puts back each handler it replaced, unless someone
    replaced it meanwhile."""

    SIGNALS = tuple(getattr(signal, name) for name in ("SIGALRM", "SIGINT") if hasattr(signal, name))

    def __init__(self, by_ident: dict[int, Any]) -> None:
        self.installed: list[tuple[int, Any, Any]] = []
        if _get_ident() != _MAIN_IDENT:
            return
        for signum in self.SIGNALS:
            handler = _signal.getsignal(signum)
            # Python-level handlers only (C ones run no Python code in a thread), each routed once.
            if callable(handler) and not hasattr(handler, "routed"):
                last = _last_routes.get(signum)
                if last is not None and last[0] is handler and last[1] is by_ident:
                    route = last[2]  # the same handler as the previous batch's: its route again
                else:
                    route = _route(handler, by_ident)
                    _last_routes[signum] = (handler, by_ident, route)
                _signal.signal(signum, route)
                self.installed.append((signum, handler, route))

    def close(self) -> None:
        while self.installed:
            signum, handler, route = self.installed.pop()
            if _signal.getsignal(signum) is route:
                _signal.signal(signum, handler)


#: Each signal's latest (handler, thread table, route): a batch routes the same handler as the one before
#: it (made once, not a closure and an attribute at every batch).
_last_routes: dict[int, tuple[Any, dict[int, Any], Callable[[int, FrameType | None], Any]]] = {}

_get_ident = _thread.get_ident
#: The main thread's ident: Python runs signal handlers there only.
_MAIN_IDENT = threading.main_thread().ident


def _route(handler: Callable[[int, FrameType | None], Any],
           by_ident: dict[int, Any]) -> Callable[[int, FrameType | None], Any]:
    ident = _MAIN_IDENT

    def on_signal(signum: int, frame: FrameType | None) -> Any:
        me = by_ident.get(ident) if ident is not None else None
        driver = me.turnstile.driver if me is not None else None
        if me is None or driver is None or _getcurrent() is not me.carrier:
            return handler(signum, frame)
        return driver.switch(_Signal(handler, signum, frame, me.carrier))

    on_signal.routed = handler  # type: ignore[attr-defined]
    return on_signal


def top_frame(thread: Any) -> FrameType | None:
    """The innermost frame of a thread that waits on its greenlet (None if it is not on one)."""
    carrier = thread.carrier
    return getattr(carrier, "gr_frame", None) if isinstance(carrier, Carrier) else None
