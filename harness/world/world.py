"""The simulated world the mock tools act on.

Owns the live, mutable world of one run: a pyfakefs `FakeFilesystem` used through its object API
(no global patching, so nothing a tool does can reach the real disk), external ledgers and the
shared session state (shell cwd and environment). It converts to and from `WorldState`. It never
records touches or advances time: the executor wraps it for that.
"""

from __future__ import annotations

import errno as _errno
import functools
import os
import pickle
import posixpath
import stat
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

from pyfakefs.fake_file import FakeDirectory, FakeFile
from pyfakefs.fake_filesystem import FakeFilesystem, OSType
from pyfakefs.helpers import PERM_DEF_FILE as _PERM_DEF_FILE

from harness.world.copying import FilesystemCopier
from harness.world.ledger import Ledger
from harness.world.state import WorldState


def expand_user(raw: str, home: str, users: Mapping[str, str] | None = None) -> str:
    """`os.path.expanduser` on this world: `~` is `home`, `~name` the home of the world's user `name`
    (see `World.users`); an unknown user leaves the path as it is, as Python does, so opening it
    then fails like any missing relative path."""
    if not raw.startswith("~"):
        return raw
    name, slash, rest = raw[1:].partition("/")
    base = (users or {}).get(name) if name else home
    if base is None:
        return raw
    return base.rstrip("/") + slash + rest if slash else base


def default_users(home: str, users: Mapping[str, str] | None = None) -> dict[str, str]:
    """The world's users: `root` (/root), the owner of `home` (its last component), and any the
    scenario names, which win."""
    owner = posixpath.basename(home.rstrip("/"))
    found = {"root": "/root", **({owner: home} if owner else {})}
    found.update(users or {})
    return found


def absolute_path(raw: str, cwd: str, home: str, users: Mapping[str, str] | None = None) -> str:
    """`~` and `~user` expanded, joined to `cwd` and normalised as text, like `os.path.abspath`.

    Symlinks are not resolved, so `link/../x` collapses textually, as it does in real planners.
    """
    raw = expand_user(raw, home, default_users(home, users) if raw.startswith("~") else None)
    return posixpath.normpath(posixpath.join(cwd, raw))


def _object_path(obj: FakeFile) -> str:
    """The path of a pyfakefs object from its parent links: what `FakeFile.path` returns on a POSIX
    filesystem, without its path normalisation (30 us a call, paid on every touch)."""
    names: list[str] = []
    node: FakeFile | None = obj
    while node is not None and node.parent_dir is not None:
        names.append(str(node.name))
        node = node.parent_dir()
    return "/" + "/".join(reversed(names))


@functools.lru_cache(maxsize=4096)
def _plain_absolute(cwd: str, raw: str) -> str | None:
    """`raw` joined to `cwd` and normalised when no component is `..` (text alone decides then), else
    None. A pure function of its arguments, remembered by value: tools resolve the same few paths
    in every run."""
    joined = posixpath.join(cwd, raw)
    return None if ".." in joined.split("/") else posixpath.normpath(joined)


def _too_long(path: str) -> bool:
    """ENAMETOOLONG: the path over `PATH_MAX` bytes, or one of its names over `NAME_MAX`."""
    encoded = path.encode("utf-8", "surrogateescape")
    return len(encoded) > PATH_MAX or any(len(name) > NAME_MAX for name in encoded.split(b"/"))


class _Defer:
    """Marker: a fast lookup that pyfakefs must settle."""


DEFER = _Defer()
_MISSING = object()


#: Linux's number and message for each errno name. The world is pinned to Linux semantics (see
#: `World.__init__`), and an error's text goes into results and fingerprints, so it must read the same
#: on any host: macOS numbers ELOOP 62, not 40, and its libc words some messages differently.
_LINUX_ERRNO: dict[str, tuple[int, str]] = {
    "EPERM": (1, "Operation not permitted"),
    "ENOENT": (2, "No such file or directory"),
    "EIO": (5, "Input/output error"),
    "EACCES": (13, "Permission denied"),
    "EBUSY": (16, "Device or resource busy"),
    "EEXIST": (17, "File exists"),
    "EXDEV": (18, "Invalid cross-device link"),
    "ENOTDIR": (20, "Not a directory"),
    "EISDIR": (21, "Is a directory"),
    "EINVAL": (22, "Invalid argument"),
    "ENAMETOOLONG": (36, "File name too long"),
    "ENOTEMPTY": (39, "Directory not empty"),
    "ELOOP": (40, "Too many levels of symbolic links"),
}

#: Symlinks followed in one path walk before the kernel gives up with ELOOP (Linux `MAXSYMLINKS`).
MAX_SYMLINK_HOPS = 40
#: Longest path and longest name a Linux filesystem accepts, in bytes (`PATH_MAX` - 1, `NAME_MAX`).
PATH_MAX = 4095
NAME_MAX = 255
#: Identities a world remembers at most (each a path and its identity): a run querying ever new
#: paths of a template's tree, one sweep cell after another, keeps its memory bounded.
_IDENTITIES_KEPT = 8192


class WorldError(Exception):
    """A world operation failed the way the real system call would, with its errno.

    `WorldError(errno.ENOENT, "/repo/x")` reads `[Errno 2] No such file or directory: '/repo/x'`,
    exactly what `str(OSError)` gives in the tool's process, so the model sees the error a real tool
    would show it; `WorldError(errno.ENOENT, a, b)` reads `...: 'a' -> 'b'` as a failed rename does.
    `errno` is the host's constant (compare it with `errno.ENOENT`), `name` its symbolic name; the
    number printed is Linux's whatever the host. `text` replaces the whole message for errors that
    are not the kernel's (Python's `embedded null byte`). A lone string is a free-form message with
    no errno, for callers that predate errnos.
    """

    def __init__(self, code: int | str, filename: str | None = None, filename2: str | None = None, *,
                 text: str | None = None) -> None:
        if isinstance(code, str):  # WorldError("message"): free-form, no errno
            self.errno: int | None = None
            self.name: str | None = None
            self.strerror = code
            message = code
        else:
            self.errno = code
            self.name = _errno.errorcode.get(code, f"E{code}")
            number, self.strerror = _LINUX_ERRNO.get(self.name, (code, os.strerror(code)))
            message = f"[Errno {number}] {self.strerror}"
            if filename is not None:
                message += f": {filename!r}" + (f" -> {filename2!r}" if filename2 is not None else "")
        self.filename = filename
        self.filename2 = filename2
        super().__init__(text if text is not None else message)

    def __reduce__(self) -> tuple[Any, ...]:
        # The default pickling calls `WorldError(message)`, which would drop the errno.
        return (_restore_world_error, (self.errno, self.strerror, self.filename, self.filename2, str(self)))


def _restore_world_error(code: int | None, strerror: str, filename: str | None, filename2: str | None,
                         text: str) -> WorldError:
    return WorldError(strerror if code is None else code, filename, filename2, text=text)


def _from_os_error(exc: OSError, filename: str, filename2: str | None = None) -> WorldError:
    """A pyfakefs failure as the WorldError of the path the tool asked for (pyfakefs raises host
    errnos, so the name maps to Linux's number and message)."""
    return WorldError(exc.errno if isinstance(exc.errno, int) else _errno.EIO, filename, filename2)


def null_byte_error(path: str) -> WorldError:
    """A path with a NUL byte never reaches the kernel: Python refuses it with this ValueError text."""
    return WorldError(_errno.EINVAL, path, text="embedded null byte")


class World:
    """Filesystem + ledgers + session; build one with `World.from_state` or `World.empty`."""

    # `from_state` sets every one of these on a world thawed from a template (it skips __init__).
    __slots__ = ("_found", "_identities", "_symlinks", "_walked", "cwd", "env", "fs", "home", "ledgers",
                 "scenario_users", "users")

    def __init__(self, *, case_sensitive: bool = True, cwd: str = "/", home: str = "/home/user",
                 env: Mapping[str, str] | None = None, users: Mapping[str, str] | None = None) -> None:
        fs = FakeFilesystem(path_separator="/")
        # Pin POSIX semantics so a run is the same on a macOS or Windows host. The setter resets
        # the whole filesystem (~30 us), so only pay for it off Linux.
        if fs.os != OSType.LINUX:
            fs.os = OSType.LINUX
        fs.is_case_sensitive = case_sensitive
        self.fs = fs
        self.ledgers: dict[str, Ledger] = {}
        self.cwd = cwd
        self.env: dict[str, str] = dict(env or {})
        self.home = home
        #: The users a scenario names (name -> home), and all of them with root and home's owner.
        self.scenario_users: dict[str, str] = dict(users or {})
        self.users = default_users(home, self.scenario_users)
        # path -> identity, and path -> object (or None / DEFER): both valid until the tree's
        # structure changes (see `_restructured`); writing a file's content changes neither.
        self._identities: dict[str, str] = {}
        self._found: dict[str, FakeFile | _Defer | None] = {}
        #: path -> object the kernel-like walk reached, for paths the fast lookup defers (same lifetime).
        self._walked: dict[str, FakeFile | None] = {}
        # Symlinks ever created here: without any, path walks need not test each component.
        self._symlinks = 0

    @classmethod
    def empty(cls) -> World:
        return cls()

    # -- paths -------------------------------------------------------------------------------

    def absolute(self, raw: str) -> str:
        """`raw` resolved against the session cwd the way the kernel opens it: `~` expanded, joined to
        the cwd, and each `..` applied to the directory the components before it resolve to, symlinks
        followed (POSIX), not to their text (`absolute_path`, what planners compute). Components not
        followed by `..` keep their spelling, so a touch still says which alias the tool used.

        Fails as the kernel would before any file is touched: a NUL byte (Python's ValueError text),
        a name or path too long (ENAMETOOLONG), and for a prefix that `..` must leave, a missing
        directory (ENOENT), a file (ENOTDIR) or a symlink loop (ELOOP)."""
        if "\x00" in raw:
            raise null_byte_error(raw)
        if len(raw) > NAME_MAX // 4 and _too_long(raw):  # a shorter path cannot exceed NAME_MAX bytes
            raise WorldError(_errno.ENAMETOOLONG, raw)
        if raw.startswith("~"):
            raw = expand_user(raw, self.home, self.users)
        plain = _plain_absolute(self.cwd, raw)
        if plain is not None:
            return plain  # the hot path: without `..`, text and POSIX agree
        parts = posixpath.join(self.cwd, raw).split("/")
        result = "/"
        for part in parts:
            if part in ("", "."):
                continue
            if part == "..":
                # The prefix must be a directory the kernel can walk: `file/..` and `missing/..` fail.
                resolved, _ = self._walk_path(result, missing_ok=False, want_dir=True, shown=raw)
                result = posixpath.dirname(resolved)
            else:
                result = posixpath.join(result, part)
        return result

    def realpath(self, path: str) -> str:
        """The path with symlinks resolved, as `realpath(3)` would on this world, by the same walk the
        tools' `..` uses: every other component keeps the spelling it was given (no case folding,
        hard links untouched). Like `os.path.realpath`, missing components are kept as spelled (a
        planner scopes files not yet created); a symlink loop (more than 40 hops) fails with ELOOP and
        a file used as a directory with ENOTDIR, as the kernel's walk does."""
        if "\x00" in path:
            raise null_byte_error(path)
        return self._walk_path(path)[0]

    def _walk_path(self, path: str, *, follow_last: bool = True, missing_ok: bool = True,
                   want_dir: bool = False, shown: str | None = None) -> tuple[str, FakeFile | None]:
        """The kernel's path walk (`path_resolution(7)`) over this world: component by component from
        the root, each symlink met replaced by its target (relative to the link's directory), `..`
        taken from the directory reached so far. Returns the resolved path and the object there (None
        if it does not exist).

        `follow_last=False` stops at a final symlink (lstat, unlink, rename); `missing_ok` carries on
        past a missing component textually (realpath, creating a file) instead of failing with ENOENT;
        `want_dir` requires the result to be a directory. Errors name `shown` (default `path`): the
        path the caller was asked about, as `str(OSError)` would.
        """
        name = path if shown is None else shown
        pending = path.split("/")
        pending.reverse()  # a stack: the next component is at the end
        names: list[str] = []
        nodes: list[FakeFile | None] = [self.fs.root]
        hops = 0
        while pending:
            part = pending.pop()
            if part in ("", "."):
                continue
            if part == "..":
                # Taken from the directory reached so far, symlinks already followed. `file/..` is
                # left to the caller: `absolute` requires the prefix to be a directory (ENOTDIR, as
                # the kernel), `realpath` pops it as `os.path.realpath` does.
                if names:
                    names.pop()
                    nodes.pop()
                continue
            here = nodes[-1]
            if here is not None and not isinstance(here, FakeDirectory):
                raise WorldError(_errno.ENOTDIR, name)  # a file used as a directory
            child = None if here is None else self._entry(here, part)
            if child is None:
                if not missing_ok:
                    raise WorldError(_errno.ENOENT, name)
                names.append(part)
                nodes.append(None)
                continue
            if stat.S_ISLNK(child.st_mode) and (follow_last or any(p not in ("", ".") for p in pending)):
                hops += 1
                if hops > MAX_SYMLINK_HOPS:
                    raise WorldError(_errno.ELOOP, name)
                target = child.contents or ""
                if target.startswith("/"):
                    del names[:]
                    del nodes[1:]
                pending.extend(reversed(target.split("/")))
                continue
            names.append(part)
            nodes.append(child)
        found = nodes[-1]
        if want_dir and not isinstance(found, FakeDirectory):
            raise WorldError(_errno.ENOENT if found is None else _errno.ENOTDIR, name)
        return "/" + "/".join(names), found

    def _entry(self, directory: FakeDirectory, name: str) -> FakeFile | None:
        """The entry `name` of `directory`, folding case on a case-insensitive world."""
        child: FakeFile | None = directory.entries.get(name)
        if child is None and not self.fs.is_case_sensitive:
            folded = name.lower()
            child = next((obj for key, obj in directory.entries.items() if str(key).lower() == folded), None)
        return child

    def _failure(self, path: str) -> WorldError:
        """Why `path` cannot be opened: the first component the walk fails on (ENOENT, ENOTDIR,
        ELOOP), named by the whole path as `open()` reports it."""
        try:
            self._walk_path(path, missing_ok=False)
        except WorldError as exc:
            return exc
        return WorldError(_errno.ENOENT, path)

    def canonical(self, path: str) -> str:
        """The identity of the file at `path`: one name for all its aliases (symlinks resolved, the
        stored spelling on a case-insensitive world, one name for all hard links). Oracles and the
        optimal bound compare touches by it; it is not what a planner could compute."""
        identities = self._identities
        identity = identities.get(path)
        if identity is None:
            identity = self._identity(path)
            if len(identities) < _IDENTITIES_KEPT:
                identities[path] = identity
        return identity

    def _restructured(self) -> None:
        """Names were added or removed: identities and lookups may have changed. Both caches are
        replaced, not cleared: until this first happens, a world thawed from a template shares the
        template's identities (see `from_state`)."""
        self._identities = {}
        self._found = {}
        self._walked = {}

    def _identity(self, path: str) -> str:
        found = self._object(path)
        if found is not None:
            identity = _object_path(found)
        else:
            parent, name = posixpath.split(path)
            identity = path if parent == path else posixpath.join(self._identity(parent), name)
        return identity if self.fs.is_case_sensitive else identity.lower()

    # -- files -------------------------------------------------------------------------------

    def _lookup(self, path: str) -> FakeFile | _Defer | None:
        """The object at a plain path by walking directory entries, None if it does not exist,
        or `DEFER` when pyfakefs must decide.

        pyfakefs's own path resolution costs tens of microseconds a call and dominates a run, so the
        common case — an absolute, normalised path with no symlink on the way in a case-sensitive
        world — is answered here from pyfakefs's own object tree. Anything else (a symlink, case
        folding, an odd spelling) is deferred to pyfakefs, which stays the authority on semantics.
        """
        cached = self._found.get(path, _MISSING)
        if cached is not _MISSING:
            return cached  # type: ignore[return-value]
        found = self._walk_to(path)
        self._found[path] = found
        return found

    def _walk_to(self, path: str) -> FakeFile | _Defer | None:
        if not self.fs.is_case_sensitive or not path.startswith("/") or path.startswith("//"):
            return DEFER
        node: FakeFile = self.fs.root
        for part in path.split("/"):
            if not part:
                continue
            if part in (".", ".."):
                return DEFER
            if not isinstance(node, FakeDirectory):
                return DEFER  # a file used as a directory: let pyfakefs raise the exact error
            child = node.entries.get(part)
            if child is None:
                return None
            if self._symlinks and stat.S_ISLNK(child.stat_result.st_mode):
                return DEFER
            node = child
        return node

    def _object(self, path: str) -> FakeFile | None:
        """The object at `path` (symlinks followed), or None: the fast walk, else the kernel-like walk
        (the one `realpath` and `absolute` use, so a loop is ELOOP after 40 hops everywhere)."""
        found = self._lookup(path)
        if found is DEFER:
            # A symlink on the way (or case folding): walked once per structure, like `_lookup`'s
            # answers, since neither names nor link targets change without `_restructured`.
            walked = self._walked.get(path, _MISSING)
            if walked is _MISSING:
                try:
                    walked = self._walk_path(path, missing_ok=False)[1]
                except WorldError:
                    walked = None
                self._walked[path] = walked
            return walked  # type: ignore[return-value]
        assert not isinstance(found, _Defer)
        return found

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

    def write_text(self, path: str, text: str) -> None:
        """Replace the file's content, creating it (and missing parents) if needed.

        Writing through a hard link changes every name of the file; through a symlink, its target.
        """
        found = self._lookup(path)
        if isinstance(found, FakeFile):
            if isinstance(found, FakeDirectory):
                raise WorldError(_errno.EISDIR, path)
            found.set_contents(text)
            return
        if found is None:
            parent_dir, name = posixpath.split(path)
            directory = self._lookup(parent_dir)
            if isinstance(directory, FakeDirectory):
                directory.add_entry(FakeFile(name, contents=text, filesystem=self.fs))
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
            return
        try:
            self.fs.create_file(real, contents=text)
        except OSError as exc:
            raise _from_os_error(exc, path) from None
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
            self.fs.create_file(temporary, contents=text)
            self.fs.rename(temporary, posixpath.join(real_parent, name))
        except OSError as exc:
            raise _from_os_error(exc, path) from None
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
            raise _from_os_error(exc, posixpath.join(parent, name)) from None
        try:
            created.set_initial_contents(text)
        except OSError as exc:  # no space left (a sized mount): the temporary file goes, as in create_file
            directory.remove_entry(temporary)
            raise _from_os_error(exc, posixpath.join(parent, name)) from None
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
            raise _from_os_error(exc, path) from None
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
            raise _from_os_error(exc, source, target) from None
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

    # -- ledgers and session --------------------------------------------------------------

    def ledger(self, name: str) -> Ledger:
        ledger = self.ledgers.get(name)
        if ledger is None:
            ledger = self.ledgers[name] = Ledger(name)
        return ledger

    # -- snapshots -------------------------------------------------------------------------

    def state(self) -> WorldState:
        items: list[Any] = []
        self._walk(self.fs.root, "/", items, files_only=False)
        files: list[tuple[str, str]] = []
        dirs: list[str] = []
        links: list[tuple[str, str]] = []
        by_inode: dict[int, list[str]] = {}
        for kind, path, obj in items:
            if kind == "dir":
                dirs.append(path)
            elif kind == "link":
                links.append((path, obj))
            else:
                files.append((path, obj.contents or ""))
                by_inode.setdefault(obj.stat_result.st_ino, []).append(path)
        groups = sorted(tuple(sorted(paths)) for paths in by_inode.values() if len(paths) > 1)
        return WorldState(
            files=tuple(files),
            dirs=tuple(dirs),
            symlinks=tuple(links),
            hardlinks=tuple(groups),
            ledgers=tuple((name, self.ledgers[name].entries) for name in sorted(self.ledgers)),
            cwd=self.cwd,
            env=tuple(sorted(self.env.items())),
            home=self.home,
            case_sensitive=self.fs.is_case_sensitive,
            users=tuple(sorted(self.scenario_users.items())),
        )

    @classmethod
    def from_state(cls, state: WorldState) -> World:
        """A live world as `state` describes it. The first world built from a state is kept as a
        template (its filesystem pickled, pyfakefs' own way to copy one); later ones are thawed from
        it, ~3x cheaper than assembling the tree again (see `_Templates`)."""
        template = _TEMPLATES.get(state)
        if template is None:
            world = cls._built(state)
            _TEMPLATES.keep(state, world)
            return world
        world = object.__new__(cls)
        world.fs = template.thaw()
        world.cwd, world.home, world.env = state.cwd, state.home, dict(state.env)
        world.scenario_users = dict(state.users)
        world.users = default_users(state.home, world.scenario_users)
        # Identities are a function of the tree's names alone, so every copy of the template agrees on
        # them until its first restructuring: what one run worked out, the next reads.
        world._identities, world._found, world._walked, world._symlinks = template.identities, {}, {}, template.symlinks
        world.ledgers = {name: Ledger(name, entries) for name, entries in state.ledgers}
        return world

    @classmethod
    def _built(cls, state: WorldState) -> World:
        """A live world assembled from `state`, object by object."""
        world = cls(case_sensitive=state.case_sensitive, cwd=state.cwd, home=state.home, env=dict(state.env),
                    users=dict(state.users))
        world.populate(
            dirs=state.dirs, files=state.files, symlinks=state.symlinks, hardlinks=state.hardlinks
        )
        for name, entries in state.ledgers:
            world.ledgers[name] = Ledger(name, entries)
        return world

    def populate(self, *, dirs: Iterable[str] = (), files: Iterable[tuple[str, str]] = (),
                 symlinks: Iterable[tuple[str, str]] = (),
                 hardlinks: Iterable[tuple[str, ...]] = ()) -> None:
        """Create directories, files, hard-link groups and symlinks, in that order."""
        fs = self.fs
        fast = fs.is_case_sensitive
        for path in dirs:
            if fast:
                self._ensure_dir(path)
            elif not fs.exists(path):
                fs.create_dir(path)
        linked = {path for group in hardlinks for path in group[1:]}
        for path, content in files:
            if path in linked:
                continue
            if fast:
                # Assemble pyfakefs objects directly: the path API costs ~140 us a file.
                parent, name = posixpath.split(path)
                directory = self._ensure_dir(parent)
                if name in directory.entries:
                    raise OSError(17, "File exists", path)
                directory.add_entry(FakeFile(name, contents=content, filesystem=fs))
            else:
                fs.create_file(path, contents=content)
        for group in hardlinks:
            for other in group[1:]:
                self.hardlink(group[0], other)
        for path, target in symlinks:
            self.symlink(path, target)
        self._restructured()

    def _ensure_dir(self, path: str) -> FakeDirectory:
        node: FakeDirectory = self.fs.root
        for part in path.split("/"):
            if not part:
                continue
            child = node.entries.get(part)
            if child is None:
                child = FakeDirectory(part, filesystem=self.fs)
                node.add_entry(child)
            elif not isinstance(child, FakeDirectory):
                raise OSError(20, "Not a directory", path)
            node = child
        return node

    def clone(self) -> World:
        # Built, not thawed: a one-off state would only push the scenarios' templates out.
        return World._built(self.state())

    def restore_files(self, state: WorldState) -> None:
        """Put the file tree (files, directories, symlinks, hard links) back as `state` holds it, in
        place, so every holder of this world sees the restored one: a checkpoint's rollback. Ledgers
        (external effects) and the session (cwd, env) stay as they are, as a git snapshot leaves them."""
        fresh = World(case_sensitive=state.case_sensitive, cwd=self.cwd, home=self.home)
        fresh.populate(dirs=state.dirs, files=state.files, symlinks=state.symlinks, hardlinks=state.hardlinks)
        self.fs = fresh.fs
        self._symlinks = fresh._symlinks
        self._restructured()


class _Template:
    """A built filesystem, pickled without its open files (the standard streams, which a thawed
    copy opens again as a new filesystem does), and the world's symlink count."""

    __slots__ = ("blob", "copier", "identities", "symlinks")

    def __init__(self, world: World) -> None:
        fs = world.fs
        open_files, fs.open_files = fs.open_files, []
        try:
            self.blob = pickle.dumps(fs, protocol=pickle.HIGHEST_PROTOCOL)
        finally:
            fs.open_files = open_files
        self.symlinks = world._symlinks
        #: path -> identity on the pristine tree, filled by the worlds thawed from it (see `from_state`).
        self.identities: dict[str, str] = {}
        # A private, never-changed copy to copy object by object (a few times cheaper than
        # unpickling); the pickle stays for what the copier does not know.
        self.copier = FilesystemCopier.of(self._unpickled())

    def thaw(self) -> FakeFilesystem:
        return self.copier.copy() if self.copier is not None else self._unpickled()

    def _unpickled(self) -> FakeFilesystem:
        fs: FakeFilesystem = pickle.loads(self.blob)  # our own bytes, made just above
        fs._add_standard_streams()  # what FakeFilesystem.reset does: fds 0-2, then the world's files
        return fs


class _Templates:
    """The templates of the worlds built most recently, by the identity of their state.

    A `WorldState` is immutable (a scenario changed in place is reloaded as a new object, see
    `harness.scenario.library`), and an entry holds its state, so no other state can take its id
    while the entry lives. `MAX` entries and `MAX_BYTES` of pickles at most: a long sweep over many
    scenarios, or over big `from_dir` worlds (up to 16 MB each), stays bounded.
    """

    MAX = 64
    MAX_BYTES = 64 << 20

    def __init__(self) -> None:
        self._entries: OrderedDict[int, tuple[WorldState, _Template]] = OrderedDict()
        self._bytes = 0

    def get(self, state: WorldState) -> _Template | None:
        entry = self._entries.get(id(state))
        if entry is None or entry[0] is not state:
            return None
        self._entries.move_to_end(id(state))
        return entry[1]

    def keep(self, state: WorldState, world: World) -> _Template | None:
        try:
            template = _Template(world)
        except Exception:  # something pyfakefs cannot pickle: that state is simply built each time
            return None
        if len(template.blob) > self.MAX_BYTES // 4:
            return template  # too big to keep: that world is assembled each time
        replaced = self._entries.pop(id(state), None)
        if replaced is not None:
            self._bytes -= len(replaced[1].blob)
        self._entries[id(state)] = (state, template)
        self._bytes += len(template.blob)
        while len(self._entries) > self.MAX or self._bytes > self.MAX_BYTES:
            self._bytes -= len(self._entries.popitem(last=False)[1][1].blob)
        return template


_TEMPLATES = _Templates()
