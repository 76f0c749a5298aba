"""Where in the user's own source each call was started and awaited, for the interleaving story.

Owns `recording()`, a context manager under which `SchedulerContext.start` notes, per call attempt,
the first stack frame outside harness (and outside SimPy, asyncio and threading: a built-in policy
has no such frame) and, when the call settles, the line where the user's scheduler process was
waiting for it. Off by default: then `start` pays one global lookup. It never touches the trace, the
world or the random streams, so a recorded run has the same fingerprint as any other; reports turn
it on for the one run they explain.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import simpy

from harness.sim.kernel import Kernel

_HARNESS = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_SIMPY = os.path.dirname(os.path.abspath(simpy.__file__ or "")) + os.sep
#: The standard library (asyncio, threading, concurrent.futures): never the user's line. Installed
#: packages live under it too (site-packages), and those may well be the user's runtime.
_STDLIB = os.path.dirname(os.path.abspath(os.__file__)) + os.sep
_INSTALLED = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")
#: Code that drives the user's code (an event loop, a thread's bootstrap): the walk up stops there.
_DRIVERS = (f"{os.sep}asyncio{os.sep}", f"{os.sep}threading.py", f"{os.sep}concurrent{os.sep}")
#: The kernel's stepping loop (`Kernel.run_until`, which runs SimPy's callbacks itself, as `env.step` does):
#: a call started below it was started by an event's callback, the way a SimPy frame would say.
_STEPPING = Kernel.run_until.__code__
#: How far up from `start` the walk goes: a user's frame is the first or second above harness's.
_DEPTH = 12


@dataclass
class Origins:
    """Per (call id, attempt): where it was started and where it was awaited ("path:line (function)")."""

    started: dict[tuple[str, int], str] = field(default_factory=dict)
    awaited: dict[tuple[str, int], str] = field(default_factory=dict)

    def started_at(self, call: str, attempt: int) -> str | None:
        return self.started.get((call, attempt))

    def awaited_at(self, call: str, attempt: int) -> str | None:
        return self.awaited.get((call, attempt))

    def __bool__(self) -> bool:
        return bool(self.started or self.awaited)


#: The recorder `SchedulerContext.start` reports to, or None (the default: nothing is recorded).
active: Origins | None = None


@contextmanager
def recording() -> Iterator[Origins]:
    """Record origins of the calls started inside the block (one run's worth)."""
    global active
    previous, active = active, Origins()
    try:
        yield active
    finally:
        active = previous


def note_start(handle: Any) -> None:
    """Called by `SchedulerContext.start` while recording: where the user's code started the call,
    and a first callback on its handle that notes where the user's code waits when it settles."""
    recorder = active
    if recorder is None:
        return
    key = (handle.call.id, handle.attempt)
    where = _user_frame(sys._getframe(2))
    if where is not None:
        recorder.started.setdefault(key, where)
    callbacks = handle.callbacks
    if callbacks is not None:
        # Runs first when the handle is processed; by then the list holds every waiter's resume.
        callbacks.append(lambda _event: _note_awaited(recorder, key, callbacks))


def _note_awaited(recorder: Origins, key: tuple[str, int], callbacks: list[Any]) -> None:
    for callback in callbacks:
        where = _waiter(getattr(callback, "__self__", None), 3) or _bridge_waiter(callback, 2)
        if where is not None:
            recorder.awaited.setdefault(key, where)
            return


def _bridge_waiter(callback: Any, depth: int) -> str | None:
    """The asyncio bridge settles a handle through a closure over the future its tool's coroutine
    awaits: the user's line is where the task waiting on that future is suspended."""
    for cell in getattr(callback, "__closure__", None) or ():
        future = _contents(cell)
        if _is_future(future):
            where = _future_waiter(future, depth)
            if where is not None:
                return where
    return None


def _future_waiter(future: Any, depth: int) -> str | None:
    """The user's line of a task waiting on `future`; when that task runs only harness code (the
    tool's own coroutine made a task), the line of the task waiting on it, `depth` levels up."""
    for waiter, _context in list(getattr(future, "_callbacks", None) or ()):
        task = getattr(waiter, "__self__", None)
        if task is None or not hasattr(task, "get_coro"):
            continue
        where = _innermost_user(task.get_coro())
        if where is None and depth > 0:
            where = _future_waiter(task, depth - 1)
        if where is not None:
            return where
    return None


def _contents(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None


def _is_future(value: Any) -> bool:
    return hasattr(value, "_callbacks") and hasattr(value, "add_done_callback")


def _waiter(owner: object, depth: int) -> str | None:
    """The user's line a SimPy process (or a condition over the handle, followed to its own waiters)
    is suspended at."""
    if isinstance(owner, simpy.Process):
        generator = getattr(owner, "_generator", None)
        return _innermost_user(generator)
    if isinstance(owner, simpy.events.Condition) and depth > 0 and owner.callbacks is not None:
        for callback in owner.callbacks:
            where = _waiter(getattr(callback, "__self__", None), depth - 1)
            if where is not None:
                return where
    return None


def _innermost_user(generator: Any) -> str | None:
    """The innermost frame outside harness along a `yield from` chain of suspended generators."""
    found = None
    for _ in range(_DEPTH):
        frame = getattr(generator, "gi_frame", None) or getattr(generator, "cr_frame", None)
        if frame is None:
            break
        if is_user(frame.f_code.co_filename):
            found = where(frame)
        inner = getattr(generator, "gi_yieldfrom", None) or getattr(generator, "cr_await", None)
        if inner is None:
            # The run's driver steps the user's generator with send(), not yield from: it is a local.
            inner = next((v for _, v in sorted(frame.f_locals.items(), key=lambda item: item[0])
                          if isinstance(v, Generator) and v is not generator), None)
        generator = inner
    return found


def _user_frame(frame: FrameType | None) -> str | None:
    """The first frame outside harness walking up from `frame`, unless SimPy or an event loop comes
    first (then the call was started by harness's own code: a built-in policy)."""
    for _ in range(_DEPTH):
        if frame is None:
            return None
        code = frame.f_code
        if code is _STEPPING:  # the kernel's stepping loop runs SimPy's callbacks: harness's own code started it
            return None
        filename = code.co_filename
        if filename.startswith(_HARNESS):  # the bridges' own frames (harness/bridges/asyncio/ too) go on up
            frame = frame.f_back
            continue
        if filename.startswith(_SIMPY) or any(driver in filename for driver in _DRIVERS):
            return None
        if is_user(filename):
            return where(frame)
        frame = frame.f_back
    return None


def is_user(filename: str) -> bool:
    """Whether a frame of this file is the user's code (not harness, SimPy or the standard library)."""
    if filename.startswith((_HARNESS, _SIMPY, "<frozen")):
        return False
    return not filename.startswith(_STDLIB) or any(part in filename for part in _INSTALLED)


#: The directory user paths are shown relative to (None: the current one). An isolated child works in
#: a private directory of its own and shows them relative to its parent's (`show_paths_from`).
_SHOWN_FROM: str | None = None


def show_paths_from(directory: str | None) -> None:
    """Show the user's source paths relative to `directory` (None: the current directory)."""
    global _SHOWN_FROM
    _SHOWN_FROM = directory


def where(frame: FrameType) -> str:
    path = frame.f_code.co_filename
    try:
        relative = os.path.relpath(path, _SHOWN_FROM)
        if not relative.startswith(".."):
            path = relative
    except ValueError:  # another drive (Windows)
        pass
    return f"{path}:{frame.f_lineno} ({frame.f_code.co_name})"
