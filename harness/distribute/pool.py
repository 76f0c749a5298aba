"""Local worker processes that share no lock with anyone: one pipe each, killable at any moment.

Owns starting the workers (harness.distribute.workers' start method), handing each one task at a
time over its own pipe, passing back what it yields (one message per item, as soon as it exists, so
a caller can keep each result before the next is done), re-raising a worker's exception in the
caller, and ending every worker when the block ends (finished, failed or interrupted).

Why not `multiprocessing.Pool`: its workers share the task and result queues' locks; a worker killed
while holding one (Pool.terminate after a hung cell, a scheduler calling os._exit) left the pool's
task handler blocked on the lock forever, and `with Pool(...)` never returned (a rare hang of
`sweep --processes 2 --wall-timeout 1`). Here a worker holds nothing the others or the caller need,
so killing it is always safe. A worker whose parent dies (killed with SIGKILL, no chance to clean
up) exits at once: a thread waits on the parent's sentinel, and its pipe reads end of file.

It never decides what a task is or in which order results are used (harness.sweep does).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.connection import Connection, wait
from multiprocessing.context import BaseContext
from typing import Any, Generic, TypeVar

from harness.distribute.workers import pool_context

_T = TypeVar("_T")
_R = TypeVar("_R")

_ITEM, _DONE, _ERROR = "item", "done", "error"
_DONE_MARK: Any = object()  # in_order: a task has no more results

#: Seconds a finished worker gets to leave on its own before it is killed.
LEAVE_S = 2.0


class WorkerDied(RuntimeError):
    """A worker process ended in the middle of a task (killed, crashed, or `os._exit` in user code)."""


class WorkerPool(Generic[_T, _R]):
    """`processes` workers each running `fn(task)` (an iterable of results) for the tasks they are sent.
    Use as a context manager: leaving the block ends every worker."""

    def __init__(self, fn: Callable[[_T], Iterable[_R]], processes: int, context: BaseContext | None = None) -> None:
        context = context or pool_context()
        self._workers: list[tuple[multiprocessing.process.BaseProcess, Connection]] = []
        self._busy: set[Connection] = set()  # killed at once by close: their task's results are not wanted
        try:
            for _ in range(processes):
                mine, theirs = context.Pipe()
                process = context.Process(target=_serve, args=(theirs, fn), daemon=True,  # type: ignore[attr-defined]
                                          name="harness-worker")
                process.start()
                theirs.close()
                self._workers.append((process, mine))
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> WorkerPool[_T, _R]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def as_completed(self, tasks: Iterable[_T]) -> Iterator[_R]:
        """Every result of every task, as workers produce them (tasks are handed out in order, one per
        idle worker). A worker's exception is raised here; so is WorkerDied."""
        for _index, item in self._results(tasks):
            yield item

    def in_order(self, tasks: Iterable[_T]) -> Iterator[list[_R]]:
        """The results of each task (a list), task after task in the order given; the workers work ahead."""
        finished: dict[int, list[_R]] = {}
        partial: dict[int, list[_R]] = {}
        following = 0
        for index, item in self._results(tasks, done=True):
            if item is _DONE_MARK:
                finished[index] = partial.pop(index, [])
                while following in finished:
                    yield finished.pop(following)
                    following += 1
            else:
                partial.setdefault(index, []).append(item)

    def _results(self, tasks: Iterable[_T], done: bool = False) -> Iterator[tuple[int, Any]]:
        """(task index, result) as they come; with `done`, (task index, _DONE_MARK) when a task ends."""
        todo = list(enumerate(tasks))
        todo.reverse()
        idle = list(self._workers)
        busy: dict[Connection, tuple[multiprocessing.process.BaseProcess, int]] = {}
        while todo or busy:
            while todo and idle:
                process, connection = idle.pop()
                index, task = todo.pop()
                connection.send(task)
                busy[connection] = (process, index)
                self._busy.add(connection)
            ready = wait([*busy, *(process.sentinel for process, _ in busy.values())])
            for connection in [c for c in busy if c in ready or c.poll()]:
                process, index = busy[connection]
                kind, value = self._receive(connection, process)
                if kind == _ITEM:
                    yield index, value
                elif kind == _DONE:
                    del busy[connection]
                    self._busy.discard(connection)
                    idle.append((process, connection))
                    if done:
                        yield index, _DONE_MARK
                else:
                    raise value
            for connection, (process, _index) in list(busy.items()):
                if process.sentinel in ready and not connection.poll():
                    raise WorkerDied(f"a worker process ended in the middle of a task (exit code {process.exitcode})")

    @staticmethod
    def _receive(connection: Connection, process: multiprocessing.process.BaseProcess) -> tuple[str, Any]:
        try:
            message: tuple[str, Any] = connection.recv()
        except (EOFError, OSError):
            process.join(LEAVE_S)
            raise WorkerDied(f"a worker process ended in the middle of a task (exit code {process.exitcode})"
                             ) from None
        return message

    def close(self) -> None:
        """End every worker: ask, then kill what is left (safe: a worker holds no shared lock)."""
        for process, connection in self._workers:
            if connection in self._busy:
                process.kill()
            else:
                with contextlib.suppress(OSError, ValueError):
                    connection.send(None)
        for process, connection in self._workers:
            process.join(LEAVE_S)
            if process.exitcode is None:
                process.kill()
                process.join()
            connection.close()
        self._workers, self._busy = [], set()


def _serve(connection: Connection, fn: Callable[[Any], Iterable[Any]]) -> None:
    """A worker: run each task it is sent, send back each result, then `done`; stop at None or when
    the parent has gone."""
    _die_with_parent()
    while True:
        try:
            task = connection.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        try:
            for item in fn(task):
                connection.send((_ITEM, item))
        except KeyboardInterrupt:  # Ctrl-C reaches the whole process group: the parent says so, quietly here
            return
        except Exception as exc:
            connection.send((_ERROR, _portable(exc)))
            continue
        connection.send((_DONE, None))


def _portable(exc: Exception) -> Exception:
    """The exception itself if it survives pickling, else a RuntimeError with its words."""
    import pickle

    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc


def _die_with_parent() -> None:
    """Exit as soon as the process that started this worker ends, even mid-task (a SIGKILLed sweep
    must not leave workers running its cells for seconds)."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        parent.join()
        os._exit(1)

    threading.Thread(target=watch, name="harness-parent-watch", daemon=True).start()
