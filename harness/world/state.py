"""A world frozen into plain data: the canonical snapshot, its digest and a readable diff.

Owns what "the same world" means. File contents, directory structure, symlink targets, hard-link
groups, ledger entries and session state count; timestamps, inode numbers and creation order do
not. It never mutates a world and never touches pyfakefs.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.sim.trace import canonical_bytes, canonical_json, plain_bytes
from harness.world.ledger import LedgerEntry


def content_digest(text: str) -> str:
    # Every touch and every world digest hashes file contents, mostly the same few small files over
    # and over: small ones are remembered by value (a bounded memo: at most 4096 x 4 KB).
    if len(text) <= _MEMO_CHARS:
        return _small_digest(text)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


_MEMO_CHARS = 4096


@functools.lru_cache(maxsize=4096)
def _small_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _sha256(encoded: bytes) -> str:
    return hashlib.sha256(encoded).hexdigest()


#: The digest of a small world's canonical bytes, remembered: runs of one scenario end in the same few
#: worlds, and looking the bytes up is cheaper than hashing them again (at most 4096 x 4 KB).
_small_sha256 = functools.lru_cache(maxsize=4096)(_sha256)


def touch_digest(text: str) -> str:
    """What a touch records of a text: the first 16 hex digits of its `content_digest`."""
    return content_digest(text)[:16]


#: `touch_digest` of a text up to `MEMO_CHARS` long, remembered as `content_digest` remembers its own:
#: the hot paths call it directly for such texts (one lookup, no Python call and no slice per touch).
small_touch_digest = functools.lru_cache(maxsize=4096)(touch_digest)
MEMO_CHARS = _MEMO_CHARS


@dataclass(frozen=True, slots=True)
class WorldState:
    """Everything that defines a world, sorted so that equal worlds are equal values."""

    files: tuple[tuple[str, str], ...] = ()  # (path, content) of regular files
    dirs: tuple[str, ...] = ()  # every directory except the root
    symlinks: tuple[tuple[str, str], ...] = ()  # (link path, target as written)
    hardlinks: tuple[tuple[str, ...], ...] = ()  # groups of >= 2 paths sharing one file
    ledgers: tuple[tuple[str, tuple[LedgerEntry, ...]], ...] = ()
    cwd: str = "/"
    env: tuple[tuple[str, str], ...] = ()
    home: str = "/home/user"
    case_sensitive: bool = True
    users: tuple[tuple[str, str], ...] = ()  # (name, home) of users a scenario names, for `~name`
    _digest: list[str] = field(default_factory=list, compare=False, repr=False)

    @property
    def file_map(self) -> dict[str, str]:
        return dict(self.files)

    def ledger(self, name: str) -> tuple[LedgerEntry, ...]:
        for ledger_name, entries in self.ledgers:
            if ledger_name == name:
                return entries
        return ()

    def to_json(self, *, contents: bool = False) -> dict[str, Any]:
        """The canonical form; file contents are replaced by their SHA-256 unless asked for."""
        return {
            "files": {p: (c if contents else content_digest(c)) for p, c in self.files},
            "dirs": list(self.dirs),
            "symlinks": dict(self.symlinks),
            "hardlinks": [list(group) for group in self.hardlinks],
            "ledgers": {name: [e.to_json() for e in entries] for name, entries in self.ledgers},
            "cwd": self.cwd,
            "env": dict(self.env),
            "home": self.home,
            "case_sensitive": self.case_sensitive,
            # Only when named: worlds without users keep the digests they always had.
            **({"users": dict(self.users)} if self.users else {}),
        }

    def digest(self, *, typed: bool = False) -> str:
        """The SHA-256 of the canonical form (`to_json`). `typed`: the caller vouches that every field
        holds the types it declares (a state a world's `state()` made: strings and a bool), so without
        ledgers (whose payloads may hold anything, a float) the form holds nothing but str, bool, dict
        and list, which orjson writes exactly as json does, with no type walk first."""
        # Cached in a list because the dataclass is frozen and hashing a big tree is not free.
        if not self._digest:
            form = self.to_json()
            encoded = plain_bytes(form) if typed and not self.ledgers else None
            if encoded is None:
                encoded = canonical_bytes(form)
            self._digest.append(_small_sha256(encoded) if len(encoded) <= _MEMO_CHARS else _sha256(encoded))
        return self._digest[0]


def diff(before: WorldState, after: WorldState, *, context: int = 1, max_lines: int = 20) -> list[str]:
    """Readable differences from `before` to `after`, one finding per line (plus content hunks).

    Empty when the two worlds are equal.
    """
    lines: list[str] = []
    old_files, new_files = before.file_map, after.file_map
    for path in sorted(old_files.keys() | new_files.keys()):
        if path not in new_files:
            lines.append(f"- file {path} removed")
        elif path not in old_files:
            lines.append(f"+ file {path} created ({len(new_files[path])} chars)")
        elif old_files[path] != new_files[path]:
            lines.append(f"~ file {path} changed")
            hunk = difflib.unified_diff(
                old_files[path].splitlines(), new_files[path].splitlines(), lineterm="", n=context
            )
            body = [f"    {line}" for line in list(hunk)[2:]]
            if len(body) > max_lines:
                body = [*body[:max_lines], f"    ... {len(body) - max_lines} more lines"]
            lines.extend(body)
    lines.extend(tree_shape_changes(before, after))
    old_ledgers, new_ledgers = dict(before.ledgers), dict(after.ledgers)
    for name in sorted(old_ledgers.keys() | new_ledgers.keys()):
        old_entries, new_entries = old_ledgers.get(name, ()), new_ledgers.get(name, ())
        if old_entries == new_entries:
            continue
        lines.append(f"~ ledger {name}: {len(old_entries)} -> {len(new_entries)} entries")
        lines.extend(entry_changes(old_entries, new_entries))
    if before.cwd != after.cwd:
        lines.append(f"~ cwd {before.cwd} -> {after.cwd}")
    if before.env != after.env:
        lines.append(f"~ env {dict(before.env)} -> {dict(after.env)}")
    return lines


def tree_shape_changes(before: WorldState, after: WorldState) -> list[str]:
    """`- dir X` / `+ symlink A -> B` / `+ hardlink group A = B` lines: the tree's shape, files aside."""
    lines: list[str] = []
    for label, old_set, new_set in (
        ("dir", set(before.dirs), set(after.dirs)),
        ("symlink", set(before.symlinks), set(after.symlinks)),
        ("hardlink group", set(before.hardlinks), set(after.hardlinks)),
    ):
        lines.extend(f"- {label} {_show(item)}" for item in sorted(old_set - new_set, key=str))
        lines.extend(f"+ {label} {_show(item)}" for item in sorted(new_set - old_set, key=str))
    return lines


def entry_changes(old: Sequence[LedgerEntry], new: Sequence[LedgerEntry]) -> list[str]:
    """`    + id by call: payload` for each entry only `new` has, `    - ...` for each only `old` has."""
    return ([f"    + {e.entry_id} by {e.call_id}: {canonical_json(e.payload)}" for e in new if e not in old]
            + [f"    - {e.entry_id} by {e.call_id}: {canonical_json(e.payload)}" for e in old if e not in new])


def _show(item: object) -> str:
    if isinstance(item, tuple) and len(item) == 2 and all(isinstance(x, str) for x in item):
        return f"{item[0]} -> {item[1]}"
    if isinstance(item, tuple):
        return " = ".join(str(x) for x in item)
    return str(item)
