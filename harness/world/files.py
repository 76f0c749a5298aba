"""The file operations of a world, as POSIX system calls do them.

Owns `WorldFiles`, what the mock tools do to a world's tree: read, write (through hard links and
symlinks), atomic replace, append, unlink, rename, mkdir, symlink, link, and listing a tree; each
fails with the errno the kernel would give. It keeps the resolution caches honest (`_restructured`
after every change of names) and never records touches or advances time (the executor wraps the
world for that), never snapshots a world (`harness.world.world`).
"""

from __future__ import annotations

import errno as _errno
import posixpath
import stat
from typing import Any

from pyfakefs.fake_file import FakeDirectory, FakeFile
from pyfakefs.helpers import PERM_DEF_FILE as _PERM_DEF_FILE

from harness.world.clock import EPOCH_S, open_clock
from harness.world.errors import WorldError, from_os_error
from harness.world.resolution import PathResolution


class WorldFiles(PathResolution):
    """A world's tree and the operations on its files; `World` adds ledgers, session and snapshots."""

    __slots__ = ("_ticks",)

    #: Writes stamped outside a run (a serial replay), each a tick of its own (`_now`).
    _ticks: int

    def _file(self, path: str) -> FakeFile:
        found = self._object(path)
        if found is None:
            raise self._failure(path)
        assert isinstance(found, FakeFile)
        if isinstance(found, FakeDirectory):
            raise WorldError(_errno.EISDIR, path)
        return found

    def exists(self, path: str) -> bool:
        """`os.path.exists`: symlinks followed; a dangling or looping one does not exist."""
        return self._object(path) is not None

    def is_dir(self, path: str) -> bool:
        return isinstance(self._object(path), FakeDirectory)

    def read_text(self, path: str) -> str:
        return self._file(path).contents or ""

    def mtime(self, path: str) -> float:
        """`os.path.getmtime`: the modification time of the file `path` names (symlinks followed)."""
        return float(self._file(path).st_mtime)

    def _now(self) -> float:
        """What a write stamps its file with: the open run's virtual time (`harness.world.clock`); outside
        a run (a serial replay) the next tick of this world's own counter, so that every write of a replay
        moves the file's mtime, deterministically (never the host's clock)."""
        clock = open_clock()  # `file_time()` when `run_clock_open()`
        if clock is not None:
            return clock()
        self._ticks += 1
        return EPOCH_S + self._ticks / 1000

    def write_text(self, path: str, text: str) -> None:
        """Replace the file's content, creating it (and missing parents) if needed.

        Writing through a hard link changes every name of the file; through a symlink, its target.
        """
        found = self._lookup(path)
        if isinstance(found, FakeFile):
            if isinstance(found, FakeDirectory):
                raise WorldError(_errno.EISDIR, path)
            found.set_contents(text)
            _stamped(found, self._now())
            return
        if found is None:
            parent_dir, name = posixpath.split(path)
            directory = self._lookup(parent_dir)
            if isinstance(directory, FakeDirectory):
                created = FakeFile(name, contents=text, filesystem=self.fs)
                _stamped(created, self._now())
                directory.add_entry(created)
                self._restructured()
                return
        # Symlinks, case folding, missing parents, a file used as a directory: walk as the kernel
        # does (ELOOP, ENOTDIR), then write the file the walk reaches or create it there, so a
        # dangling symlink creates its target, as open(O_CREAT) does.
        real, target = self._walk_path(path)
        if target is not None:
            if isinstance(target, FakeDirectory):
                raise WorldError(_errno.EISDIR, path)
            target.set_contents(text)
            _stamped(target, self._now())
            return
        try:
            _stamped(self.fs.create_file(real, contents=text), self._now())
        except OSError as exc:
            raise from_os_error(exc, path) from None
        self._restructured()

    def replace_text(self, path: str, text: str) -> None:
        """Write `text` to a temporary file beside `path` and rename it over `path`, as atomic writers
        do (editors, hermes' file tools): the name now points at a new file. Other hard links of the
        old file keep its content, and a symlink at `path` is replaced by the file, not written
        through (POSIX `rename`)."""
        parent, name = posixpath.split(path)
        if self._replaced_in_place(parent, name, text):
            return
        # The temporary file is created in the parent: it must be a directory (ENOENT, ENOTDIR).
        real_parent, _ = self._walk_path(parent, missing_ok=False, want_dir=True, shown=path)
        _, existing = self._walk_path(path, follow_last=False)
        if isinstance(existing, FakeDirectory):
            raise WorldError(_errno.EISDIR, path)  # rename(2) of a file over a directory
        temporary = posixpath.join(real_parent, f".{name}.harness-tmp")
        try:
            _stamped(self.fs.create_file(temporary, contents=text), self._now())
            self.fs.rename(temporary, posixpath.join(real_parent, name))
        except OSError as exc:
            raise from_os_error(exc, path) from None
        self._restructured()

    def _replaced_in_place(self, parent: str, name: str, text: str) -> bool:
        """`replace_text`'s common case, done on pyfakefs's directory objects: the steps its
        `create_file` + `rename` take once their path resolution is done (~1 ms a call, most of an
        atomic write): the temporary file added (a new inode, the umask applied), then moved over the
        name. False, having changed nothing, when the fast lookup cannot decide (a symlink on the way,
        case folding) or the name is anything but a regular file, a symlink (replaced itself, never
        followed, as rename(2) does) or missing: the caller's walk does those as the kernel would."""
        directory = self._lookup(parent)
        if not isinstance(directory, FakeDirectory):
            return False
        entries = directory.entries
        existing = entries.get(name)
        temporary = f".{name}.harness-tmp"
        replaceable = existing is None or stat.S_ISREG(existing.st_mode) or stat.S_ISLNK(existing.st_mode)
        if not replaceable or temporary in entries:
            return False
        fs = self.fs
        created = FakeFile(temporary, (stat.S_IFREG | _PERM_DEF_FILE) & ~fs.umask, filesystem=fs)
        try:
            directory.add_entry(created)
        except OSError as exc:  # a read-only directory (EACCES), as create_file would raise it
            raise from_os_error(exc, posixpath.join(parent, name)) from None
        try:
            created.set_initial_contents(text)
            _stamped(created, self._now())
        except OSError as exc:  # no space left (a sized mount): the temporary file goes, as in create_file
            directory.remove_entry(temporary)
            raise from_os_error(exc, posixpath.join(parent, name)) from None
        # pyfakefs' `_do_rename`: the temporary name goes, the old file's name goes (its other hard
        # links keep it), and the new file takes the name.
        directory.remove_entry(temporary, recursive=False)
        created.name = name  # type: ignore[assignment]  # pyfakefs types the name as AnyStr
        if existing is not None:
            directory.remove_entry(name)
        directory.add_entry(created)
        self._restructured()
        return True

    def append_text(self, path: str, text: str) -> None:
        current = self.read_text(path) if self.exists(path) else ""
        self.write_text(path, current + text)

    def remove(self, path: str) -> None:
        """`unlink(2)`: the name goes (a symlink itself, not its target); a directory is EISDIR."""
        real, found = self._walk_path(path, follow_last=False, missing_ok=False)
        if isinstance(found, FakeDirectory):
            raise WorldError(_errno.EISDIR, path)
        try:
            self.fs.remove(real)
        except OSError as exc:
            raise from_os_error(exc, path) from None
        self._restructured()

    def rename(self, source: str, target: str) -> None:
        """POSIX `rename(2)`: the name `source` (a symlink itself, not its target) becomes `target`,
        replacing a file there (its other hard links keep the old content); a directory at `target`
        or a missing parent is an error, and renaming a name onto itself changes nothing."""
        if not self.fs.exists(source) and not self.fs.islink(source):
            raise WorldError(_errno.ENOENT, source, target)
        if self.fs.isdir(target) and not self.fs.islink(target):
            raise WorldError(_errno.EISDIR, source, target)
        parent = posixpath.dirname(target)
        if not self.fs.isdir(parent):
            raise WorldError(_errno.ENOENT if not self.fs.exists(parent) else _errno.ENOTDIR, source, target)
        try:
            self.fs.rename(source, target)
        except OSError as exc:
            raise from_os_error(exc, source, target) from None
        self._restructured()

    def make_dir(self, path: str) -> None:
        if self.fs.exists(path):
            if self.fs.isdir(path):
                return
            raise WorldError(_errno.EEXIST, path)
        self.fs.create_dir(path)
        self._restructured()

    def symlink(self, path: str, target: str) -> None:
        self._symlinks += 1
        self.fs.create_symlink(path, target, create_missing_dirs=True)
        self._restructured()

    def hardlink(self, existing: str, new: str) -> None:
        parent = posixpath.dirname(new)
        if parent and not self.fs.exists(parent):
            self.fs.create_dir(parent)
        self.fs.link(existing, new)
        self._restructured()

    def list_files(self, root: str) -> list[str]:
        """Regular files under `root` (following the root itself if it is a link), sorted.

        Symlinks inside the tree are listed by their own path but not descended into, like
        `find -type f` without `-L`.
        """
        top = self._object(root)
        if top is None:
            raise self._failure(root)
        if not isinstance(top, FakeDirectory):
            return [root]
        found: list[str] = []
        self._walk(top, root.rstrip("/") or "/", found, files_only=True)
        return found

    def _walk(self, directory: FakeDirectory, prefix: str, out: list[Any], *, files_only: bool) -> None:
        entries = directory.entries
        base = prefix if prefix.endswith("/") else prefix + "/"  # posixpath.join, for names without "/"
        for name in sorted(entries):
            obj = entries[name]
            path = base + name
            if isinstance(obj, FakeDirectory):
                if not files_only:
                    out.append(("dir", path, obj))
                self._walk(obj, path, out, files_only=files_only)
            elif stat.S_ISLNK(obj.stat_result.st_mode):  # what `obj.st_mode` forwards to, without the hop
                target = obj.contents or ""
                if files_only:
                    # What the link reaches (None if dangling or a loop: `find -type f` skips both).
                    reached = self._object(path)
                    if reached is not None and stat.S_ISREG(reached.st_mode):
                        out.append(path)
                else:
                    out.append(("link", path, target))
            else:
                out.append(path if files_only else ("file", path, obj))


def _stamped(changed: FakeFile, now: float) -> None:
    """A file written: its modification and change times are `now` (pyfakefs' `set_contents` leaves
    them; the os-level write it fakes does not), the run's virtual time (`WorldFiles._now`)."""
    changed.st_mtime = changed.st_ctime = now
