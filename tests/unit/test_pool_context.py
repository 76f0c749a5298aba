"""Worker pools start under a deep temporary directory too: the forkserver's Unix socket would not fit
there (exit 70, "AF_UNIX path too long", before), so workers are spawned instead."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from harness.distribute.workers import pool_context

ROOT = Path(__file__).resolve().parents[2]


def test_a_deep_temporary_directory_spawns_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    if "forkserver" not in __import__("multiprocessing").get_all_start_methods():
        pytest.skip("no forkserver here")
    assert pool_context().get_start_method() == "forkserver"
    monkeypatch.setattr(tempfile, "gettempdir", lambda: "/tmp/" + "d" * 90)
    assert pool_context().get_start_method() == "spawn"


def test_a_sweep_on_two_processes_under_a_deep_tmpdir(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 40)
    deep.mkdir(parents=True)
    done = subprocess.run([sys.executable, "-m", "harness", "sweep", "--scenarios", "config-clobber",
                           "--schedulers", "serial", "--runs", "4", "--processes", "2"], cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(deep)}, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stderr == "", done.stdout + done.stderr
