"""Copies of a pyfakefs filesystem, object by object.

Owns `FilesystemCopier`: made once from a pristine filesystem, it hands out independent copies of
it, the same objects `pickle.loads(pickle.dumps(fs))` would give (pyfakefs's own way to copy one,
and what every run paid ~35 us for: pyfakefs's `__setstate__` runs in Python for every object). A
copy shares only immutable values with the pristine one; stat results, extended attributes,
directory entries, mount points and the descriptor table are its own. It never changes the pristine
filesystem and never builds one.

It knows pyfakefs's attributes (checked against the installed version when a copier is made):
anything it does not know, `FilesystemCopier.of` refuses (None), and the caller keeps pickling.
"""

from __future__ import annotations

import enum
import weakref
from collections import OrderedDict
from typing import Any

from pyfakefs.fake_file import FakeFile
from pyfakefs.fake_filesystem import FakeFilesystem
from pyfakefs.helpers import FakeStatResult

#: Values a copy may share with the pristine filesystem: nothing changes them in place.
_IMMUTABLE = (str, bytes, int, float, bool, type(None), enum.Enum)
#: Attributes of a file object the copy rebuilds; every other one must hold an immutable value.
_NODE_REBUILT = frozenset({"_filesystem", "parent_dir", "stat_result", "xattr", "_entries"})
#: Attributes of the filesystem the copy rebuilds; the same rule for the others.
_FS_REBUILT = frozenset({"root", "dev_null", "mount_points", "open_files", "_free_fd_heap", "fs_properties"})


class FilesystemCopier:
    """Independent copies of one pristine filesystem (which it keeps, and never hands out)."""

    __slots__ = ("_dev_null", "_parents", "_plan", "_pristine")

    def __init__(self, pristine: FakeFilesystem) -> None:
        self._pristine = pristine
        # The pristine objects in a fixed order (each once, hard links included), and for each what
        # its copy is made of: its class, its attributes, its stat result's, its parent's position
        # and its entries' positions. The root is first.
        nodes: list[FakeFile] = []
        position: dict[int, int] = {}
        pending = [pristine.dev_null, pristine.root]
        while pending:
            node = pending.pop()
            if id(node) in position:
                continue
            position[id(node)] = len(nodes)
            nodes.append(node)
            entries = node.__dict__.get("_entries")
            if entries is not None:
                pending.extend(reversed(entries.values()))
        self._plan: list[tuple[type[FakeFile], dict[str, Any], dict[str, Any], int,
                               list[tuple[str, int]] | None]] = []
        for node in nodes:
            ref = node.__dict__["parent_dir"]
            parent = ref() if ref is not None else None
            entries = node.__dict__.get("_entries")
            self._plan.append((type(node), node.__dict__, node.stat_result.__dict__,
                               position[id(parent)] if parent is not None else -1,
                               None if entries is None else [(name, position[id(child)])
                                                             for name, child in entries.items()]))
        self._dev_null = position[id(pristine.dev_null)]
        #: The positions of the objects something names as its parent: each copy gets one weak reference.
        self._parents = sorted({parent for _, _, _, parent, _ in self._plan if parent >= 0})

    @classmethod
    def of(cls, pristine: FakeFilesystem) -> FilesystemCopier | None:
        """A copier for `pristine` (no open files but the standard streams), or None when it holds
        something this module does not know how to copy (a newer pyfakefs, a file read from disk)."""
        try:
            if not _copyable(pristine):
                return None
            copier = cls(pristine)
            # Checked once, here: a copy must be the pristine filesystem object for object.
            return copier if _same(copier.copy(), pristine) else None
        except Exception:  # an attribute missing or shaped otherwise (another pyfakefs): unpickle
            return None

    def copy(self) -> FakeFilesystem:
        source = self._pristine
        fs: FakeFilesystem = object.__new__(type(source))
        state = source.__dict__.copy()
        state["mount_points"] = OrderedDict((path, dict(mount)) for path, mount in source.mount_points.items())
        state["open_files"] = []
        state["_free_fd_heap"] = []
        state["fs_properties"] = list(source.fs_properties)
        fs.__dict__ = state
        owner = weakref.ref(fs)
        made: list[FakeFile] = []
        for kind, attributes, stat_attributes, _, _ in self._plan:
            new = object.__new__(kind)
            copied = attributes.copy()
            copied["_filesystem"] = owner
            stat_result = object.__new__(FakeStatResult)
            stat_result.__dict__ = stat_attributes.copy()
            copied["stat_result"] = stat_result
            copied["xattr"] = dict(attributes["xattr"])
            object.__setattr__(new, "__dict__", copied)  # not FakeFile.__setattr__, a Python-level hop
            made.append(new)
        refs = {index: weakref.ref(made[index]) for index in self._parents}
        for new, (_, _, _, parent, entries) in zip(made, self._plan, strict=True):
            attributes = new.__dict__
            attributes["parent_dir"] = refs[parent] if parent >= 0 else None
            if entries is not None:
                attributes["_entries"] = {name: made[index] for name, index in entries}
        state["root"], state["dev_null"] = made[0], made[self._dev_null]
        fs._add_standard_streams()  # what a new filesystem opens: fds 0-2
        return fs


def _copyable(fs: FakeFilesystem) -> bool:
    """Whether every attribute of the filesystem and its objects is one this module copies right."""
    if len(fs.open_files) != 3 or fs._free_fd_heap:
        return False
    for name, value in fs.__dict__.items():
        if name not in _FS_REBUILT and not isinstance(value, _IMMUTABLE):
            return False
    if any(type(p).__name__ != "FSProperties" for p in fs.fs_properties):
        return False
    stack: list[FakeFile] = [fs.root, fs.dev_null]
    while stack:
        node = stack.pop()
        for name, value in node.__dict__.items():
            if name not in _NODE_REBUILT and not isinstance(value, _IMMUTABLE):
                return False
        stat_result, xattr = node.__dict__.get("stat_result"), node.__dict__.get("xattr")
        if type(stat_result) is not FakeStatResult or any(
                not isinstance(v, _IMMUTABLE) for v in stat_result.__dict__.values()):
            return False
        if type(xattr) is not dict or any(not isinstance(k, str) or not isinstance(v, bytes | str)
                                          for k, v in xattr.items()):
            return False
        entries = node.__dict__.get("_entries")
        if entries is not None:
            stack.extend(entries.values())
    return True


def _same(copy: FakeFilesystem, pristine: FakeFilesystem) -> bool:
    """Whether `copy` holds what `pristine` does, object for object, sharing nothing mutable, with
    every parent and filesystem reference pointing into the copy."""
    def plain(state: dict[str, Any], skip: frozenset[str]) -> dict[str, Any]:
        return {k: v for k, v in state.items() if k not in skip}

    if plain(copy.__dict__, _FS_REBUILT) != plain(pristine.__dict__, _FS_REBUILT):
        return False
    if copy.mount_points != pristine.mount_points or copy.fs_properties != pristine.fs_properties:
        return False
    pairs: dict[int, tuple[FakeFile, FakeFile]] = {}
    stack = [(copy.root, pristine.root), (copy.dev_null, pristine.dev_null)]
    while stack:
        mine, theirs = stack.pop()
        if id(theirs) in pairs:
            if pairs[id(theirs)][0] is not mine:
                return False  # one object under two names must stay one object
            continue
        pairs[id(theirs)] = (mine, theirs)
        if type(mine) is not type(theirs) or mine is theirs or mine.stat_result is theirs.stat_result:
            return False
        if plain(mine.__dict__, _NODE_REBUILT) != plain(theirs.__dict__, _NODE_REBUILT):
            return False
        if mine.stat_result.__dict__ != theirs.stat_result.__dict__ or mine.xattr != theirs.xattr:
            return False
        if mine.__dict__["_filesystem"]() is not copy:
            return False
        entries, their_entries = mine.__dict__.get("_entries"), theirs.__dict__.get("_entries")
        if (entries is None) != (their_entries is None):
            return False
        if entries is not None:
            if list(entries) != list(their_entries):
                return False
            stack.extend((entries[name], their_entries[name]) for name in entries)
    for mine, theirs in pairs.values():
        ref, their_ref = mine.__dict__["parent_dir"], theirs.__dict__["parent_dir"]
        their_parent = their_ref() if their_ref is not None else None
        expected = pairs[id(their_parent)][0] if their_parent is not None and id(their_parent) in pairs else None
        if (ref() if ref is not None else None) is not expected or (their_parent is not None and expected is None):
            return False
    return True
