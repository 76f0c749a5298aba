"""The lean world: a `World` whose tree is plain dictionaries, in the inner loop.

Owns `LeanWorld`, what `World.from_state` (and `clone`) hand out for a state of regular files,
directories, symlinks and hard links on a case-sensitive volume (`harness.world.lean_image.image_of`):
the same class interface and the same POSIX semantics as the pyfakefs world (the resolver's rules, its
errnos and messages, pyfakefs's modes, inode numbers, entry order and times), at a dictionary lookup
per operation instead of pyfakefs's objects. Copying a world for a run is copying three dictionaries.
A hard-linked file is a record under each of its names, sharing an inode; a write through one name
rewrites them all. Its paths resolve as `harness.world.lean_paths` says.

What it does not model it hands to pyfakefs: asked to make a symlink or a hard link, for `.fs`, or for
an operation off its fast paths (renaming a directory or onto one, renaming a linked name, an atomic
replace of an oddly spelled path, a rename or mkdir that fails, text pyfakefs cannot encode), it is
*promoted* in place: its tree
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
from operator import methodcaller
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
    LinkRecord,
    components,
    encodable,
    image_of,
)
from harness.world.lean_paths import DEFER as _DEFER
from harness.world.lean_paths import LeanPaths
from harness.world.ledger import Ledger
from harness.world.materialise import materialise
from harness.world.paths import default_users
from harness.world.resolution import PathResolution
from harness.world.state import WorldState
from harness.world.world import World, register_lean_world

#: `PathResolution`'s `fs` slot, set on promotion (the lean world's `fs` is a property).
_FS_SLOT: Any = PathResolution.__dict__["fs"]


def _promoting(name: str) -> property:
    """A slot only a pyfakefs world sets (`PathResolution`'s caches, which code written for it may read):
    reading or setting it on a lean world promotes the world first, then goes to the slot itself.

    A property per slot, not a `__getattr__`: a class with one has a Python-level attribute hook, so
    CPython neither specialises attribute reads on its instances nor calls their methods without making
    a bound method first, and the lean world is read at every touch of every run."""
    slot: Any = PathResolution.__dict__[name]

    def read(self: LeanWorld) -> Any:
        self.promote()
        return slot.__get__(self, World)

    def write(self: LeanWorld, value: Any) -> None:
        self.promote()
        slot.__set__(self, value)

    return property(read, write, doc=f"`PathResolution.{name}`, after promoting the world.")


class LeanWorld(LeanPaths, World):  # type: ignore[misc]  # the walk on records, not pyfakefs objects
    """A `World` on plain dictionaries; promoted to a pyfakefs `World`, in place, when it must be."""

    __slots__ = ()

    _found = _promoting("_found")
    _identities = _promoting("_identities")
    _walked = _promoting("_walked")
    _symlinks = _promoting("_symlinks")

    @classmethod
    def from_image(cls, state: WorldState, image: LeanImage) -> LeanWorld:
        """A live world as `state` describes it, from its image (shared records, own dictionaries)."""
        world = object.__new__(cls)
        world._files, world._dirs = image.files.copy(), image.dirs.copy()
        # A lean world only ever removes symlinks (making one promotes it): an empty dictionary is shared.
        links = image.links
        world._links = links.copy() if links else links
        world._groups = image.groups  # never changed: making a link promotes the world
        world._last_ino, world._seq, world._umask = image.last_ino, image.seq, image.umask
        world._file_order, world._dir_order, world._listing = image.file_order, image.dir_order, image.listing
        world._pristine = (state, image)
        world.cwd, world.home, world.env = state.cwd, state.home, dict(state.env)
        world.scenario_users = dict(state.users)
        users = image.users  # the image is its state's: what its home and users give, worked out once
        if users is None:
            users = image.users = default_users(state.home, world.scenario_users)
        world.users = dict(users)
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

    def promote(self) -> None:
        """Become the pyfakefs `World` holding this tree, in place (ledgers, session, tool memory and
        file clock untouched)."""
        pristine = self._pristine
        if pristine is not None:  # nothing changed since the state: the template's copy, as a pyfakefs run
            twin = World._from_template(pristine[0])
            fs, identities, symlinks = twin.fs, twin._identities, twin._symlinks
        else:
            fs = materialise(self._files, self._dirs, self._last_ino, self._umask, self._links, self._groups)
            identities, symlinks = {}, len(self._links)
        self._files, self._dirs, self._links, self._groups = {}, {}, {}, {}
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

    # -- reading ------------------------------------------------------------------------------------

    def is_link(self, path: str) -> bool:
        links = self._links
        if path in links:
            return True
        if not links or path in self._files or path in self._dirs:
            return False
        if (path.startswith("/") and not path.startswith("//") and posixpath.normpath(path) == path
                and self._resolve(posixpath.dirname(path)) is not _DEFER):
            return False  # not a link, nothing there, or no directory on the way: lstat fails
        self.promote()  # a spelling the fast lookup does not settle, in a tree with symlinks
        return World.is_link(self, path)

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
        order = self._sorted_files() if not self._links else self._with_links()
        if key == "/":
            return order if prefix == "/" else [prefix + path for path in order]
        inside = key + "/"
        return [prefix + path[len(key):] for path in order if path.startswith(inside)]

    def _with_links(self) -> list[str]:
        """The files in listing order with the symlinks that reach a regular file, each by its own
        path (`find -type f`); worked out once per files order (which any change of names replaces)."""
        order = self._sorted_files()
        base = self._file_order
        cached = self._listing
        if cached is None or cached[0] is not base:
            reaching = [link for link in self._links
                        if isinstance((self._located(link) or (None, None))[1], FileRecord)]
            assert base is not None
            cached = self._listing = (base, sorted([*order, *reaching], key=components) if reaching else order)
            pristine = self._pristine
            if pristine is not None:
                pristine[1].listing = cached  # every later copy of the image reads it
        return list(cached[1])

    def _sorted_files(self) -> list[str]:
        order = self._file_order
        if order is None:
            order = self._file_order = sorted(self._files, key=_COMPONENTS)
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
        links = self._links
        return WorldState(
            files=tuple([(path, files[path].content) for path in self._sorted_files()]),
            dirs=tuple(dirs),
            symlinks=tuple([(path, links[path].target) for path in sorted(links, key=components)]) if links else (),
            hardlinks=self._hardlinks() if self._groups else (),
            ledgers=tuple((name, self.ledgers[name].entries) for name in sorted(self.ledgers)),
            cwd=self.cwd,
            env=tuple(sorted(self.env.items())),
            home=self.home,
            case_sensitive=True,
            users=tuple(sorted(self.scenario_users.items())),
        )

    def _hardlinks(self) -> tuple[tuple[str, ...], ...]:
        """`World.state`'s hard-link groups: the names that still share an inode, two or more."""
        files = self._files
        groups = []
        for ino, names in self._groups.items():
            held = [name for name in names if (record := files.get(name)) is not None and record.ino == ino]
            if len(held) > 1:
                groups.append(tuple(sorted(held)))
        return tuple(sorted(groups))

    # -- writing ------------------------------------------------------------------------------------

    def _rewrite_linked(self, names: tuple[str, ...], ino: int, text: str, now: int) -> None:
        """A hard-linked file now holds `text`, stamped `now`: under every name its inode still has."""
        files = self._files
        for name in names:
            held = files.get(name)
            if held is not None and held.ino == ino:
                files[name] = held._replace(content=text, mtime_ns=now, ctime_ns=now)

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
                # (Stamps as `FakeStatResult` stores them: `lean_image.stamp_ns`, written out, a call less each.)
                created = int(file_time() * 1e9)
                now = int(self._now() * 1e9)
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
            created = int(file_time() * 1e9)
            now = int(self._now() * 1e9)
            self._last_ino += 1
            self._seq += 1
            files[real] = FileRecord(text, FILE_MODE & ~self._umask, self._last_ino, now, now, created, self._seq)
            self._changed(True)
            return
        key, record = found
        if isinstance(record, DirRecord):
            raise WorldError(_errno.EISDIR, path)
        assert isinstance(record, FileRecord)  # the walk follows a final symlink
        now = int(self._now() * 1e9)  # pyfakefs's set_contents, then the stamp (`files._stamped`)
        names = self._groups.get(record.ino) if self._groups else None
        if names is None:
            # `record._replace(content=text, mtime_ns=now, ctime_ns=now)`, made from C (no `_replace`/`_make` frames).
            files[key] = _tuple_new(FileRecord, (text, record.mode, record.ino, now, now, record.atime_ns, record.seq))
        else:
            self._rewrite_linked(names, record.ino, text, now)
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
            links = self._links
            if (key not in self._dirs and temporary not in self._files and temporary not in self._dirs
                    and temporary not in links):
                if key in links:
                    del links[key]  # rename(2) replaces a symlink itself, never its target
                created = int(file_time() * 1e9)
                now = int(self._now() * 1e9)
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
        if isinstance(found, LinkRecord):
            del self._links[real]  # unlink(2) of a symlink: the link goes, its target stays
        else:
            del self._files[real]
        self._changed(True)

    def rename(self, source: str, target: str) -> None:
        """A file renamed to a new name or over another file, in an existing directory: pyfakefs's
        `_do_rename` (the object keeps its inode and times and moves to the end of the entries).
        Anything else (a directory, a missing name, the same name, a path spelled otherwise, a symlink
        or a hard-linked name on either side) is pyfakefs's."""
        files = self._files
        record = files.get(source)
        parent = posixpath.dirname(target)
        if (record is None or target == source or target in self._dirs or parent not in self._dirs
                or posixpath.normpath(target) != target or target.startswith("//") or self._linked(record)
                or target in self._links or self._linked(files.get(target))):
            self.promote()
            World.rename(self, source, target)
            return
        del files[source]
        self._seq += 1
        files[target] = record._replace(seq=self._seq)
        self._changed(True)

    def _linked(self, record: FileRecord | None) -> bool:
        """Whether `record` is a file the image gave more than one name (its object's name is another's)."""
        return record is not None and bool(self._groups) and record.ino in self._groups

    def make_dir(self, path: str) -> None:
        """`WorldFiles.make_dir` (`mkdir -p`): a plain absolute path whose existing components are all
        directories is created here, as pyfakefs's `create_dir` does; any other path is pyfakefs's."""
        if path in self._dirs:
            return
        if path in self._files:
            raise WorldError(_errno.EEXIST, path)
        if path.startswith("/") and not path.startswith("//") and posixpath.normpath(path) == path:
            try:
                # ENOTDIR: a file on the way, which pyfakefs words otherwise; a symlink on the way (the
                # walk reaches another path) is pyfakefs's too.
                real = self._walk_path(path)[0]
            except WorldError:
                pass
            else:
                if real == path:
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
                created = int(file_time() * 1e9)
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
        link = self._links.get(path)
        if link is not None:
            return link.target
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
        self._files, self._dirs, self._links, self._groups = image.files, image.dirs, image.links, image.groups
        self._last_ino, self._seq, self._umask = image.last_ino, image.seq, image.umask
        self._file_order = self._dir_order = None
        self._pristine = None


register_lean_world(LeanWorld.from_image)


#: `lean_image.components` (`path.split("/")`), called from C: no Python frame per file sorted.
_COMPONENTS = methodcaller("split", "/")
#: How a `FileRecord` (a named tuple) is made from its fields without its Python-level `__new__`.
_tuple_new = tuple.__new__
