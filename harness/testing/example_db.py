"""The local example database: failures `check_scheduler` found under pytest, replayed first next time.

Owns the layout of `.harness/examples/` in a pytest rootdir (one directory per test node id, named by
a hash of it, holding one reproducer file per stored failure, a `test` file naming the node id and a
`fixed/` folder of the failures that pass now), reading it (a corrupted, unreadable or symlinked entry
is ignored with a `HarnessDatabaseWarning`, never an error) and writing it (atomically, never outside
the root it was opened on), and the binding of the current test's entries while pytest runs it. It
never explores and never decides a verdict.

Like Hypothesis's example database, extended to keep fixed bugs as regression tests:

- the pytest plugin saves a failure when a test fails with `SchedulerCheckFailed` (`save`);
- `check_scheduler` replays that test's stored failures before it explores; one that passes now is
  *moved* to the test's `fixed/` folder (`mark_fixed`), not deleted; when the test passes, its
  failures left are moved there too (`retire`);
- the fixed entries (`fixed`, oldest first) are what a regression is checked against: replayed first,
  one that fails again is reopened (`reopen`: back among the failures, to be reported);
- at most `FIXED_CAP` (50) are kept per test: moving one more drops the oldest. Their order is a
  sequence number in the name (`000012--<name>.json`), never a file's time. The same failure fixed
  twice is one entry, the newest.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from harness.atomic import write_text
from harness.reproducers.file import Reproducer, ReproducerError, loads, to_json

#: The database's directory under the rootdir, and the examples' under it.
DIRECTORY = ".harness"
EXAMPLES = "examples"
#: The folder of a test's directory that keeps its fixed failures, and how many it keeps.
FIXED = "fixed"
FIXED_CAP = 50


class HarnessDatabaseWarning(UserWarning):
    """An entry of the example database was ignored (corrupted, unreadable, or not a plain file)."""


@dataclass(frozen=True)
class Entry:
    """One stored failure: its file and the reproducer read from it."""

    path: Path
    reproducer: Reproducer


@dataclass(frozen=True)
class ExampleDatabase:
    """The examples under `root` (normally `<rootdir>/.harness/examples`)."""

    root: Path

    @classmethod
    def in_rootdir(cls, rootdir: Path) -> ExampleDatabase:
        """The database of a pytest rootdir; a `ValueError` if `.harness` resolves outside it (a symlink)."""
        base = rootdir.resolve()
        root = (base / DIRECTORY / EXAMPLES).resolve()
        if not root.is_relative_to(base):
            raise ValueError(f"{base / DIRECTORY} resolves outside the rootdir ({root}); failures are not stored")
        return cls(root)

    def directory(self, key: str) -> Path:
        """Where the entries of the test `key` (a pytest node id) live."""
        return self.root / hashlib.sha256(key.encode()).hexdigest()[:20]

    def entries(self, key: str, trust: tuple[str, ...] = ()) -> list[Entry]:
        """The stored failures of `key`, oldest name first; `trust` lists the code modules a stored
        scenario may import (those the current check imports anyway)."""
        return _read(self.directory(key), trust)

    def fixed(self, key: str, trust: tuple[str, ...] = ()) -> list[Entry]:
        """The failures of `key` that passed since (see `mark_fixed`), oldest fixed first."""
        directory = self.directory(key)
        if directory.is_symlink():
            return []
        return sorted(_read(directory / FIXED, trust), key=lambda entry: _sequence(entry.path.name))

    def count(self, *, fixed: bool = False) -> int:
        """How many failures are stored, for every test (with `fixed`: how many fixed ones)."""
        pattern = f"*/{FIXED}/*.json" if fixed else "*/*.json"
        return sum(1 for _ in self.root.glob(pattern)) if self.root.is_dir() else 0

    def save(self, key: str, reproducer: Reproducer, *, version: str) -> Path:
        """Store `reproducer` for `key` (atomically; the same failure twice is one file)."""
        directory = self.directory(key)
        directory.mkdir(parents=True, exist_ok=True)
        write_text(directory / "test", key + "\n")
        name = "--".join((_safe(reproducer.scenario.name)[:60], _safe(reproducer.label)[:40],
                          reproducer.fingerprint[:12])) + ".json"
        path = directory / name
        write_text(path, to_json(reproducer, version=version))
        return path

    def mark_fixed(self, path: Path, *, cap: int = FIXED_CAP) -> Path | None:
        """Move the stored failure `path` (it passes now) to its test's fixed entries, as the newest;
        the oldest are dropped beyond `cap`. Returns its new path (None if `path` is no failure of
        this database)."""
        if not self._failure(path) or not path.is_file():
            return None
        fixed = path.parent / FIXED
        if fixed.is_symlink():
            return None
        fixed.mkdir(exist_ok=True)
        kept = sorted((p for p in fixed.glob("*.json") if not p.is_symlink()), key=lambda p: _sequence(p.name))
        for same in [p for p in kept if _unnumbered(p.name) == path.name]:  # the same failure fixed before
            same.unlink(missing_ok=True)
            kept.remove(same)
        number = max((_sequence(p.name) for p in kept), default=0) + 1
        moved = fixed / f"{number:06d}--{path.name}"
        os.replace(path, moved)
        for oldest in kept[: max(0, len(kept) + 1 - max(cap, 1))]:
            oldest.unlink(missing_ok=True)
        return moved

    def retire(self, key: str) -> list[Path]:
        """Move every stored failure of `key` to its fixed entries (the test passed); their new paths."""
        directory = self.directory(key)
        if not directory.is_dir() or directory.is_symlink():
            return []
        moved = [self.mark_fixed(path) for path in sorted(directory.glob("*.json"))]
        return [path for path in moved if path is not None]

    def reopen(self, path: Path) -> Path | None:
        """Move the fixed entry `path` (it fails again) back among its test's stored failures; returns
        its new path (None if `path` is no fixed entry of this database)."""
        if not self._fixed(path) or not path.is_file():
            return None
        back = path.parent.parent / _unnumbered(path.name)
        os.replace(path, back)
        return back

    def delete(self, path: Path) -> None:
        """Forget one entry, a failure or a fixed one."""
        if self._failure(path) or self._fixed(path):
            path.unlink(missing_ok=True)

    def clear(self, key: str, *, fixed: bool = False) -> None:
        """Forget every stored failure of `key`; with `fixed`, its fixed entries too, and its directory."""
        directory = self.directory(key)
        if not directory.is_dir() or directory.is_symlink():
            return
        for path in directory.glob("*.json"):
            path.unlink(missing_ok=True)
        kept = directory / FIXED
        if not fixed and kept.is_dir() and not kept.is_symlink() and any(kept.glob("*.json")):
            return
        if kept.is_symlink():
            kept.unlink()
        elif kept.is_dir():
            for path in kept.iterdir():
                path.unlink(missing_ok=True)
            kept.rmdir()
        for path in directory.iterdir():
            path.unlink(missing_ok=True)
        directory.rmdir()

    def _failure(self, path: Path) -> bool:
        return path.parent.parent == self.root and path.suffix == ".json"

    def _fixed(self, path: Path) -> bool:
        return path.parent.name == FIXED and path.parent.parent.parent == self.root and path.suffix == ".json"


def _read(directory: Path, trust: tuple[str, ...]) -> list[Entry]:
    """The reproducers of `directory`'s `*.json` files, by name; a bad one is ignored with a warning."""
    if not directory.is_dir() or directory.is_symlink():
        return []
    found = []
    for path in sorted(directory.glob("*.json")):
        if path.is_symlink() or not path.is_file():
            _ignore(path, "not a plain file")
            continue
        try:
            reproducer = loads(path.read_text(), str(path), path, trust=trust, own_scheduler=False)
        except (OSError, UnicodeDecodeError, ReproducerError) as exc:
            _ignore(path, str(exc).removeprefix(f"{path}: "))
            continue
        found.append(Entry(path, reproducer))
    return found


def _sequence(name: str) -> int:
    """A fixed entry's number (`000012--x.json` -> 12); 0 for a name without one."""
    number, separator, _ = name.partition("--")
    return int(number) if separator and number.isdigit() else 0


def _unnumbered(name: str) -> str:
    """A fixed entry's name as a stored failure (`000012--x.json` -> `x.json`)."""
    number, separator, rest = name.partition("--")
    return rest if separator and number.isdigit() else name


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)


def _ignore(path: Path, why: str) -> None:
    warnings.warn(HarnessDatabaseWarning(f"ignoring the stored failure {path}: {why}; delete it to silence this"),
                  stacklevel=5)


#: The database and the test key `check_scheduler` reads while pytest runs a test (set by the plugin).
_ACTIVE: ContextVar[tuple[ExampleDatabase, str] | None] = ContextVar("harness_example_db", default=None)


def active() -> tuple[ExampleDatabase, str] | None:
    """The database and the running test's key, when pytest with the harness plugin runs a test."""
    return _ACTIVE.get()


@contextmanager
def bound(database: ExampleDatabase | None, key: str) -> Iterator[None]:
    """Make `database`'s entries for `key` the ones `check_scheduler` replays first (None: none)."""
    token = _ACTIVE.set((database, key) if database is not None else None)
    try:
        yield
    finally:
        _ACTIVE.reset(token)
