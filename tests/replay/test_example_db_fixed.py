"""The example database keeps failures that pass now in the test's fixed/ folder, capped, oldest dropped."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import pytest

from harness import find_scenario, get_scheduler, run
from harness.reproducers.replay import Reproducer, reproducer_of
from harness.testing.example_db import FIXED, ExampleDatabase, HarnessDatabaseWarning

KEY = "tests/test_policy.py::test_mine"


@pytest.fixture(scope="module")
def reproducer() -> Reproducer:
    result = run(find_scenario("config-clobber"), get_scheduler("parallel"), 1)
    return reproducer_of(result, "parallel", "lost-update", "serializability", "test")


def _variant(reproducer: Reproducer, n: int) -> Reproducer:
    """Another stored failure (another name): the fingerprint is part of the file's name."""
    return dataclasses.replace(reproducer, fingerprint=f"{n:012d}" + reproducer.fingerprint[12:])


def test_a_failure_that_passes_moves_to_fixed_and_is_listed(tmp_path: Path, reproducer: Reproducer) -> None:
    db = ExampleDatabase.in_rootdir(tmp_path)
    stored = db.save(KEY, reproducer, version="t")
    moved = db.mark_fixed(stored)
    assert moved is not None and moved.parent == db.directory(KEY) / FIXED
    assert moved.name == f"000001--{stored.name}" and not stored.exists()
    assert db.entries(KEY) == [] and db.count() == 0 and db.count(fixed=True) == 1
    (entry,) = db.fixed(KEY)
    assert entry.path == moved and entry.reproducer.fingerprint == reproducer.fingerprint
    # It fails again: reopened among the failures (the lead's check reports it as a regression).
    back = db.reopen(moved)
    assert back == stored and back.is_file() and db.fixed(KEY) == []
    assert db.reopen(back) is None  # a failure is no fixed entry


def test_the_fixed_area_is_capped_oldest_dropped_and_one_failure_is_one_entry(tmp_path: Path,
                                                                             reproducer: Reproducer) -> None:
    db = ExampleDatabase.in_rootdir(tmp_path)
    for n in range(5):
        db.mark_fixed(db.save(KEY, _variant(reproducer, n), version="t"), cap=3)
    kept = db.fixed(KEY)
    assert [e.reproducer.fingerprint[:12] for e in kept] == ["000000000002", "000000000003", "000000000004"]
    assert [e.path.name[:6] for e in kept] == ["000003", "000004", "000005"]
    # The same failure fixed again replaces its older entry and becomes the newest.
    db.mark_fixed(db.save(KEY, _variant(reproducer, 2), version="t"), cap=3)
    assert [e.reproducer.fingerprint[:12] for e in db.fixed(KEY)] == ["000000000003", "000000000004",
                                                                       "000000000002"]


def test_retire_moves_every_failure_and_clear_keeps_the_fixed_ones(tmp_path: Path, reproducer: Reproducer) -> None:
    db = ExampleDatabase.in_rootdir(tmp_path)
    for n in range(2):
        db.save(KEY, _variant(reproducer, n), version="t")
    assert len(db.retire(KEY)) == 2 and db.entries(KEY) == [] and len(db.fixed(KEY)) == 2
    db.save(KEY, _variant(reproducer, 9), version="t")
    db.clear(KEY)  # what the plugin does when the test passes: the failures go, the fixed stay
    assert db.entries(KEY) == [] and len(db.fixed(KEY)) == 2
    assert (db.directory(KEY) / "test").read_text() == KEY + "\n"
    db.delete(db.fixed(KEY)[0].path)
    assert len(db.fixed(KEY)) == 1
    db.clear(KEY, fixed=True)
    assert not db.directory(KEY).exists()
    db.save(KEY, reproducer, version="t")
    db.clear(KEY)  # nothing fixed: the directory goes, as before
    assert not db.directory(KEY).exists()


def test_paths_outside_the_database_are_never_moved(tmp_path: Path, reproducer: Reproducer) -> None:
    db = ExampleDatabase.in_rootdir(tmp_path / "root")
    elsewhere = tmp_path / "x.json"
    elsewhere.write_text("{}")
    assert db.mark_fixed(elsewhere) is None and elsewhere.exists()
    db.delete(elsewhere)
    assert elsewhere.exists()


def test_a_corrupted_fixed_entry_is_ignored_with_a_warning(tmp_path: Path, reproducer: Reproducer) -> None:
    db = ExampleDatabase.in_rootdir(tmp_path)
    moved = db.mark_fixed(db.save(KEY, reproducer, version="t"))
    assert moved is not None
    moved.write_text("{not json")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert db.fixed(KEY) == []
    assert [type(w.message) for w in caught] == [HarnessDatabaseWarning]
    assert "ignoring the stored failure" in str(caught[0].message)
