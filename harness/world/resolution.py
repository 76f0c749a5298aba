"""Path resolution: which object of a world's pyfakefs tree a path names, as the kernel decides.

Owns `PathResolution`, the half of `World` that reads the tree without changing it: the kernel's
path walk (`path_resolution(7)`: symlinks followed, `..` taken from the directory reached, ELOOP
after 40 hops, ENOTDIR, ENAMETOOLONG), the fast lookup that answers the common case from pyfakefs's
objects directly, a file's identity across its aliases, and the caches of all three (valid until
the tree's names change: `_restructured`). It never changes a file, and never builds a world: its
state is set by `World` (`harness.world.world`), which it is the base class of.
"""

from __future__ import annotations

import errno as _errno
import posixpath
import stat

from pyfakefs.fake_file import FakeDirectory, FakeFile
from pyfakefs.fake_filesystem import FakeFilesystem

from harness.world.errors import WorldError, null_byte_error
from harness.world.paths import NAME_MAX, expand_user, plain_absolute, too_long

#: Symlinks followed in one path walk before the kernel gives up with ELOOP (Linux `MAXSYMLINKS`).
MAX_SYMLINK_HOPS = 40
#: Identities a world remembers at most (each a path and its identity): a run querying ever new
#: paths of a template's tree, one sweep cell after another, keeps its memory bounded.
_IDENTITIES_KEPT = 8192


class _Defer:
    """Marker: a fast lookup that pyfakefs must settle."""


DEFER = _Defer()
_MISSING = object()


def _object_path(obj: FakeFile) -> str:
    """The path of a pyfakefs object from its parent links: what `FakeFile.path` returns on a POSIX
    filesystem, without its path normalisation (30 us a call, paid on every touch)."""
    names: list[str] = []
    node: FakeFile | None = obj
    while node is not None and node.parent_dir is not None:
        names.append(str(node.name))
        node = node.parent_dir()
    return "/" + "/".join(reversed(names))


class PathResolution:
    """The tree of a world and what its paths resolve to; `World` is the whole world."""

    # Set by `World.__init__` and by `World.from_state` (which skips __init__).
    __slots__ = ("_found", "_identities", "_symlinks", "_walked", "cwd", "fs", "home", "users")

    fs: FakeFilesystem
    #: The session's cwd, and the home and users (name -> home) `~` and `~name` expand to.
    cwd: str
    home: str
    users: dict[str, str]
    # path -> identity, and path -> object (or None / DEFER): both valid until the tree's
    # structure changes (see `_restructured`); writing a file's content changes neither.
    _identities: dict[str, str]
    _found: dict[str, FakeFile | _Defer | None]
    #: path -> object the kernel-like walk reached, for paths the fast lookup defers (same lifetime).
    _walked: dict[str, FakeFile | None]
    # Symlinks ever created here: without any, path walks need not test each component.
    _symlinks: int

    # -- paths ---------------------------------------------------------------------------------

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
        if len(raw) > NAME_MAX // 4 and too_long(raw):  # a shorter path cannot exceed NAME_MAX bytes
            raise WorldError(_errno.ENAMETOOLONG, raw)
        if raw.startswith("~"):
            raw = expand_user(raw, self.home, self.users)
        plain = plain_absolute(self.cwd, raw)
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

    # -- objects ------------------------------------------------------------------------------

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
