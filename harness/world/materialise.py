"""A lean tree made real: the pyfakefs filesystem a pyfakefs world would hold in its place.

Owns `materialise`: from the records of a lean world (`harness.world.lean_image`) it builds a new
pyfakefs `FakeFilesystem` object by object, each with the record's mode, inode number and times,
each directory's entries in the order pyfakefs would have added them, and the filesystem's inode
counter and umask: what `os.stat`, `os.listdir` and `FakeFile` show afterwards is what they show on a
world that ran on pyfakefs throughout. It never decides when to materialise (the lean world does,
when something needs pyfakefs) and never changes the records.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyfakefs.fake_file import FakeDirectory, FakeFile
from pyfakefs.fake_filesystem import FakeFilesystem, OSType

from harness.world.lean_image import DirRecord, FileRecord


def new_filesystem() -> FakeFilesystem:
    """An empty filesystem with the world's POSIX semantics (as `World.__init__` makes one)."""
    fs = FakeFilesystem(path_separator="/")
    if fs.os != OSType.LINUX:
        fs.os = OSType.LINUX
    fs.is_case_sensitive = True
    return fs


def materialise(files: Mapping[str, FileRecord], dirs: Mapping[str, DirRecord], last_ino: int,
                umask: int) -> FakeFilesystem:
    """The pyfakefs filesystem holding this tree, object for object."""
    fs = new_filesystem()
    fs.umask = umask
    root = fs.root
    _stamp(root, dirs["/"])
    made: dict[str, FakeFile] = {"/": root}
    # In the order the entries were added: a directory is always added before anything inside it
    # (lean worlds never move a directory), and each directory keeps its entries in that order.
    entries: list[tuple[int, str, FileRecord | DirRecord]] = [
        (record.seq, path, record) for path, record in dirs.items() if path != "/"]
    entries.extend((record.seq, path, record) for path, record in files.items())
    entries.sort()
    for _, path, record in entries:
        parent, _, name = path.rpartition("/")
        obj: FakeFile
        if isinstance(record, DirRecord):
            obj = FakeDirectory(name, filesystem=fs)
        else:
            obj = FakeFile(name, record.mode, contents=record.content, filesystem=fs)
        obj.st_ino = record.ino  # before add_entry, which numbers only objects without one
        directory = made[parent or "/"]
        assert isinstance(directory, FakeDirectory)
        directory.add_entry(obj)
        _stamp(obj, record)
        made[path] = obj
    fs.last_ino = last_ino
    return fs


def _stamp(obj: FakeFile, record: FileRecord | DirRecord) -> None:
    result = obj.stat_result
    result.st_mode = record.mode
    result._st_mtime_ns, result._st_ctime_ns, result._st_atime_ns = record.mtime_ns, record.ctime_ns, record.atime_ns
