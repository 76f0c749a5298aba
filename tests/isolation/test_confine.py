"""The disk guard's reading of audit events, called directly (the hook itself is never installed in
the test process: an audit hook cannot be removed). What it refuses, it records."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.isolation.confine import REFUSED, DiskGuard


@pytest.fixture
def guard(tmp_path: Path) -> DiskGuard:
    root = tmp_path / "private"
    root.mkdir()
    made = DiskGuard(str(root))
    made.armed = True
    return made


def _refused(guard: DiskGuard, event: str, *args: object) -> bool:
    try:
        guard._hook(event, args)
    except PermissionError as exc:
        assert str(exc).startswith(REFUSED)
        return True
    return False


def test_reads_and_private_writes_pass(guard: DiskGuard, tmp_path: Path) -> None:
    inside = os.path.join(guard.root, "scratch.txt")
    assert not _refused(guard, "open", "/etc/hostname", "r", os.O_RDONLY)
    assert not _refused(guard, "open", inside, "w", os.O_WRONLY | os.O_CREAT)
    assert not _refused(guard, "open", inside, None, os.O_WRONLY | os.O_CREAT)
    assert not _refused(guard, "open", "/dev/null", "w", os.O_WRONLY)
    assert not _refused(guard, "open", 5, "w", os.O_WRONLY)  # a descriptor already open
    assert not _refused(guard, "sqlite3.connect", ":memory:")
    assert not _refused(guard, "os.remove", inside, -1)
    assert guard.refused == []


def test_writes_outside_and_processes_are_refused_and_recorded(guard: DiskGuard, tmp_path: Path) -> None:
    outside = str(tmp_path / "outside.txt")
    assert _refused(guard, "open", outside, "a", os.O_WRONLY | os.O_APPEND)
    assert _refused(guard, "open", outside, None, os.O_RDWR)
    assert _refused(guard, "open", "relative.txt", None, os.O_WRONLY | os.O_CREAT)  # dir_fd unknown
    assert _refused(guard, "sqlite3.connect", outside)
    assert _refused(guard, "os.rename", os.path.join(guard.root, "a"), outside, -1, -1)
    assert _refused(guard, "os.remove", "x", 7)  # relative to a directory descriptor
    assert _refused(guard, "os.mkdir", os.path.join(guard.root, "d"), 0o777, 3)
    assert _refused(guard, "os.system", b"true")
    assert _refused(guard, "os.fork")
    assert _refused(guard, "subprocess.Popen", "ls", ["ls"], None, None)
    assert len(guard.refused) == 10 and guard.refused[0] == f"writing {outside}"


def test_a_symlink_out_of_the_private_directory_is_outside(guard: DiskGuard, tmp_path: Path) -> None:
    (Path(guard.root) / "out").symlink_to(tmp_path)
    assert _refused(guard, "open", os.path.join(guard.root, "out", "x.txt"), "w", os.O_WRONLY)


def test_an_unarmed_guard_lets_everything_pass(guard: DiskGuard, tmp_path: Path) -> None:
    guard.armed = False
    assert not _refused(guard, "os.system", b"true")
