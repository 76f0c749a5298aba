"""The lean world's tree as plain data: records of files, directories and symlinks, built from a `WorldState`.

Owns `FileRecord`, `DirRecord` and `LinkRecord` (immutable: a write replaces a record, so worlds
copied from one image share every record they have not changed), `LeanImage` (a tree keyed by
normalised absolute path, with the inode counter, the entry order and the hard-link groups pyfakefs
would have), `image_of` (a state's image, or None when the state is not one `World.populate` builds
plainly: a case-insensitive volume, a link whose parent directory it would have to make, or anything
pyfakefs would refuse) and `LeanImages`, the bounded cache of images by state. A record
holds what pyfakefs would hold for that object (mode, inode, times in nanoseconds, as
`FakeStatResult` keeps them), so the world promoted to pyfakefs mid-run is the one a pyfakefs run
would have (`harness.world.materialise`). It never changes a world and never touches pyfakefs
except to read the constants of an empty filesystem.
"""

from __future__ import annotations

import functools
import posixpath
import stat
from collections import OrderedDict
from typing import NamedTuple

from pyfakefs.helpers import PERM_DEF, PERM_DEF_FILE, get_locale_encoding

from harness.world.clock import EPOCH_S
from harness.world.state import WorldState

#: The mode pyfakefs gives a directory `World.populate` makes, and a file it makes (no umask applied).
DIR_MODE = stat.S_IFDIR | PERM_DEF
FILE_MODE = stat.S_IFREG | PERM_DEF_FILE
#: The mode pyfakefs gives a symlink on a POSIX volume (no umask applied).
LINK_MODE = stat.S_IFLNK | PERM_DEF


class FileRecord(NamedTuple):
    """A regular file: its content and what pyfakefs's stat result would hold. `seq` orders the
    entries of a directory as pyfakefs keeps them (insertion order; a rename moves one to the end)."""

    content: str
    mode: int
    ino: int
    mtime_ns: int
    ctime_ns: int
    atime_ns: int
    seq: int


class LinkRecord(NamedTuple):
    """A symlink: its target as written, and what pyfakefs's stat result of the link itself holds."""

    target: str
    mode: int
    ino: int
    mtime_ns: int
    ctime_ns: int
    atime_ns: int
    seq: int


class DirRecord(NamedTuple):
    """A directory (its entries are the records whose paths it is the parent of)."""

    mode: int
    ino: int
    mtime_ns: int
    ctime_ns: int
    atime_ns: int
    seq: int


def stamp_ns(seconds: float) -> int:
    """A time as `FakeStatResult` stores it: `int(seconds * 1e9)`."""
    return int(seconds * 1e9)


def components(path: str) -> list[str]:
    """The sort key that lists a tree as pyfakefs's sorted walk does (a directory, then its entries
    by name, each directory's entries right after it): the path's components, compared in order."""
    return path.split("/")


def encodable(text: str) -> bool:
    """Whether pyfakefs can store `text` (it encodes contents with the locale's encoding, strictly)."""
    if text.isascii():
        return True
    try:
        text.encode(get_locale_encoding())  # type: ignore[no-untyped-call]
    except (UnicodeError, LookupError):
        return False
    return True


@functools.cache
def empty_filesystem() -> tuple[int, int]:
    """(last inode number, umask) of a new pyfakefs filesystem in this process: its root's inode is
    the last one, and the umask is the process's when the first world was made."""
    from pyfakefs.fake_filesystem import FakeFilesystem

    fs = FakeFilesystem(path_separator="/")
    return fs.last_ino, fs.umask


class LeanImage:
    """A tree: files, directories (the root, "/", included) and symlinks by normalised absolute path,
    the hard-link groups (inode -> every name it was given, the last one the name pyfakefs's object
    keeps), the last inode number and entry sequence number given out, and the umask new files get.
    The sorted orders are computed once per image, when first asked for."""

    __slots__ = ("dir_order", "dirs", "file_order", "files", "groups", "last_ino", "links", "listing", "seq", "size",
                 "umask", "users")

    def __init__(self, files: dict[str, FileRecord], dirs: dict[str, DirRecord], last_ino: int, seq: int,
                 umask: int, size: int, links: dict[str, LinkRecord] | None = None,
                 groups: dict[int, tuple[str, ...]] | None = None) -> None:
        self.files, self.dirs, self.last_ino, self.seq, self.umask, self.size = files, dirs, last_ino, seq, umask, size
        self.links: dict[str, LinkRecord] = links if links is not None else {}
        self.groups: dict[int, tuple[str, ...]] = groups if groups is not None else {}
        self.file_order: list[str] | None = None
        #: `file_order` and, merged into it, the symlinks that reach a regular file (`list_files`).
        self.listing: tuple[list[str], list[str]] | None = None
        self.dir_order: list[str] | None = None
        #: The world's users (`default_users` of the state's home and users), worked out by the first world.
        self.users: dict[str, str] | None = None


def _plain_path(path: str) -> bool:
    return path.startswith("/") and not path.startswith("//") and posixpath.normpath(path) == path


def image_of(state: WorldState, stamp: float) -> LeanImage | None:
    """The tree `World.populate` would build for `state` on a new filesystem, every object stamped
    `stamp` (seconds), with pyfakefs's inode numbers and entry order: directories, files, hard links,
    then symlinks. None when `state` is not on a case-sensitive volume, names a link whose parent
    directory populate would have to make, or holds what pyfakefs would refuse (a file where a
    directory must be, a name given twice, text it cannot encode): the pyfakefs world takes those."""
    if not state.case_sensitive:
        return None
    last_ino, umask = empty_filesystem()
    ns = stamp_ns(stamp)
    root = DirRecord(DIR_MODE, last_ino, ns, ns, ns, 0)
    dirs: dict[str, DirRecord] = {"/": root}
    files: dict[str, FileRecord] = {}
    seq = 0

    def ensure(path: str) -> bool:
        nonlocal last_ino, seq
        prefix = ""
        for part in path.split("/"):
            if not part:
                continue
            prefix = prefix + "/" + part
            if prefix in dirs:
                continue
            if prefix in files:
                return False  # a file used as a directory: populate raises ENOTDIR
            last_ino += 1
            seq += 1
            dirs[prefix] = DirRecord(DIR_MODE, last_ino, ns, ns, ns, seq)
        return True

    for path in state.dirs:
        if not _plain_path(path) or not ensure(path):
            return None
    size = 0
    linked = {path for group in state.hardlinks for path in group[1:]}
    for path, content in state.files:
        if path in linked:
            continue  # populate makes it a name of its group's file
        if path == "/" or not _plain_path(path) or not isinstance(content, str) or not encodable(content):
            return None
        if not ensure(posixpath.dirname(path)) or path in dirs or path in files:
            return None
        last_ino += 1
        seq += 1
        files[path] = FileRecord(content, FILE_MODE, last_ino, ns, ns, ns, seq)
        size += len(content)
    groups: dict[int, tuple[str, ...]] = {}
    for group in state.hardlinks:
        first = files.get(group[0]) if group else None
        if first is None or first.ino in groups or group[0] in linked:
            return None
        for other in group[1:]:
            # `World.hardlink`: a new name in an existing directory (making a missing one is pyfakefs's)
            if not _plain_path(other) or posixpath.dirname(other) not in dirs or other in files or other in dirs:
                return None
            seq += 1
            files[other] = first._replace(seq=seq)
        groups[first.ino] = tuple(group)
    links: dict[str, LinkRecord] = {}
    for path, target in state.symlinks:
        # `World.symlink`: a new name in an existing directory, its target text stored as it is
        if (not _plain_path(path) or path == "/" or posixpath.dirname(path) not in dirs or path in files
                or path in dirs or path in links or not isinstance(target, str) or not target
                or "\x00" in target or not encodable(target)):
            return None
        last_ino += 1
        seq += 1
        links[path] = LinkRecord(target, LINK_MODE, last_ino, ns, ns, ns, seq)
    return LeanImage(files, dirs, last_ino, seq, umask, size, links, groups)


class LeanImages:
    """The images of the states built most recently, by the identity of their state (a state is
    immutable and an entry holds it, as `harness.world.templates.Templates` does), None for a state
    that has none. `MAX` entries and `MAX_CHARS` of file contents at most."""

    MAX = 64
    MAX_CHARS = 64 << 20

    def __init__(self) -> None:
        self._entries: OrderedDict[int, tuple[WorldState, LeanImage | None]] = OrderedDict()
        self._chars = 0

    def get(self, state: WorldState) -> LeanImage | None:
        """The image of `state` as `World.from_state` builds it (stamped at the virtual epoch)."""
        entry = self._entries.get(id(state))
        if entry is not None and entry[0] is state:
            self._entries.move_to_end(id(state))
            return entry[1]
        image = image_of(state, EPOCH_S)
        size = image.size if image is not None else 0
        if size > self.MAX_CHARS // 4:
            return image  # too big to keep: built each time
        self._entries[id(state)] = (state, image)
        self._chars += size
        while len(self._entries) > self.MAX or self._chars > self.MAX_CHARS:
            dropped = self._entries.popitem(last=False)[1][1]
            self._chars -= dropped.size if dropped is not None else 0
        return image
