"""The harness's only contacts with real time and signals: the wall-clock watchdog and telling a
user's Ctrl-C from a `KeyboardInterrupt` the scheduler's own code raises.

Owns `WallClockExceeded`, `wall_clock_watchdog` (SIGALRM; an expiry Python swallows, raised inside
a garbage collector callback or a `__del__`, is raised again a moment later), the per-run real-time
limit that commands driving many runs set (`wall_limit_per_run`: one standing watchdog for all of
them), the separate limit on importing and building a scheduler before any run (`ImportTimeout`,
`watched_build`), the SIGINT count behind `aborts`, the stopwatch a report uses to say how long a
check took (`stopwatch`), and the deadlines of a process supervising an isolated child (`time_left`,
harness.isolation). Real time here only ever *stops* code under test that never yields; it never
reaches the simulation: no virtual time, trace event or random draw depends on it, so a run stays a
pure function of its seed.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # the C module `signal` wraps (no stub)
import contextlib
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from functools import partial
from types import FrameType
from typing import Any, TypeVar


class WallClockExceeded(Exception):
    """Raised into a run by a real-time watchdog (`wall_clock_watchdog`) when the code under test
    spins without yielding. The simulation itself never reads the wall clock.

    A run driven under `wall_limit_per_run` that exceeds its limit raises it out of `run()` with the
    hung run as `result` (None when time ran out outside the run's body), so that a harness driving
    many runs stops at once instead of spending the limit again on every further run.
    """

    def __init__(self, message: str, result: Any = None) -> None:
        super().__init__(message)
        #: The hung `harness.run.RunResult`, or None. Typed loosely: this layer sits below the runner
        #: and never imports it.
        self.result: Any = result
        #: What the watchdog that raised it does if Python swallows it (see `_retry_swallowed`).
        self.retry: Callable[[], None] | None = None


class ImportTimeout(WallClockExceeded):
    """Importing and building a scheduler (`package.module:attribute`, resolved before any run's
    wall-clock budget starts) took longer than its own limit (`--import-timeout`, `import_timeout_s`):
    a module that never finishes importing, or a constructor that never returns. It is a hang like a
    run's (exit 3), but no run is charged with it and the message says which limit ran out."""


#: How a run's watchdog says why it stopped the code; `ImportTimeout` says its own (see `watched_build`).
_RUN_HINT = "a scheduler that never yields?"


@contextlib.contextmanager
def wall_clock_watchdog(seconds: float | None, what: str = "the run", *, hint: str = _RUN_HINT,
                        error: type[WallClockExceeded] = WallClockExceeded) -> Iterator[None]:
    """Interrupt code under test that spins without yielding to the simulation.

    Virtual-time loops are stopped by the kernel's bounds; only a Python loop that never yields can
    outrun them, and only a real timer (SIGALRM) can stop it: `WallClockExceeded` is raised wherever
    the code is when `seconds` have passed. Unix main thread only; elsewhere, or with `seconds` 0 or
    None, a no-op. It nests: when a timer of someone else's (an outer watchdog, pytest-timeout) is
    due first, that one is left alone; otherwise it is suspended and re-armed with its remaining time.
    `error` (raised) and `hint` (in its message) say which limit it is.
    """
    if not seconds or seconds <= 0 or not hasattr(signal, "setitimer") \
            or threading.current_thread() is not threading.main_thread():
        yield
        return
    standing = _standing
    if standing is not None and not standing.suspended:  # its timer is not an outer deadline: set it aside
        standing.suspend()
        try:
            with wall_clock_watchdog(seconds, what, hint=hint, error=error):
                yield
        finally:
            standing.resume()
        return
    outer_delay, outer_interval = signal.getitimer(signal.ITIMER_REAL)
    if outer_delay and outer_delay <= seconds:
        yield  # an outer deadline comes first: its handler decides what happens then
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        if _in_retry_hook(frame):
            _raise_again_soon()
            return
        exc = error(f"{what} took more than {seconds:g} s of real time ({hint})")
        exc.retry = _raise_again_soon  # this handler stays until the block ends
        raise exc

    # `_signal.signal` is what `signal.signal` wraps; the wrapper turns the previous handler into an
    # enum member by trying (and failing, with an exception) for a function: 4 us of the 7 this block
    # costs, paid for every run of an exploration. The raw handler goes back in unchanged.
    previous = _signal.signal(signal.SIGALRM, expire)
    started = time.monotonic()
    _hold_retry_hook()
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        _signal.signal(signal.SIGALRM, previous)
        _release_retry_hook()
        if outer_delay:  # give the outer timer back what it had left (at least a moment)
            left = outer_delay - (time.monotonic() - started)
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-6), outer_interval)


#: Real seconds a run may take under the commands and APIs that drive many runs, unless told otherwise
#: (`--wall-timeout`, `wall_timeout_s`): far beyond any honest run (milliseconds), short of a CI timeout.
DEFAULT_WALL_TIMEOUT_S = 60.0

#: Real seconds each `run()` may take, set by `wall_limit_per_run` (0: no per-run watchdog; None: not set).
_PER_RUN_WALL_S: ContextVar[float | None] = ContextVar("harness_per_run_wall_s", default=None)


#: Real seconds importing and building a named scheduler may take before any run (`--import-timeout`,
#: `import_timeout_s`): generous, since a real runtime's import takes minutes on a loaded CI machine
#: (openai-agents did), and it is never charged to a run's `--wall-timeout`.
DEFAULT_IMPORT_TIMEOUT_S = 600.0


def resolve_import_timeout(seconds: float | None) -> float:
    """An API's `import_timeout_s`: as given (0: no limit), or for None the default."""
    return DEFAULT_IMPORT_TIMEOUT_S if seconds is None else seconds


def resolve_wall_timeout(seconds: float | None) -> float:
    """An API's `wall_timeout_s`: as given (0: no limit), or for None the limit already in force (an
    enclosing `wall_limit_per_run`, e.g. `check_scheduler`'s around `explore`), else the default."""
    if seconds is not None:
        return seconds
    current = _PER_RUN_WALL_S.get()
    return DEFAULT_WALL_TIMEOUT_S if current is None else current


@contextlib.contextmanager
def wall_limit_per_run(seconds: float | None) -> Iterator[None]:
    """Within this block every `run()` gets its own real-time watchdog of `seconds` (0 or None: none),
    and a run that exceeds it raises `WallClockExceeded` carrying the hung run instead of returning
    it. For commands and APIs that drive many runs (explore, sweep, compare, replay,
    check_scheduler); a single `harness run` reports the hung run itself."""
    token = _PER_RUN_WALL_S.set(seconds or 0.0)
    standing = _Standing.start(seconds or 0.0)
    try:
        yield
    finally:
        if standing is not None:
            standing.stop()
        _PER_RUN_WALL_S.reset(token)


class _Standing:
    """One watchdog for every run of a `wall_limit_per_run` block: its SIGALRM handler is installed
    and its timer armed once, and a run only notes when it began and ended (`begin_run`, `end_run`:
    two stores, no system call; arming a watchdog per run cost 7 us, 2-3% of a small checked run).
    When the timer fires it looks at the run in progress: past its limit, `WallClockExceeded` is raised
    into it, exactly as a run's own watchdog would; otherwise the timer is set again for when the
    current run would reach its limit (or a whole limit when none is running), so a run is stopped
    at its limit to the millisecond whatever ran before it.

    It stands only on the main thread, where no timer of someone else's is pending (pytest-timeout's,
    `harness replay`'s own): otherwise each run arms its own watchdog (`wall_clock_watchdog`), which
    knows how to nest. A watchdog opened inside the block (importing a scheduler under its limit)
    sets this one aside while it runs; a nested block with another limit stands its own."""

    __slots__ = ("limit", "outer", "previous", "started", "suspended", "thread", "what")

    def __init__(self, limit: float, previous: Any, outer: _Standing | None) -> None:
        self.limit = limit
        self.thread = threading.get_ident()
        self.previous = previous  # the SIGALRM handler to put back
        self.outer = outer  # a standing watchdog of an enclosing block, set aside meanwhile
        self.started: float | None = None  # when the run in progress began (None: no run)
        self.what: Callable[[], str] | None = None
        self.suspended = False

    @classmethod
    def start(cls, limit: float) -> _Standing | None:
        global _standing
        if not limit or limit <= 0 or not hasattr(signal, "setitimer") \
                or threading.current_thread() is not threading.main_thread():
            return None
        outer = _standing
        if outer is not None and outer.limit == limit and not outer.suspended:
            return None  # the enclosing block's watchdog serves this one (check_scheduler around explore)
        if outer is not None and not outer.suspended:
            outer.suspend()
        elif signal.getitimer(signal.ITIMER_REAL)[0]:
            return None  # someone else's deadline is pending: each run arms its own, which nests
        standing = cls(limit, _signal.signal(signal.SIGALRM, _standing_expired), outer)
        _standing = standing
        _hold_retry_hook()
        signal.setitimer(signal.ITIMER_REAL, limit)
        return standing

    def begin_run(self, what: Callable[[], str]) -> None:
        """A run begins: the limit counts from now; `what()` names it in the message if it runs out."""
        self.what = what
        self.started = time.monotonic()

    def end_run(self) -> None:
        self.started = None

    def stop(self) -> None:
        global _standing
        signal.setitimer(signal.ITIMER_REAL, 0)
        _signal.signal(signal.SIGALRM, self.previous)
        _release_retry_hook()
        _standing = self.outer
        if self.outer is not None:
            self.outer.resume()

    def suspend(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        self.suspended = True

    def resume(self) -> None:
        self.suspended = False
        _signal.signal(signal.SIGALRM, _standing_expired)
        self._arm(time.monotonic())

    def _arm(self, now: float) -> None:
        left = self.limit if self.started is None else self.started + self.limit - now
        signal.setitimer(signal.ITIMER_REAL, max(left, 1e-4))

    def expired(self) -> None:
        now = time.monotonic()
        if self.started is not None and now - self.started >= self.limit - _SLACK_S:
            what = self.what() if self.what is not None else "the run"
            started, self.started = self.started, None  # one expiry per run, as a run's own one-shot timer
            self._arm(now)
            exc = WallClockExceeded(f"{what} took more than {self.limit:g} s of real time ({_RUN_HINT})")
            exc.retry = partial(self._again, started)
            raise exc
        self._arm(now)

    def _again(self, started: float) -> None:
        """The expiry was swallowed and the run goes on: it is due again at once (`_retry_swallowed`)."""
        if self.started is None and not self.suspended:
            self.started = started
            _raise_again_soon()


#: The standing watchdog of the innermost `wall_limit_per_run` block on the main thread, if any.
_standing: _Standing | None = None

#: How soon a swallowed expiry is due again: at once, in effect (the hook returns in microseconds).
_RETRY_S = 1e-5


def _raise_again_soon() -> None:
    # A timer rather than the signal itself: `signal.raise_signal` runs the handler before it returns,
    # inside the hook, where an exception is printed once more (and should the timer go off inside
    # the hook, the handler waits: `_in_retry_hook`). A timer a whole millisecond later often landed
    # in the next slow callback again (a user's gc callback of 15 ms: their 0.5 s limit took 3.5 s,
    # against 0.5 s with this one): this one's handler runs at the next point Python looks, back in
    # the code under test or in the next callback, which it ends at once and is retried from in turn.
    signal.setitimer(signal.ITIMER_REAL, _RETRY_S)


def _in_retry_hook(frame: FrameType | None) -> bool:
    """Whether the handler interrupted `_retry_swallowed` itself (then it waits a moment more)."""
    depth = 0
    while frame is not None and depth < 8:
        if frame.f_code is _retry_swallowed.__code__:
            return True
        frame, depth = frame.f_back, depth + 1
    return False


# A signal handler's exception is raised at whatever bytecode Python runs next, and some places only
# print an exception: a garbage collector callback (Hypothesis keeps one), a `__del__`, a weakref
# callback. An expiry raised there was printed ("Exception ignored in ...") and lost, and the run it
# was meant to stop went on. While a watchdog is armed, `_retry_swallowed` is `sys.unraisablehook`:
# it takes a watchdog's own exception, prints nothing and has it raised again as soon as the code
# under test is back where an exception propagates; anything else goes to the hook that was there
# before.
_hook_depth = 0
_hook_before: Callable[[Any], Any] | None = None


def _retry_swallowed(unraisable: Any) -> None:
    exc = unraisable.exc_value
    retry = exc.retry if isinstance(exc, WallClockExceeded) else None
    if retry is not None:
        retry()
        return
    (_hook_before or sys.__unraisablehook__)(unraisable)


def _hold_retry_hook() -> None:
    global _hook_depth, _hook_before
    if _hook_depth == 0:
        _hook_before = sys.unraisablehook
        sys.unraisablehook = _retry_swallowed
    _hook_depth += 1


def _release_retry_hook() -> None:
    global _hook_depth, _hook_before
    _hook_depth -= 1
    if _hook_depth == 0:
        if sys.unraisablehook is _retry_swallowed:  # unless someone has set their own meanwhile
            sys.unraisablehook = _hook_before or sys.__unraisablehook__
        _hook_before = None


#: A timer may fire a little before the deadline it was set for.
_SLACK_S = 0.001


def _standing_expired(signum: int, frame: FrameType | None) -> None:
    if _in_retry_hook(frame):
        _raise_again_soon()
    elif _standing is not None:
        _standing.expired()


def standing_watchdog(limit: float) -> _Standing | None:
    """The standing watchdog that covers a run with this per-run `limit` here (on its thread, not set
    aside), or None: the run then arms its own (`wall_clock_watchdog`)."""
    standing = _standing
    if standing is None or standing.suspended or standing.limit != limit or standing.thread != threading.get_ident():
        return None
    return standing


_T = TypeVar("_T")


def watched_build(build: Callable[[], _T], seconds: float | None, what: str) -> _T:
    """`build()` (importing and building a scheduler) under its own watchdog of `seconds` (the import
    limit, 0 or None: none), raising `ImportTimeout` when it runs out. Callers do it before any run's
    watchdog is armed, so a slow import is never a run's hang. A loader that wraps what the constructor
    raised in an error of its own (`get_scheduler` turns it into "cannot build a scheduler") still
    gives the timeout back: `ImportTimeout`, never a usage error."""
    hint = "a slow import, or a constructor that never returns? --import-timeout / import_timeout_s sets the limit"
    with wall_clock_watchdog(seconds, what, hint=hint, error=ImportTimeout):
        try:
            return build()
        except Exception as exc:
            if isinstance(exc.__context__, WallClockExceeded):
                raise exc.__context__ from None
            raise




#: SIGINTs the terminal delivered while `watching_user_interrupts` was active (see `aborts`).
_sigints = 0
_watching = False


def _count_sigint(signum: int, frame: FrameType | None) -> None:
    global _sigints
    _sigints += 1
    raise KeyboardInterrupt


@contextlib.contextmanager
def watching_user_interrupts() -> Iterator[None]:
    """Tell a real Ctrl-C from a `KeyboardInterrupt` the scheduler's own code raises.

    While active (main thread, and only if Python's default SIGINT handler is in place: a handler of
    the caller's is never replaced), SIGINT still raises `KeyboardInterrupt` but is also counted. A
    run treats a `KeyboardInterrupt` as the user's, and lets it stop the harness, when a SIGINT was
    counted during the run or when it cannot tell (not watching); on another thread, or watching with
    no SIGINT counted, it is the scheduler's: a `scheduler-error` like any other exception.
    """
    global _watching
    if _watching or threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    signal.signal(signal.SIGINT, _count_sigint)
    _watching = True
    try:
        yield
    finally:
        _watching = False
        signal.signal(signal.SIGINT, signal.default_int_handler)


def aborts(exc: BaseException, mark: int) -> bool:
    """Whether an exception met while running the scheduler's code must end the harness (a real
    Ctrl-C, see `watching_user_interrupts`; `mark` is the SIGINT count when the run began) rather than
    the run. Every other exception, `SystemExit`, `GeneratorExit` and custom `BaseException`s included,
    is the scheduler's."""
    if not isinstance(exc, KeyboardInterrupt):
        return False
    if threading.current_thread() is not threading.main_thread():
        return False  # signals are delivered to the main thread only: this one was raised by code
    return not _watching or _sigints != mark


def per_run_limit() -> float:
    """The real seconds `wall_limit_per_run` gives each run here (0: none)."""
    return _PER_RUN_WALL_S.get() or 0.0


def sigint_mark() -> int:
    """The count of SIGINTs seen so far: a run notes it when it begins (see `aborts`)."""
    return _sigints


def interrupt_swallowed(mark: int) -> bool:
    """Whether a real Ctrl-C arrived since `mark` although nothing was raised for it (the scheduler's
    code caught it): the run re-raises it, since the user asked the harness to stop."""
    return _watching and _sigints != mark


def time_left(seconds: float) -> Callable[[], float]:
    """A function giving the real seconds left of `seconds` from this call, never below 0: how long a
    supervising process still waits for its child (harness.isolation); nothing a run does reads it."""
    ends = time.monotonic() + seconds
    return lambda: max(0.0, ends - time.monotonic())


def stopwatch() -> Callable[[], float]:
    """A function giving the real seconds since this call: how long a check took, for its report only
    (nothing a run does reads it)."""
    started = time.perf_counter()
    return lambda: time.perf_counter() - started
