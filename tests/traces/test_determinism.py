"""Importing the same export gives the same bytes in another process and under another hash seed:
nothing in the import depends on set order, `id()` or the wall clock."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("scipy")


def test_import_is_byte_identical_across_processes_and_hash_seeds() -> None:
    outputs = []
    for hash_seed in ("0", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run([sys.executable, "-m", "harness", "traces", "import", "--sample", "--keep-arguments"],
                              capture_output=True, env=env, check=True)
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] and len(outputs[0]) > 10_000
