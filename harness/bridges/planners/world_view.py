"""The user's planner sees the simulated world's `os`, read-only, for the length of one call.

Owns `WorldView`: while it is entered, `os` (and through it `os.path`, `pathlib`, `shutil`, `glob`),
`open` / `io.open` and `os.environ` answer from the run's pyfakefs filesystem as it is at that moment,
with the runtime process's cwd (`os.getcwd()`, `Path.cwd()`) and the world's HOME (`expanduser`), so
real code that canonicalises paths sees the world's cwd, symlinks, hard links and case folding. On
exit it puts back every attribute it replaced, exactly, even if the call raised. `call_in_world`
runs one function that way.

It never lets the function change the world: every call that would write (open for writing,
`os.mkdir`, `os.rename`, `Path.touch`, ...) raises `OSError(EROFS)` — the world looks like a
read-only mount — and is remembered, and `call_in_world` then raises `PlannerWroteError` even if
the function caught the `OSError`: in production the write would have succeeded and the planner
would have gone on differently, so a simulation that pretended otherwise would mislead. It never
touches the real disk through the functions it covers; it does not cover subprocesses, sockets or
`os` functions bound elsewhere by name (`from os import stat`) except in the user function's own
module.

Why not pyfakefs' `Patcher`: it scans every loaded module for references to `os`, `pathlib`, `io`
(75 ms a call, 2.5 ms with `use_cache=True`) and builds its own filesystem. `os.path`
(`posixpath`, `genericpath`), `pathlib` and `shutil` look up `os.<function>` on the `os` module at
call time, so replacing those attributes on the one `os` module object reaches all of them for a few
tens of microseconds, and the user's module globals cover `from os import ...` where it matters.
"""

from __future__ import annotations

import builtins
import errno
import functools
import io
import os
import pwd
from collections.abc import Callable, Mapping, MutableMapping
from types import TracebackType
from typing import Any, TypeVar

from pyfakefs.fake_filesystem import FakeFilesystem
from pyfakefs.fake_open import FakeFileOpen
from pyfakefs.fake_os import FakeOsModule

T = TypeVar("T")

#: `os` functions pyfakefs fakes that only read (or act on descriptors the view itself handed out,
#: and on `umask` and the cwd, which the view restores): served by the fake filesystem.
_READS = ("access", "chdir", "close", "dup", "dup2", "fdatasync", "fstat", "fsync", "getcwd", "getcwdb",
          "getxattr", "listdir", "listxattr", "lseek", "lstat", "read", "readlink", "scandir", "stat", "umask",
          "walk", "write")
#: `os` functions pyfakefs fakes that change the filesystem: refused.
_WRITES = ("chmod", "chown", "lchmod", "link", "makedirs", "mkdir", "mknod", "remove", "removedirs", "removexattr",
           "rename", "replace", "rmdir", "setxattr", "symlink", "unlink", "utime")
#: `os` functions pyfakefs does not fake that would change the *real* disk (a path, or a descriptor
#: number the fake filesystem handed out that happens to be open in this process): refused too.
_REAL_WRITES = ("chflags", "chroot", "copy_file_range", "fchmod", "fchown", "ftruncate", "lchflags", "lchown",
                "mkfifo", "posix_fallocate", "pwrite", "pwritev", "sendfile", "truncate", "writev")
#: `os.open` flags that ask for a write.
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_EXCL


class PlannerWroteError(Exception):
    """The user's planner tried to change the world; planners see it read-only."""


class WorldView:
    """`with WorldView(fs, cwd=..., home=...):` — the process's `os` answers from `fs` inside.

    `globals` (optional) are module dictionaries to patch as well, for names bound with
    `from os import getcwd` and the like. `refused` lists every write attempted inside, in order.
    Not reentrant on one instance; instances nest (each restores what it found).
    """

    def __init__(self, fs: FakeFilesystem, *, cwd: str, home: str,
                 globals: tuple[MutableMapping[str, Any], ...] = (), users: Mapping[str, str] | None = None) -> None:
        self.fs, self.cwd, self.home = fs, cwd, home
        #: The world's password database: `os.path.expanduser("~alice")` reads it through `pwd`.
        self.users = dict(users or {})
        self._saved_pwd: Any = None
        self.globals = globals
        self.refused: list[str] = []
        self._saved_os: dict[str, Any] = {}
        self._saved_open: tuple[Any, Any] | None = None
        self._saved_globals: list[tuple[MutableMapping[str, Any], str, Any, Any]] = []
        self._saved_fs: tuple[str, int, frozenset[int]] | None = None

    # -- what the process sees ----------------------------------------------------------------

    def _replacements(self) -> dict[str, Any]:
        fake_os = FakeOsModule(self.fs)
        fake_open = FakeFileOpen(self.fs)
        table: dict[str, Any] = {}
        for name in _READS:
            if hasattr(os, name):
                table[name] = getattr(fake_os, name)
        for name in (*_WRITES, *_REAL_WRITES):
            if hasattr(os, name):
                table[name] = self._refusal(f"os.{name}")
        table["open"] = functools.partial(self._os_open, fake_os.open)
        # A fresh, deterministic environment: the harness process's own variables (its HOME, its
        # PATH) are not the simulated runtime's, and would make a run depend on the machine.
        table["environ"] = {"HOME": self.home, "PWD": self.cwd}
        self._open = functools.partial(self._builtin_open, fake_open)
        return table

    def _refusal(self, what: str) -> Callable[..., Any]:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            target = args[0] if args else kwargs.get("path", kwargs.get("src", ""))
            self._refuse(what, target)

        refuse.__name__ = what.rpartition(".")[2]
        return refuse

    def _refuse(self, what: str, target: Any) -> None:
        self.refused.append(f"{what}({target!r})")
        raise OSError(errno.EROFS, f"Read-only file system: a planner sees the simulated world read-only ({what})",
                      str(target))

    def _os_open(self, fake: Callable[..., int], path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & _WRITE_FLAGS:
            self._refuse("os.open", path)
        return fake(path, flags, *args, **kwargs)

    def _builtin_open(self, fake: FakeFileOpen, file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if any(flag in mode for flag in "wax+"):
            self._refuse(f"open(mode={mode!r})", file)
        return fake(file, mode, *args, **kwargs)

    # -- entering and leaving -----------------------------------------------------------------

    def __enter__(self) -> WorldView:
        fs = self.fs
        table = self._replacements()
        # Save everything before changing anything, so a failure half-way restores cleanly.
        self._saved_os = {name: getattr(os, name) for name in table}
        self._saved_open = (builtins.open, io.open)
        self._saved_fs = (fs.cwd, fs.umask, frozenset(i for i, f in enumerate(fs.open_files) if f))
        by_identity = {id(original): (original, table[name]) for name, original in self._saved_os.items()}
        by_identity[id(builtins.open)] = (builtins.open, self._open)
        try:
            for namespace in self.globals:
                for key, value in list(namespace.items()):
                    found = by_identity.get(id(value))
                    if found is not None and found[0] is value:
                        self._saved_globals.append((namespace, key, value, found[1]))
                        namespace[key] = found[1]
            for name, replacement in table.items():
                setattr(os, name, replacement)
            builtins.open = io.open = self._open
            self._saved_pwd = pwd.getpwnam
            pwd.getpwnam = self._getpwnam
            fs.cwd = self.cwd
        except BaseException:
            self._restore()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._restore()

    def _getpwnam(self, name: str) -> pwd.struct_passwd:
        """The world's users, not the machine's: an unknown name is a KeyError, as for pwd."""
        names = sorted(self.users)
        if name not in self.users:
            raise KeyError(f"getpwnam(): name not found: {name!r}")
        uid = 0 if name == "root" else 1000 + names.index(name)
        return pwd.struct_passwd((name, "x", uid, uid, name, self.users[name], "/bin/sh"))

    def _restore(self) -> None:
        if self._saved_pwd is not None:
            pwd.getpwnam = self._saved_pwd
            self._saved_pwd = None
        for name, original in self._saved_os.items():
            setattr(os, name, original)
        self._saved_os = {}
        if self._saved_open is not None:
            builtins.open, io.open = self._saved_open
            self._saved_open = None
        for namespace, key, original, replacement in reversed(self._saved_globals):
            if namespace.get(key) is replacement:  # the user's code may have rebound it since
                namespace[key] = original
        self._saved_globals = []
        if self._saved_fs is not None:
            cwd, umask, was_open = self._saved_fs
            self._saved_fs = None
            self.fs.cwd, self.fs.umask = cwd, umask
            # Files the function left open would stay open on the live world for the rest of the run.
            for fd, files in enumerate(self.fs.open_files):
                if files and fd not in was_open:
                    for handle in list(files):
                        handle.close()


def module_globals(fn: Callable[..., Any]) -> tuple[MutableMapping[str, Any], ...]:
    """The module dictionaries `fn`'s code runs in: a function's, a bound method's, a partial's
    function's, or a callable object's `__call__`'s."""
    found: list[MutableMapping[str, Any]] = []
    seen: set[int] = set()
    pending: list[Any] = [fn]
    while pending:
        item = pending.pop()
        if isinstance(item, functools.partial):
            pending.append(item.func)
            continue
        target = getattr(item, "__func__", item)
        namespace = getattr(target, "__globals__", None)
        if namespace is None and not isinstance(item, type):
            namespace = getattr(type(item).__call__, "__globals__", None)
        if isinstance(namespace, dict) and id(namespace) not in seen and namespace is not vars(builtins):
            seen.add(id(namespace))
            found.append(namespace)
    return tuple(found)


def call_in_world(fn: Callable[..., T], *args: Any, fs: FakeFilesystem, cwd: str, home: str,
                  users: Mapping[str, str] | None = None, keywords: Mapping[str, Any] | None = None) -> T:
    """`fn(*args, **keywords)` with the process's `os` answering from `fs` (see `WorldView`); raises
    `PlannerWroteError` if it tried to write, whether or not it caught the refusal."""
    view = WorldView(fs, cwd=cwd, home=home, globals=module_globals(fn), users=users)
    with view:
        result = fn(*args, **(keywords or {}))
    if view.refused:
        more = f" and {len(view.refused) - 1} more" if len(view.refused) > 1 else ""
        raise PlannerWroteError(f"the planner tried to change the world: {view.refused[0]}{more}; planners see the "
                                "simulated world read-only (the world is what the tools change)")
    return result
