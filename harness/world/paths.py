"""Paths as text: what a path means before any file is looked at.

Owns `~` and `~user` expansion against a world's users, joining to a cwd and textual normalisation
(what planners compute, `os.path.abspath`), and the kernel's length limits (`PATH_MAX`, `NAME_MAX`).
It never looks at a filesystem and never follows a symlink: that is `harness.world.resolution`.
"""

from __future__ import annotations

import functools
import posixpath
from collections.abc import Mapping

#: Longest path and longest name a Linux filesystem accepts, in bytes (`PATH_MAX` - 1, `NAME_MAX`).
PATH_MAX = 4095
NAME_MAX = 255


def expand_user(raw: str, home: str, users: Mapping[str, str] | None = None) -> str:
    """`os.path.expanduser` on this world: `~` is `home`, `~name` the home of the world's user `name`
    (see `World.users`); an unknown user leaves the path as it is, as Python does, so opening it
    then fails like any missing relative path."""
    if not raw.startswith("~"):
        return raw
    name, slash, rest = raw[1:].partition("/")
    base = (users or {}).get(name) if name else home
    if base is None:
        return raw
    return base.rstrip("/") + slash + rest if slash else base


def default_users(home: str, users: Mapping[str, str] | None = None) -> dict[str, str]:
    """The world's users: `root` (/root), the owner of `home` (its last component), and any the
    scenario names, which win."""
    owner = posixpath.basename(home.rstrip("/"))
    found = {"root": "/root", **({owner: home} if owner else {})}
    found.update(users or {})
    return found


def absolute_path(raw: str, cwd: str, home: str, users: Mapping[str, str] | None = None) -> str:
    """`~` and `~user` expanded, joined to `cwd` and normalised as text, like `os.path.abspath`.

    Symlinks are not resolved, so `link/../x` collapses textually, as it does in real planners.
    """
    raw = expand_user(raw, home, default_users(home, users) if raw.startswith("~") else None)
    return posixpath.normpath(posixpath.join(cwd, raw))


@functools.lru_cache(maxsize=4096)
def plain_absolute(cwd: str, raw: str) -> str | None:
    """`raw` joined to `cwd` and normalised when no component is `..` (text alone decides then), else
    None. A pure function of its arguments, remembered by value: tools resolve the same few paths
    in every run."""
    joined = posixpath.join(cwd, raw)
    return None if ".." in joined.split("/") else posixpath.normpath(joined)


def too_long(path: str) -> bool:
    """ENAMETOOLONG: the path over `PATH_MAX` bytes, or one of its names over `NAME_MAX`."""
    encoded = path.encode("utf-8", "surrogateescape")
    return len(encoded) > PATH_MAX or any(len(name) > NAME_MAX for name in encoded.split(b"/"))

