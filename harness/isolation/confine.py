"""What the isolated child may do to the machine: resource limits and a guard on the real disk.

Owns `apply_limits` (address space, open files, CPU seconds: `resource.setrlimit`, soft and hard, so
user code cannot raise them again) and `DiskGuard`, an audit hook (`sys.addaudithook`, which cannot
be removed once added) that refuses, with `PermissionError`, every write the child's Python code
attempts outside its private directory (`open` in a writing mode through `open`, `io.FileIO`,
`os.open`/`posix.open`; `sqlite3.connect` of a file; removing, renaming, linking, making directories,
changing modes) and every new process (`os.system`, `os.fork`, `subprocess`, `os.exec*`,
`os.posix_spawn`), and keeps the list to report. It is a guard against careless Python code, not a
sandbox: native code (ctypes, an extension) can still reach the disk, code that finds the guard
(through `gc`) can disarm it, and `_posixsubprocess.fork_exec` called directly raises no audit event.
It never runs a scenario.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence
from typing import Any

#: What a refusal says first (the scheduler sees it in its PermissionError; the report repeats it).
REFUSED = "refused in an isolated run"

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
#: Audit events that start another program or process: refused outright.
_PROCESSES = frozenset({"os.system", "os.fork", "os.forkpty", "subprocess.Popen", "os.exec", "os.posix_spawn",
                        "os.spawn", "os.startfile", "pty.spawn"})
#: Audit events that change paths: how many of their first arguments are paths, and where their
#: directory descriptors are (-1 when not given): a path relative to a descriptor cannot be checked.
_CHANGES: dict[str, tuple[int, tuple[int, ...]]] = {
    "os.remove": (1, (1,)), "os.rmdir": (1, (1,)), "os.rename": (2, (2, 3)), "os.replace": (2, (2, 3)),
    "os.mkdir": (1, (2,)), "os.link": (2, (2, 3)), "os.symlink": (2, (2,)), "os.truncate": (1, ()),
    "os.chmod": (1, (2,)), "os.chown": (1, (3,)), "os.utime": (1, (3,)), "os.mkfifo": (1, (2,)),
    "os.mknod": (1, (3,)), "shutil.rmtree": (1, (1,)), "os.chflags": (1, ()), "os.lchmod": (1, ()),
    "os.lchown": (1, ()),
}
#: Paths anyone may write.
_ALWAYS = ("/dev/null",)


def apply_limits(address_space: int | None, open_files: int | None, cpu_seconds: int | None) -> None:
    """Cap the child's address space (bytes), open files and CPU seconds (None: leave as it is). Where
    the platform has no such limit, or the hard limit is already lower, the lower one stays."""
    import resource

    for name, value in (("RLIMIT_AS", address_space), ("RLIMIT_NOFILE", open_files), ("RLIMIT_CPU", cpu_seconds)):
        kind = getattr(resource, name, None)
        if value is None or kind is None:
            continue
        _, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(kind, (value, value))


class DiskGuard:
    """The audit hook of one child: writes outside `root` and new processes are refused and noted."""

    def __init__(self, root: str) -> None:
        self.root = os.path.realpath(root)
        self.refused: list[str] = []
        self.armed = False
        self._busy = False

    def install(self) -> None:
        sys.addaudithook(self._hook)
        self.armed = True

    def _hook(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.armed or self._busy:
            return
        what: str | None = None
        if event == "open":
            what = self._open(args)
        elif event in _PROCESSES or event.startswith("os.exec") or event.startswith("os.spawn"):
            what = f"starting a process ({event}{_shown(args[:1])})"
        elif event == "sqlite3.connect":
            what = self._sqlite(args)
        elif event in _CHANGES:
            what = self._changes(event, args)
        if what is not None:
            self.refused.append(what)
            raise PermissionError(f"{REFUSED}: {what}")

    def _open(self, args: tuple[Any, ...]) -> str | None:
        path, mode, flags = ((*tuple(args), None, None, None))[:3]
        writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or \
            (mode is None and isinstance(flags, int) and bool(flags & _WRITE_FLAGS))
        if not writes or not isinstance(path, str | bytes):
            return None  # reading, or a descriptor already open
        if mode is None and not os.path.isabs(path):
            # os.open's event does not say its dir_fd: a relative path may be relative to any directory
            return f"writing {_text(path)} through os.open with a relative path"
        return None if self._inside(path) else f"writing {_text(path)}"

    def _sqlite(self, args: tuple[Any, ...]) -> str | None:
        database = args[0] if args else None
        if not isinstance(database, str | bytes | os.PathLike):
            return None
        name = _text(os.fspath(database))
        if name == ":memory:" or name.startswith("file::memory:") or self._inside(os.fspath(database)):
            return None
        return f"opening the SQLite database {name}"

    def _changes(self, event: str, args: Sequence[Any]) -> str | None:
        count, descriptors = _CHANGES[event]
        for position in descriptors:
            if position < len(args) and isinstance(args[position], int) and args[position] >= 0:
                return f"{event} relative to a directory descriptor"
        for path in args[:count]:
            if isinstance(path, str | bytes | os.PathLike) and not self._inside(os.fspath(path)):
                return f"{event} on {_text(os.fspath(path))}"
        return None

    def _inside(self, path: str | bytes) -> bool:
        self._busy = True  # realpath reads links: its own audit events must not recurse
        try:
            text = os.fsdecode(path)
            if text in _ALWAYS:
                return True
            resolved = os.path.realpath(text)
        except (OSError, ValueError):
            return False
        finally:
            self._busy = False
        return resolved == self.root or resolved.startswith(self.root + os.sep) or resolved in _ALWAYS


def _text(path: str | bytes) -> str:
    return os.fsdecode(path) if isinstance(path, bytes) else path


def _shown(args: tuple[Any, ...]) -> str:
    if not args:
        return ""
    text = repr(args[0])
    return f": {text if len(text) <= 60 else text[:57] + '...'}"
