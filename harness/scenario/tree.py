"""A world's files taken from a real directory tree (`[world] from_dir`).

Owns the copy of a tree on the real disk into scenario data: regular files as text, directories,
symlinks as links (their targets as written, never followed), files sharing an inode as a hard-link
group, and the limits past which a tree is refused instead of silently truncated (its depth too; it
is walked with a stack of its own, never by recursion). It reads the tree once, when the scenario
loads, and never writes anywhere; the run that follows sees only the copy (a reproducer carries it
inline, so it replays without the tree).
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import stat
from dataclasses import dataclass, field
from pathlib import Path

from harness.scenario.reader import MAX_PATH_DEPTH

#: Past these a tree is refused: a world is a test fixture, not a disk image.
MAX_FILES = 2000
MAX_FILE_BYTES = 1 << 20
MAX_TOTAL_BYTES = 16 << 20


class TreeError(ValueError):
    """The tree cannot become a world; the message names the real path and what was expected."""


@dataclass
class Tree:
    """What the tree holds, as absolute world paths under the mount point."""

    dirs: list[str] = field(default_factory=list)
    files: list[tuple[str, str]] = field(default_factory=list)
    symlinks: list[tuple[str, str]] = field(default_factory=list)
    hardlinks: list[tuple[str, ...]] = field(default_factory=list)


def read_tree(root: Path, into: str, *, exclude: tuple[str, ...] = ()) -> Tree:
    """Copy the tree at `root` to world paths under `into`; names matching an `exclude` pattern (glob,
    matched against the name and the path relative to `root`) are left out with what is below them."""
    try:
        top = os.stat(root)
    except OSError as exc:
        raise TreeError(f"{root}: expected a readable directory, got {exc.strerror}") from None
    except ValueError as exc:  # a NUL byte in the path
        raise TreeError(f"{root!r}: expected a directory path ({exc})") from None
    if not stat.S_ISDIR(top.st_mode):
        raise TreeError(f"{root}: expected a directory")
    tree = Tree()
    if into != "/":
        tree.dirs.append(into)
    total = 0
    by_inode: dict[tuple[int, int], list[str]] = {}
    # Walked with a stack of its own, in os.walk's order (top-down, names sorted): a tree a thousand
    # levels deep is a tree, not a RecursionError. Symlinked directories are listed among `subdirs`
    # but not descended: they are copied as links.
    pending = [str(root)]
    while pending:
        directory = pending.pop()
        subdirs, names = _listing(directory)
        relative_dir = os.path.relpath(directory, root)
        subdirs = sorted(d for d in subdirs if not _excluded(d, relative_dir, exclude))
        descend = []
        for name in subdirs:
            full = os.path.join(directory, name)
            target = _world_path(into, relative_dir, name)
            if os.path.islink(full):
                try:
                    tree.symlinks.append((target, os.readlink(full)))
                except OSError as exc:
                    raise TreeError(f"{full}: expected a readable symlink, got {exc.strerror}") from None
            else:
                if target.count("/") >= MAX_PATH_DEPTH:  # what it holds is one level deeper
                    raise TreeError(f"{full}: expected a tree whose world paths are at most {MAX_PATH_DEPTH} "
                                    "directories deep (exclude what the scenario does not need with from_dir.exclude)")
                tree.dirs.append(target)
                descend.append(full)
        pending.extend(reversed(descend))
        for name in sorted(names):
            if _excluded(name, relative_dir, exclude):
                continue
            full = os.path.join(directory, name)
            target = _world_path(into, relative_dir, name)
            try:
                info = os.lstat(full)
                if stat.S_ISLNK(info.st_mode):
                    tree.symlinks.append((target, os.readlink(full)))
                    continue
            except OSError as exc:
                raise TreeError(f"{full}: expected a readable entry, got {exc.strerror}") from None
            if not stat.S_ISREG(info.st_mode):
                raise TreeError(f"{full}: expected a regular file, directory or symlink (exclude it with "
                                "from_dir.exclude)")
            if info.st_size > MAX_FILE_BYTES:
                raise TreeError(f"{full}: expected a file of at most {MAX_FILE_BYTES} bytes, got {info.st_size} "
                                "(exclude it with from_dir.exclude)")
            total += info.st_size
            if total > MAX_TOTAL_BYTES:
                raise TreeError(f"{root}: expected at most {MAX_TOTAL_BYTES} bytes of files in all, got more "
                                "(exclude what the scenario does not need with from_dir.exclude)")
            key = (info.st_dev, info.st_ino)
            if key in by_inode:
                by_inode[key].append(target)
                continue
            by_inode[key] = [target]
            if len(by_inode) > MAX_FILES:
                raise TreeError(f"{root}: expected at most {MAX_FILES} files, got more (exclude what the "
                                "scenario does not need with from_dir.exclude)")
            try:
                text = Path(full).read_bytes().decode("utf-8")
            except UnicodeDecodeError:
                raise TreeError(f"{full}: expected UTF-8 text (the world holds text files; exclude binaries "
                                "with from_dir.exclude)") from None
            except OSError as exc:
                raise TreeError(f"{full}: expected a readable file, got {exc.strerror}") from None
            tree.files.append((target, text))
    tree.hardlinks = sorted(tuple(paths) for paths in by_inode.values() if len(paths) > 1)
    return tree


def _listing(directory: str) -> tuple[list[str], list[str]]:
    """The directories (symlinks to directories too, as os.walk lists them) and the other names in
    `directory`."""
    subdirs: list[str] = []
    names: list[str] = []
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False
                (subdirs if is_dir else names).append(entry.name)
    except OSError as exc:
        raise TreeError(f"{exc.filename or directory}: expected a readable directory, got {exc.strerror}") from None
    return subdirs, names


def _excluded(name: str, relative_dir: str, patterns: tuple[str, ...]) -> bool:
    relative = os.path.normpath(os.path.join(relative_dir, name))
    return any(fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(relative, p) for p in patterns)


def _world_path(into: str, relative_dir: str, name: str) -> str:
    parts = [] if relative_dir == "." else relative_dir.split(os.sep)
    return posixpath.join(into, *parts, name)
