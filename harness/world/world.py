"""The simulated world the mock tools act on.

Owns `World`, the live, mutable world of one run: a pyfakefs `FakeFilesystem` used through its
object API (no global patching, so nothing a tool does can reach the real disk), external ledgers
and the shared session state (shell cwd and environment), and its conversion to and from
`WorldState` (templates make the second world of a state cheap). What its paths resolve to is
`harness.world.resolution`, what its file operations do `harness.world.files`. It never records
touches or advances time: the executor wraps it for that.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pyfakefs.fake_file import FakeDirectory, FakeFile
from pyfakefs.fake_filesystem import FakeFilesystem, OSType

from harness import moved
from harness.world.choice import lean_allowed
from harness.world.clock import EPOCH_S, virtual_file_times
from harness.world.errors import WorldError
from harness.world.files import WorldFiles
from harness.world.lean_image import DirRecord, FileRecord, LeanImage, LeanImages, LinkRecord, image_of
from harness.world.ledger import Ledger
from harness.world.paths import default_users
from harness.world.state import WorldState
from harness.world.templates import Templates

# What every operation of a World raises, importable beside it.
__all__ = ["World", "WorldError"]


class World(WorldFiles):
    """Filesystem + ledgers + session; build one with `World.from_state` or `World.empty`."""

    # `from_state` sets every one of these, and the resolution's, on a world thawed from a template
    # (it skips __init__). The underscored ones after them are the lean world's tree
    # (`harness.world.lean.LeanWorld`, which adds no slots of its own so that it can turn into a
    # `World` in place when it is promoted to pyfakefs); a pyfakefs world leaves them unset.
    __slots__ = (
        "_dir_order",
        "_dirs",
        "_file_order",
        "_files",
        "_groups",
        "_last_ino",
        "_links",
        "_listing",
        "_pristine",
        "_seq",
        "_umask",
        "env",
        "ledgers",
        "memory",
        "scenario_users",
    )

    # The lean world's tree (`harness.world.lean`), by normalised path; never set on a pyfakefs world.
    _files: dict[str, FileRecord]
    _dirs: dict[str, DirRecord]
    _links: dict[str, LinkRecord]
    _groups: dict[int, tuple[str, ...]]
    #: The files order with the symlinks that reach a file, and the files order it was made from.
    _listing: tuple[list[str], list[str]] | None
    _file_order: list[str] | None
    _dir_order: list[str] | None
    _last_ino: int
    _seq: int
    _umask: int
    #: The state and image a lean world was made from, until its tree first changes.
    _pristine: tuple[WorldState, LeanImage] | None

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
        # The resolution's caches (see `PathResolution`): empty until paths are asked about.
        self._identities = {}
        self._found = {}
        self._walked = {}
        self._symlinks = 0
        self.memory: dict[str, dict[Any, Any]] = {}
        self._ticks = 0

    @classmethod
    def empty(cls) -> World:
        return cls()

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
        it, ~3x cheaper than assembling the tree again (see `harness.world.templates`)."""
        if _MAKE_LEAN is not None and lean_allowed():
            image = _IMAGES.get(state)
            if image is not None:
                return _MAKE_LEAN(state, image)
        return cls._from_template(state)

    @classmethod
    def _from_template(cls, state: WorldState) -> World:
        """The pyfakefs world of `state`: thawed from its template, or built (and kept as one)."""
        template = _TEMPLATES.get(state)
        if template is None:
            world = cls._built(state)
            _TEMPLATES.keep(state, world.fs, world._symlinks)
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
        world.memory, world._ticks = {}, 0
        return world

    @classmethod
    def _built(cls, state: WorldState) -> World:
        """A live world assembled from `state`, object by object, every file stamped at the virtual
        epoch (whenever and wherever it is built: it may become the template of every later run)."""
        with virtual_file_times(lambda: 0.0):
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
        state = self.state()
        image = image_of(state, EPOCH_S) if _MAKE_LEAN is not None and lean_allowed() else None
        twin = _MAKE_LEAN(state, image) if _MAKE_LEAN is not None and image is not None else World._built(state)
        twin.remember_as(self)
        return twin

    def is_link(self, path: str) -> bool:
        """`os.path.islink`: whether `path` names a symlink itself (its target aside)."""
        return self.fs.islink(path)

    def read_link(self, path: str) -> str:
        """`os.readlink`: the target of the symlink `path`, as written."""
        return str(self.fs.readlink(path))

    def remember_as(self, other: World) -> None:
        """Take `other`'s tool memory (a copy) and its file clock outside a run: a copy of a world whose
        tools remember reads (hermes' read tracker) must remember them too."""
        self.memory = {name: dict(table) for name, table in other.memory.items()}
        self._ticks = max(self._ticks, other._ticks)

    def restore_files(self, state: WorldState) -> None:
        """Put the file tree (files, directories, symlinks, hard links) back as `state` holds it, in
        place, so every holder of this world sees the restored one: a checkpoint's rollback. Ledgers
        (external effects) and the session (cwd, env) stay as they are, as a git snapshot leaves them."""
        fresh = World(case_sensitive=state.case_sensitive, cwd=self.cwd, home=self.home)
        fresh.populate(dirs=state.dirs, files=state.files, symlinks=state.symlinks, hardlinks=state.hardlinks)
        self.fs = fresh.fs
        self._symlinks = fresh._symlinks
        self._restructured()


_TEMPLATES = Templates()
_IMAGES = LeanImages()


#: Makes a lean world from a state and its image: `LeanWorld.from_image`, which `harness.world.lean`
#: registers when it is imported (it builds on this module, so this one cannot import it; the package
#: imports it, so it is registered before any world is built). None: every world is a pyfakefs world.
_MAKE_LEAN: Callable[[WorldState, LeanImage], World] | None = None


def register_lean_world(make: Callable[[WorldState, LeanImage], World]) -> None:
    """Let `from_state` and `clone` hand out lean worlds, made by `make` (see `harness.world.lean`)."""
    global _MAKE_LEAN
    _MAKE_LEAN = make


# Names split out of this module still import from it, with a warning (see harness.moved).
__getattr__ = moved.forward(__name__)
