"""The lean world: a `World` whose tree is plain dictionaries, for plain trees, in the inner loop.

Owns `LeanWorld`, what `World.from_state` (and `clone`) hand out for a state made only of regular
files and directories on a case-sensitive volume (`harness.world.lean_image.image_of`): the same
class interface and the same POSIX semantics as the pyfakefs world (the resolver's rules, its
errnos and messages, pyfakefs's modes, inode numbers, entry order and times), at a dictionary lookup
per operation instead of pyfakefs's objects. Copying a world for a run is copying two dictionaries.

What it does not model it hands to pyfakefs: asked for a symlink or a hard link, for `.fs`, or for an
operation off its fast paths (renaming a directory or onto one, an atomic replace of an oddly spelled
path, a rename or mkdir that fails, text pyfakefs cannot encode), it is *promoted* in place: its tree
is materialised in pyfakefs (`harness.world.materialise`; the template's own copy when nothing
changed yet) and the object becomes a plain `World`, so every holder
of it (the run, the scheduler's context, the tools, `RunResult.world`) goes on with the pyfakefs world
and the operation is done there. It never records touches or advances time (the executor wraps a
world for that) and never decides which world a run gets (`World.from_state`, `harness.world.choice`).
"""

from __future__ import annotations

import errno as _errno
import posixpath
from collections.abc import Iterable
from typing import Any

from pyfakefs.fake_filesystem import FakeFilesystem

from harness.world.clock import file_time
from harness.world.errors import WorldError
from harness.world.lean_image import (
    DIR_MODE,
    FILE_MODE,
    DirRecord,
    FileRecord,
    LeanImage,
    components,
    encodable,
    image_of,
)
from harness.world.lean_image import stamp_ns as _ns
from harness.world.ledger import Ledger
from harness.world.materialise import materialise
from harness.world.paths import default_users
from harness.world.resolution import PathResolution
from harness.world.state import WorldState
from harness.world.world import World, register_lean_world

_Record = FileRecord | DirRecord
#: What `_resolve` answers when the pyfakefs world's fast lookup would defer to its full walk.
_DEFER: Any = object()
#: `PathResolution`'s `fs` slot, set on promotion (the lean world's `fs` is a property).
_FS_SLOT: Any = PathResolution.__dict__["fs"]
#: Slots only a pyfakefs world sets: reading one on a lean world promotes it first.
_PYFAKEFS_SLOTS = frozenset({"_found", "_identities", "_walked", "_symlinks"})


class LeanWorld(World):
    """A `World` on plain dictionaries; promoted to a pyfakefs `World`, in place, when it must be."""

    __slots__ = ()

    @classmethod
    def from_image(cls, state: WorldState, image: LeanImage) -> LeanWorld:
        """A live world as `state` describes it, from its image (shared records, own dictionaries)."""
        world = object.__new__(cls)
        world._files, world._dirs = image.files.copy(), image.dirs.copy()
        world._last_ino, world._seq, world._umask = image.last_ino, image.seq, image.umask
        world._file_order, world._dir_order = image.file_order, image.dir_order
        world._pristine = (state, image)
        world.cwd, world.home, world.env = state.cwd, state.home, dict(state.env)
        world.scenario_users = dict(state.users)
        world.users = default_users(state.home, world.scenario_users)
        world.ledgers = {name: Ledger(name, entries) for name, entries in state.ledgers}
        world.memory, world._ticks = {}, 0
        return world

    # -- promotion ------------------------------------------------------------------------------

    @property
    def fs(self) -> FakeFilesystem:
        """The pyfakefs filesystem: asking for it promotes this world (see the module docstring)."""
        self.promote()
        fs: FakeFilesystem = _FS_SLOT.__get__(self, World)
        return fs

    @fs.setter
    def fs(self, value: FakeFilesystem) -> None:
        self.promote()
        _FS_SLOT.__set__(self, value)

    def __getattr__(self, name: str) -> Any:
        # Only for attributes not set: a pyfakefs world's caches, which code written for it may read.
        if name in _PYFAKEFS_SLOTS:
            self.promote()
            return getattr(self, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def promote(self) -> None:
        """Become the pyfakefs `World` holding this tree, in place (ledgers, session, tool memory and
        file clock untouched)."""
        pristine = self._pristine
        if pristine is not None:  # nothing changed since the state: the template's copy, as a pyfakefs run
            twin = World._from_template(pristine[0])
            fs, identities, symlinks = twin.fs, twin._identities, twin._symlinks
        else:
            fs, identities, symlinks = materialise(self._files, self._dirs, self._last_ino, self._umask), {}, 0
        self._files, self._dirs = {}, {}
        self._file_order = self._dir_order = None
        self._pristine = None
        self.__class__ = World  # type: ignore[assignment]
        self.fs = fs
        self._identities, self._found, self._walked, self._symlinks = identities, {}, {}, symlinks

    def _changed(self, structure: bool) -> None:
        """The tree changed (`structure`: a name was added or removed, so the sorted orders are stale)."""
        self._pristine = None
        if structure:
            self._file_order = None

    # -- lookups (`PathResolution`'s, on records) -------------------------------------------------

    def _resolve(self, path: str) -> tuple[str, _Record] | None:
        """What `PathResolution._lookup` answers, with the record's normalised path: the record at a
        plain absolute path, None if nothing is there, `_DEFER` when the full walk must decide."""
        record: _Record | None = self._files.get(path) or self._dirs.get(path)
        if record is not None:
            return path, record  # a key is a normalised path: the fast walk would reach it too
        if not path.startswith("/") or path.startswith("//"):
            return _DEFER  # type: ignore[no-any-return]
        prefix, record = "", self._dirs["/"]
        for part in path.split("/"):
            if not part:
                continue
            if part in (".", "..") or not isinstance(record, DirRecord):
                return _DEFER  # type: ignore[no-any-return]
            prefix = prefix + "/" + part
            record = self._files.get(prefix) or self._dirs.get(prefix)
            if record is None:
                return None
        return (prefix or "/"), record

    def _walk_path(self, path: str, *, follow_last: bool = True, missing_ok: bool = True,  # type: ignore[override]
                   want_dir: bool = False, shown: str | None = None) -> tuple[str, _Record | None]:
        """`PathResolution._walk_path` on a tree without symlinks: component by component from the
        root, `..` taken from the directory reached, ENOTDIR for a file used as a directory, ENOENT
        for a missing component unless `missing_ok`."""
        name = path if shown is None else shown
        names: list[str] = []
        found: list[_Record | None] = [self._dirs["/"]]
        for part in path.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if names:
                    names.pop()
                    found.pop()
                continue
            here = found[-1]
            if here is not None and not isinstance(here, DirRecord):
                raise WorldError(_errno.ENOTDIR, name)
            child: _Record | None = None
            if here is not None:
                key = "/" + "/".join(names) + "/" + part if names else "/" + part
                child = self._files.get(key) or self._dirs.get(key)
            if child is None and not missing_ok:
                raise WorldError(_errno.ENOENT, name)
            names.append(part)
            found.append(child)
        last = found[-1]
        if want_dir and not isinstance(last, DirRecord):
            raise WorldError(_errno.ENOENT if last is None else _errno.ENOTDIR, name)
        return "/" + "/".join(names), last

    def _located(self, path: str) -> tuple[str, _Record] | None:
        """`PathResolution._object`: the record at `path` and its normalised path, or None."""
        found = self._resolve(path)
        if found is _DEFER:
            try:
                real, record = self._walk_path(path, missing_ok=False)
            except WorldError:
                return None
            return (real, record) if record is not None else None
        return found

    # -- reading ------------------------------------------------------------------------------------

    def canonical(self, path: str) -> str:
        if path in self._files or path in self._dirs:
            return path
        found = self._located(path)
        if found is not None:
            return found[0]
        parent, name = posixpath.split(path)
        return path if parent == path else posixpath.join(self.canonical(parent), name)

    def exists(self, path: str) -> bool:
        return path in self._files or path in self._dirs or self._located(path) is not None

    def is_dir(self, path: str) -> bool:
        if path in self._dirs:
            return True
        found = self._located(path)
        return found is not None and isinstance(found[1], DirRecord)

    def is_link(self, path: str) -> bool:
        return False

    def _file_at(self, path: str) -> tuple[str, FileRecord]:
        """`WorldFiles._file`: the file `path` names, or the error opening it would give."""
        record = self._files.get(path)
        if record is not None:
            return path, record
        found = self._located(path)
        if found is None:
            raise self._failure(path)
        if isinstance(found[1], DirRecord):
            raise WorldError(_errno.EISDIR, path)
        return found[0], found[1]

    def read_text(self, path: str) -> str:
        record = self._files.get(path)
        return record.content if record is not None else self._file_at(path)[1].content

    def mtime(self, path: str) -> float:
        return self._file_at(path)[1].mtime_ns / 1e9

    def list_files(self, root: str) -> list[str]:
        found = self._located(root)
        if found is None:
            raise self._failure(root)
        key, record = found
        if not isinstance(record, DirRecord):
            return [root]
        prefix = root.rstrip("/") or "/"
        order = self._sorted_files()
        if key == "/":
            return order if prefix == "/" else [prefix + path for path in order]
        inside = key + "/"
        return [prefix + path[len(key):] for path in order if path.startswith(inside)]

    def _sorted_files(self) -> list[str]:
        order = self._file_order
        if order is None:
            order = self._file_order = sorted(self._files, key=components)
            pristine = self._pristine
            if pristine is not None:
                pristine[1].file_order = order  # every later copy of the image reads it
        return list(order)

    def state(self) -> WorldState:
        files = self._files
        dirs = self._dir_order
        if dirs is None:
            dirs = self._dir_order = sorted((path for path in self._dirs if path != "/"), key=components)
            if self._pristine is not None:
                self._pristine[1].dir_order = dirs
        return WorldState(
            files=tuple([(path, files[path].content) for path in self._sorted_files()]),
            dirs=tuple(dirs),
            ledgers=tuple((name, self.ledgers[name].entries) for name in sorted(self.ledgers)),
            cwd=self.cwd,
            env=tuple(sorted(self.env.items())),
            home=self.home,
            case_sensitive=True,
            users=tuple(sorted(self.scenario_users.items())),
        )

    # -- writing ------------------------------------------------------------------------------------

    def write_text(self, path: str, text: str) -> None:
        """`WorldFiles.write_text`: the file's content replaced (the fast lookup, then the walk), or a
        new file in an existing directory; missing parents and odd spellings are pyfakefs's."""
        if not encodable(text):
            self.promote()
            World.write_text(self, path, text)
            return
        files = self._files
        found = (path, files[path]) if path in files else self._resolve(path)
        if found is None:  # a new file in an existing directory: `FakeFile` + `add_entry`
            parent, name = posixpath.split(path)
            directory = self._resolve(parent)
            if directory is not None and directory is not _DEFER and isinstance(directory[1], DirRecord):
                created = _ns(file_time())
                now = _ns(self._now())
                self._last_ino += 1
                self._seq += 1
                key = directory[0].rstrip("/") + "/" + name
                files[key] = FileRecord(text, FILE_MODE, self._last_ino, now, now, created, self._seq)
                self._changed(True)
                return
        elif found is _DEFER:
            # The kernel-like walk: its errors are the pyfakefs world's; a missing file it reaches
            # (missing parents, a path spelled otherwise) pyfakefs creates.
            real, reached = self._walk_path(path)
            found = (real, reached) if reached is not None else None
        if found is None:  # pyfakefs's `create_file` of the path the walk reached, parents and all
            real = self._walk_path(path)[0]
            parent, name = posixpath.split(real)
            self._make_dirs(parent)
            created = _ns(file_time())
            now = _ns(self._now())
            self._last_ino += 1
            self._seq += 1
            files[real] = FileRecord(text, FILE_MODE & ~self._umask, self._last_ino, now, now, created, self._seq)
            self._changed(True)
            return
        key, record = found
        if isinstance(record, DirRecord):
            raise WorldError(_errno.EISDIR, path)
        now = _ns(self._now())  # pyfakefs's set_contents, then the stamp (`files._stamped`)
        files[key] = record._replace(content=text, mtime_ns=now, ctime_ns=now)
        self._changed(False)

    def replace_text(self, path: str, text: str) -> None:
        """`WorldFiles.replace_text`: its common case (`_replaced_in_place`: a new file, made with the
        umask applied, renamed over the name) here; its walks' errors here (the parent must be a
        directory, the name must not be one); what else the walks allow is pyfakefs's."""
        parent, name = posixpath.split(path)
        directory = self._resolve(parent)
        if directory is not None and directory is not _DEFER and isinstance(directory[1], DirRecord):
            if name in ("", ".", "..") or not encodable(text):
                self.promote()
                World.replace_text(self, path, text)
                return
            base = directory[0].rstrip("/") + "/"
            key, temporary = base + name, f"{base}.{name}.harness-tmp"
            if key not in self._dirs and temporary not in self._files and temporary not in self._dirs:
                created = _ns(file_time())
                now = _ns(self._now())
                self._last_ino += 1
                self._seq += 2  # added as the temporary name, then again under its own
                existed = key in self._files
                self._files[key] = FileRecord(text, FILE_MODE & ~self._umask, self._last_ino, now, now, created,
                                              self._seq)
                self._changed(not existed)
                return
        self._walk_path(parent, missing_ok=False, want_dir=True, shown=path)
        if isinstance(self._walk_path(path, follow_last=False)[1], DirRecord):
            raise WorldError(_errno.EISDIR, path)  # rename(2) of a file over a directory
        self.promote()
        World.replace_text(self, path, text)

    def remove(self, path: str) -> None:
        real, found = self._walk_path(path, follow_last=False, missing_ok=False)
        if isinstance(found, DirRecord):
            raise WorldError(_errno.EISDIR, path)
        del self._files[real]
        self._changed(True)

    def rename(self, source: str, target: str) -> None:
        """A file renamed to a new name or over another file, in an existing directory: pyfakefs's
        `_do_rename` (the object keeps its inode and times and moves to the end of the entries).
        Anything else (a directory, a missing name, the same name, a path spelled otherwise) is pyfakefs's."""
        files = self._files
        record = files.get(source)
        parent = posixpath.dirname(target)
        if (record is None or target == source or target in self._dirs or parent not in self._dirs
                or posixpath.normpath(target) != target or target.startswith("//")):
            self.promote()
            World.rename(self, source, target)
            return
        del files[source]
        self._seq += 1
        files[target] = record._replace(seq=self._seq)
        self._changed(True)

    def make_dir(self, path: str) -> None:
        """`WorldFiles.make_dir` (`mkdir -p`): a plain absolute path whose existing components are all
        directories is created here, as pyfakefs's `create_dir` does; any other path is pyfakefs's."""
        if path in self._dirs:
            return
        if path in self._files:
            raise WorldError(_errno.EEXIST, path)
        if path.startswith("/") and not path.startswith("//") and posixpath.normpath(path) == path:
            try:
                self._walk_path(path)  # ENOTDIR: a file on the way, which pyfakefs words otherwise
            except WorldError:
                pass
            else:
                self._make_dirs(path)
                return
        self.promote()
        World.make_dir(self, path)

    def _make_dirs(self, path: str) -> None:
        """The missing directories of the normalised absolute `path` (every existing component is a
        directory), as pyfakefs's `create_dir` makes them: in order from the root, each stamped now,
        the umask applied to their mode."""
        prefix = ""
        for part in path.split("/"):
            if not part:
                continue
            prefix = prefix + "/" + part
            if prefix not in self._dirs:
                created = _ns(file_time())
                self._last_ino += 1
                self._seq += 1
                self._dirs[prefix] = DirRecord(DIR_MODE & ~self._umask, self._last_ino, created, created, created,
                                               self._seq)
                self._dir_order = None
                self._changed(True)

    def symlink(self, path: str, target: str) -> None:
        self.promote()
        World.symlink(self, path, target)

    def hardlink(self, existing: str, new: str) -> None:
        self.promote()
        World.hardlink(self, existing, new)

    def populate(self, *, dirs: Iterable[str] = (), files: Iterable[tuple[str, str]] = (),
                 symlinks: Iterable[tuple[str, str]] = (), hardlinks: Iterable[tuple[str, ...]] = ()) -> None:
        self.promote()
        World.populate(self, dirs=dirs, files=files, symlinks=symlinks, hardlinks=hardlinks)

    def read_link(self, path: str) -> str:
        self.promote()
        return World.read_link(self, path)

    def restore_files(self, state: WorldState) -> None:
        """`World.restore_files`: the tree as `state` holds it, made anew now (new inode numbers,
        every object stamped with the current file time, as a new filesystem populated now)."""
        image = image_of(state, file_time())
        if image is None:
            self.promote()
            World.restore_files(self, state)
            return
        self._files, self._dirs = image.files, image.dirs
        self._last_ino, self._seq, self._umask = image.last_ino, image.seq, image.umask
        self._file_order = self._dir_order = None
        self._pristine = None


register_lean_world(LeanWorld.from_image)
