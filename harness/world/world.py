"""The simulated world the mock tools act on.

Owns the live, mutable world of one run: a pyfakefs `FakeFilesystem` used through its object API
(no global patching, so nothing a tool does can reach the real disk), external ledgers and the
shared session state (shell cwd and environment). It converts to and from `WorldState`. It never
records touches or advances time: the executor wraps it for that.
"""

from __future__ import annotations

import posixpath
import stat
from collections.abc import Iterable, Mapping
from typing import Any

from pyfakefs.fake_file import FakeDirectory, FakeFile
from pyfakefs.fake_filesystem import FakeFilesystem, OSType

from harness.world.ledger import Ledger
from harness.world.state import WorldState


def absolute_path(raw: str, cwd: str, home: str) -> str:
    """`~` expanded, joined to `cwd` and normalised as text, like `os.path.abspath`.

    Symlinks are not resolved, so `link/../x` collapses textually, as it does in real planners.
    """
    if raw == "~" or raw.startswith("~/"):
        raw = home + raw[1:]
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


class _Defer:
    """Marker: a fast lookup that pyfakefs must settle."""


DEFER = _Defer()
_MISSING = object()


class WorldError(Exception):
    """A world operation failed the way the real operation would (missing file, not a directory...)."""


class World:
    """Filesystem + ledgers + session; build one with `World.from_state` or `World.empty`."""

    __slots__ = ("_found", "_identities", "_symlinks", "cwd", "env", "fs", "home", "ledgers")

    def __init__(self, *, case_sensitive: bool = True, cwd: str = "/", home: str = "/home/user",
                 env: Mapping[str, str] | None = None) -> None:
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
        # path -> identity, and path -> object (or None / DEFER): both valid until the tree's
        # structure changes (see `_restructured`); writing a file's content changes neither.
        self._identities: dict[str, str] = {}
        self._found: dict[str, FakeFile | _Defer | None] = {}
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
        followed by `..` keep their spelling, so a touch still says which alias the tool used."""
        if raw == "~" or raw.startswith("~/"):
            raw = self.home + raw[1:]
        joined = posixpath.join(self.cwd, raw)
        parts = joined.split("/")
        if ".." not in parts or not self._symlinks:
            return posixpath.normpath(joined)  # without a symlink, text and POSIX agree
        result = "/"
        for part in parts:
            if part in ("", "."):
                continue
            result = posixpath.dirname(self.realpath(result)) if part == ".." else posixpath.join(result, part)
        return result

    def realpath(self, path: str, _depth: int = 0) -> str:
        """The path with symlinks resolved, as `os.path.realpath` would on this world: every other
        component keeps the spelling it was given (no case folding, hard links untouched)."""
        result = "/"
        parts = [p for p in path.split("/") if p not in ("", ".")]
        for i, part in enumerate(parts):
            if part == "..":
                result = posixpath.dirname(result)
                continue
            candidate = posixpath.join(result, part)
            if _depth < 40 and self.fs.islink(candidate):
                target = self.fs.readlink(candidate)
                rest = "/".join(parts[i + 1:])
                joined = posixpath.join(result, target, rest) if rest else posixpath.join(result, target)
                return self.realpath(posixpath.normpath(joined), _depth + 1)
            result = candidate
        return result

    def canonical(self, path: str) -> str:
        """The identity of the file at `path`: one name for all its aliases (symlinks resolved, the
        stored spelling on a case-insensitive world, one name for all hard links). Oracles and the
        optimal bound compare touches by it; it is not what a planner could compute."""
        identity = self._identities.get(path)
        if identity is None:
            identity = self._identities[path] = self._identity(path)
        return identity

    def _restructured(self) -> None:
        """Names were added or removed: identities and lookups may have changed."""
        self._identities.clear()
        self._found.clear()

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
            if self._symlinks and stat.S_ISLNK(child.st_mode):
                return DEFER
            node = child
        return node

    def _object(self, path: str) -> FakeFile | None:
        """The object at `path` (symlinks followed), or None: the fast walk, else pyfakefs."""
        found = self._lookup(path)
        if found is DEFER:
            try:
                return self.fs.resolve(path)
            except OSError:
                return None
        assert not isinstance(found, _Defer)
        return found

    def _file(self, path: str) -> FakeFile:
        found = self._object(path)
        if found is None:
            raise WorldError(f"no such file: {path}")
        assert isinstance(found, FakeFile)
        if isinstance(found, FakeDirectory):
            raise WorldError(f"is a directory: {path}")
        return found

    def exists(self, path: str) -> bool:
        found = self._lookup(path)
        return bool(self.fs.exists(path)) if found is DEFER else found is not None

    def is_dir(self, path: str) -> bool:
        found = self._lookup(path)
        return bool(self.fs.isdir(path)) if found is DEFER else isinstance(found, FakeDirectory)

    def read_text(self, path: str) -> str:
        return self._file(path).contents or ""

    def write_text(self, path: str, text: str) -> None:
        """Replace the file's content, creating it (and missing parents) if needed.

        Writing through a hard link changes every name of the file; through a symlink, its target.
        """
        found = self._lookup(path)
        if isinstance(found, FakeFile):
            if isinstance(found, FakeDirectory):
                raise WorldError(f"is a directory: {path}")
            found.set_contents(text)
            return
        if found is None:
            parent_dir, name = posixpath.split(path)
            directory = self._lookup(parent_dir)
            if isinstance(directory, FakeDirectory):
                directory.add_entry(FakeFile(name, contents=text, filesystem=self.fs))
                self._restructured()
                return
        if self.fs.exists(path):
            self._file(path).set_contents(text)
            return
        parent = posixpath.dirname(path)
        if self.fs.exists(parent) and not self.fs.isdir(parent):
            raise WorldError(f"not a directory: {parent}")
        try:
            self.fs.create_file(path, contents=text)
        except OSError as exc:
            raise WorldError(f"cannot create {path}: {exc.strerror or exc}") from None
        self._restructured()

    def replace_text(self, path: str, text: str) -> None:
        """Write `text` to a temporary file beside `path` and rename it over `path`, as atomic writers
        do (editors, hermes' file tools): the name now points at a new file. Other hard links of the
        old file keep its content, and a symlink at `path` is replaced by the file, not written
        through (POSIX `rename`)."""
        parent, name = posixpath.split(path)
        if self.fs.isdir(path) and not self.fs.islink(path):
            raise WorldError(f"is a directory: {path}")
        if not self.fs.isdir(parent):
            missing = not self.fs.exists(parent)
            raise WorldError(f"no such directory: {parent}" if missing else f"not a directory: {parent}")
        temporary = posixpath.join(parent, f".{name}.harness-tmp")
        try:
            self.fs.create_file(temporary, contents=text)
            self.fs.rename(temporary, path)
        except OSError as exc:
            raise WorldError(f"cannot replace {path}: {exc.strerror or exc}") from None
        self._restructured()

    def append_text(self, path: str, text: str) -> None:
        current = self.read_text(path) if self.exists(path) else ""
        self.write_text(path, current + text)

    def remove(self, path: str) -> None:
        if not self.fs.exists(path) and not self.fs.islink(path):
            raise WorldError(f"no such file: {path}")
        if self.fs.isdir(path) and not self.fs.islink(path):
            raise WorldError(f"is a directory: {path}")
        self.fs.remove(path)
        self._restructured()

    def rename(self, source: str, target: str) -> None:
        """POSIX `rename(2)`: the name `source` (a symlink itself, not its target) becomes `target`,
        replacing a file there (its other hard links keep the old content); a directory at `target`
        or a missing parent is an error, and renaming a name onto itself changes nothing."""
        if not self.fs.exists(source) and not self.fs.islink(source):
            raise WorldError(f"no such file: {source}")
        if self.fs.isdir(target) and not self.fs.islink(target):
            raise WorldError(f"is a directory: {target}")
        parent = posixpath.dirname(target)
        if not self.fs.isdir(parent):
            raise WorldError(f"no such directory: {parent}" if not self.fs.exists(parent) else
                             f"not a directory: {parent}")
        try:
            self.fs.rename(source, target)
        except OSError as exc:
            raise WorldError(f"cannot rename {source} to {target}: {exc.strerror or exc}") from None
        self._restructured()

    def make_dir(self, path: str) -> None:
        if self.fs.exists(path):
            if self.fs.isdir(path):
                return
            raise WorldError(f"file exists: {path}")
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
            raise WorldError(f"no such file or directory: {root}")
        if not isinstance(top, FakeDirectory):
            return [root]
        found: list[str] = []
        self._walk(top, root.rstrip("/") or "/", found, files_only=True)
        return found

    def _walk(self, directory: FakeDirectory, prefix: str, out: list[Any], *, files_only: bool) -> None:
        for name in sorted(directory.entries):
            obj = directory.entries[name]
            path = posixpath.join(prefix, name)
            if isinstance(obj, FakeDirectory):
                if not files_only:
                    out.append(("dir", path, obj))
                self._walk(obj, path, out, files_only=files_only)
            elif stat.S_ISLNK(obj.st_mode):
                target = obj.contents or ""
                if files_only:
                    resolved = self.realpath(path)
                    if self.fs.isfile(resolved):
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
                by_inode.setdefault(obj.st_ino, []).append(path)
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
        )

    @classmethod
    def from_state(cls, state: WorldState) -> World:
        world = cls(case_sensitive=state.case_sensitive, cwd=state.cwd, home=state.home, env=dict(state.env))
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
        return World.from_state(self.state())
