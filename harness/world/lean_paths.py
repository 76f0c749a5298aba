"""What the lean world's paths resolve to: `PathResolution`'s rules, on records instead of pyfakefs objects.

Owns `LeanPaths`, the half of `harness.world.lean.LeanWorld` that reads its tree without changing it:
the fast lookup (a dictionary hit for a plain path, deferring to the walk at a symlink), the kernel's
path walk (`path_resolution(7)`: symlinks followed, relative targets from the link's directory, `..`
taken from the directory reached, ELOOP after 40 hops, ENOTDIR, ENOENT) and a file's identity across
its aliases, which is what pyfakefs's object answers: the path its object was last given a name at
(for a hard-linked file, the last name of its group, even once that name is gone). The answers and
errors are the pyfakefs world's (`harness.world.resolution`), checked by
`tests/unit/test_lean_world.py`. It never changes the tree.
"""

from __future__ import annotations

import errno as _errno
import posixpath
from typing import Any

from harness.world.errors import WorldError
from harness.world.lean_image import DirRecord, FileRecord, LinkRecord
from harness.world.resolution import MAX_SYMLINK_HOPS

Record = FileRecord | DirRecord | LinkRecord
#: What `_resolve` answers when the pyfakefs world's fast lookup would defer to its full walk.
DEFER: Any = object()


class LeanPaths:
    """Resolution on a lean world's records (mixed into `LeanWorld`, which sets the attributes)."""

    __slots__ = ()

    _files: dict[str, FileRecord]
    _dirs: dict[str, DirRecord]
    #: Symlinks by their own path.
    _links: dict[str, LinkRecord]
    #: Hard-link groups of the image: inode -> every name it was given (the last is its object's name).
    _groups: dict[int, tuple[str, ...]]

    def _resolve(self, path: str) -> tuple[str, Record] | None:
        """What `PathResolution._lookup` answers, with the record's normalised path: the record at a
        plain absolute path, None if nothing is there, `DEFER` when the full walk must decide (a
        symlink on the way, an odd spelling)."""
        files, dirs = self._files, self._dirs
        record: Record | None = files.get(path) or dirs.get(path)
        if record is not None:
            return path, record  # a key is a normalised path: the fast walk would reach it too
        if not path.startswith("/") or path.startswith("//"):
            return DEFER  # type: ignore[no-any-return]
        prefix, record = "", dirs["/"]
        for part in path.split("/"):
            if not part:
                continue
            if part in (".", "..") or not isinstance(record, DirRecord):
                return DEFER  # type: ignore[no-any-return]
            prefix = prefix + "/" + part
            record = files.get(prefix) or dirs.get(prefix)
            if record is None:
                return DEFER if prefix in self._links else None
        return (prefix or "/"), record

    def _walk_path(self, path: str, *, follow_last: bool = True, missing_ok: bool = True,
                   want_dir: bool = False, shown: str | None = None) -> tuple[str, Record | None]:
        """`PathResolution._walk_path` on records: component by component from the root, each
        symlink met replaced by its target (relative to the link's directory), `..` taken from the
        directory reached, ENOTDIR for a file used as a directory, ENOENT for a missing component
        unless `missing_ok`, ELOOP after 40 hops; `follow_last=False` stops at a final symlink."""
        name = path if shown is None else shown
        files, dirs, links = self._files, self._dirs, self._links
        pending = path.split("/")
        pending.reverse()  # a stack: the next component is at the end
        names: list[str] = []
        found: list[Record | None] = [dirs["/"]]
        hops = 0
        while pending:
            part = pending.pop()
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
            child: Record | None = None
            if here is not None:
                key = "/" + "/".join(names) + "/" + part if names else "/" + part
                child = files.get(key) or dirs.get(key) or links.get(key)
            if child is None:
                if not missing_ok:
                    raise WorldError(_errno.ENOENT, name)
                names.append(part)
                found.append(None)
                continue
            if isinstance(child, LinkRecord) and (follow_last or any(p not in ("", ".") for p in pending)):
                hops += 1
                if hops > MAX_SYMLINK_HOPS:
                    raise WorldError(_errno.ELOOP, name)
                target = child.target
                if target.startswith("/"):
                    del names[:]
                    del found[1:]
                pending.extend(reversed(target.split("/")))
                continue
            names.append(part)
            found.append(child)
        last = found[-1]
        if want_dir and not isinstance(last, DirRecord):
            raise WorldError(_errno.ENOENT if last is None else _errno.ENOTDIR, name)
        return "/" + "/".join(names), last

    def _located(self, path: str) -> tuple[str, FileRecord | DirRecord] | None:
        """`PathResolution._object`: the record at `path` (symlinks followed) and its normalised
        path, or None."""
        found = self._resolve(path)
        if found is DEFER:
            try:
                real, record = self._walk_path(path, missing_ok=False)
            except WorldError:
                return None
            assert not isinstance(record, LinkRecord)  # the last component was followed
            return (real, record) if record is not None else None
        return found  # type: ignore[return-value]  # the fast walk never stops at a symlink

    def _named(self, path: str, record: Record) -> str:
        """The path of the object `record` is, as pyfakefs's object knows it: where it is, but for a
        hard-linked file the last name of its group."""
        if self._groups and isinstance(record, FileRecord):
            group = self._groups.get(record.ino)
            if group is not None:
                return group[-1]
        return path

    def canonical(self, path: str) -> str:
        record = self._files.get(path)
        if record is not None:
            return self._named(path, record) if self._groups else path
        if path in self._dirs:
            return path
        found = self._located(path)
        if found is not None:
            return self._named(*found)
        parent, name = posixpath.split(path)
        return path if parent == path else posixpath.join(self.canonical(parent), name)

    def exists(self, path: str) -> bool:
        return path in self._files or path in self._dirs or self._located(path) is not None

    def is_dir(self, path: str) -> bool:
        if path in self._dirs:
            return True
        found = self._located(path)
        return found is not None and isinstance(found[1], DirRecord)
