"""The local example database: failures `check_scheduler` found under pytest, replayed first next time.

Owns the layout of `.harness/examples/` in a pytest rootdir (one directory per test node id, named by
a hash of it, holding one reproducer file per stored failure and a `test` file naming the node id),
reading it (a corrupted, unreadable or symlinked entry is ignored with a `HarnessDatabaseWarning`,
never an error) and writing it (atomically, never outside the root it was opened on), and the
binding of the current test's entries while pytest runs it. Like Hypothesis's example database: the
pytest plugin saves a failure when a test fails with `SchedulerCheckFailed`, `check_scheduler` replays
that test's stored failures before it explores and deletes those that now pass, and the plugin
deletes a test's entries when the test passes. It never explores and never decides a verdict.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from harness.replay import Reproducer, ReproducerError, loads, to_json

#: The database's directory under the rootdir, and the examples' under it.
DIRECTORY = ".harness"
EXAMPLES = "examples"


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
        directory = self.directory(key)
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

    def count(self) -> int:
        """How many entries are stored, for every test."""
        return sum(1 for _ in self.root.glob("*/*.json")) if self.root.is_dir() else 0

    def save(self, key: str, reproducer: Reproducer, *, version: str) -> Path:
        """Store `reproducer` for `key` (atomically; the same failure twice is one file)."""
        directory = self.directory(key)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "test").write_text(key + "\n")
        name = "--".join((_safe(reproducer.scenario.name)[:60], _safe(reproducer.label)[:40],
                          reproducer.fingerprint[:12])) + ".json"
        path = directory / name
        descriptor, temporary = tempfile.mkstemp(dir=directory, suffix=".tmp")
        try:
            with os.fdopen(descriptor, "w") as file:
                file.write(to_json(reproducer, version=version))
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        return path

    def delete(self, path: Path) -> None:
        """Forget one entry."""
        if path.parent.parent == self.root:
            path.unlink(missing_ok=True)

    def clear(self, key: str) -> None:
        """Forget every entry of `key`."""
        directory = self.directory(key)
        if directory.is_dir() and not directory.is_symlink():
            for path in directory.iterdir():
                path.unlink(missing_ok=True)
            directory.rmdir()


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)


def _ignore(path: Path, why: str) -> None:
    warnings.warn(HarnessDatabaseWarning(f"ignoring the stored failure {path}: {why}; delete it to silence this"),
                  stacklevel=4)


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
