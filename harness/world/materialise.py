"""A lean tree made real: the pyfakefs filesystem a pyfakefs world would hold in its place.

Owns `materialise`: from the records of a lean world (`harness.world.lean_image`) it builds a new
pyfakefs `FakeFilesystem` object by object, each with the record's mode, inode number and times,
each directory's entries in the order pyfakefs would have added them, one object under every name
of a hard-linked file (named as pyfakefs names it: its group's last name), and the filesystem's
inode counter and umask: what `os.stat`, `os.listdir` and `FakeFile` show afterwards is what they
show on a world that ran on pyfakefs throughout. It never decides when to materialise (the lean world does,
when something needs pyfakefs) and never changes the records.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping

from pyfakefs.fake_file import FakeDirectory, FakeFile
from pyfakefs.fake_filesystem import FakeFilesystem, OSType

from harness.world.lean_image import DirRecord, FileRecord, LinkRecord


def new_filesystem() -> FakeFilesystem:
    """An empty filesystem with the world's POSIX semantics (as `World.__init__` makes one)."""
    fs = FakeFilesystem(path_separator="/")
    if fs.os != OSType.LINUX:
        fs.os = OSType.LINUX
    fs.is_case_sensitive = True
    return fs


def materialise(files: Mapping[str, FileRecord], dirs: Mapping[str, DirRecord], last_ino: int,
                umask: int, links: Mapping[str, LinkRecord] | None = None,
                groups: Mapping[int, tuple[str, ...]] | None = None) -> FakeFilesystem:
    """The pyfakefs filesystem holding this tree, object for object (`groups`: the hard-link groups,
    inode -> names, the last one the name its object keeps)."""
    fs = new_filesystem()
    fs.umask = umask
    root = fs.root
    _stamp(root, dirs["/"])
    made: dict[str, FakeFile] = {"/": root}
    # In the order the entries were added: a directory is always added before anything inside it
    # (lean worlds never move a directory), and each directory keeps its entries in that order.
    entries: list[tuple[int, str, FileRecord | DirRecord | LinkRecord]] = [
        (record.seq, path, record) for path, record in dirs.items() if path != "/"]
    entries.extend((record.seq, path, record) for path, record in files.items())
    entries.extend((record.seq, path, record) for path, record in (links or {}).items())
    entries.sort(key=lambda entry: entry[:2])
    groups = groups or {}
    shared: dict[int, FakeFile] = {}  # the object of each hard-linked inode, once made
    for _, path, record in entries:
        parent, _, name = path.rpartition("/")
        directory = made[parent or "/"]
        assert isinstance(directory, FakeDirectory)
        obj: FakeFile
        if isinstance(record, FileRecord) and record.ino in shared:
            obj = shared[record.ino]  # `FakeFilesystem.link`: the object renamed, added again
            obj.name = name  # type: ignore[assignment]  # pyfakefs types the name as AnyStr
            directory.add_entry(obj)
            continue
        if isinstance(record, DirRecord):
            obj = FakeDirectory(name, filesystem=fs)
        elif isinstance(record, LinkRecord):
            obj = FakeFile(name, record.mode, filesystem=fs)  # `create_symlink`: contents set once added
        else:
            obj = FakeFile(name, record.mode, contents=record.content, filesystem=fs)
        obj.st_ino = record.ino  # before add_entry, which numbers only objects without one
        directory.add_entry(obj)
        if isinstance(record, LinkRecord):
            obj.set_initial_contents(record.target)
        _stamp(obj, record)
        made[path] = obj
        if isinstance(record, FileRecord) and record.ino in groups:
            shared[record.ino] = obj
    for ino, names in groups.items():
        linked = shared.get(ino)
        if linked is not None:  # named where it was last given a name, as pyfakefs's object is
            owner, _, name = names[-1].rpartition("/")
            linked.name = name  # type: ignore[assignment]
            linked.parent_dir = weakref.ref(made[owner or "/"])
    fs.last_ino = last_ino
    return fs


def _stamp(obj: FakeFile, record: FileRecord | DirRecord | LinkRecord) -> None:
    result = obj.stat_result
    result.st_mode = record.mode
    result._st_mtime_ns, result._st_ctime_ns, result._st_atime_ns = record.mtime_ns, record.ctime_ns, record.atime_ns
