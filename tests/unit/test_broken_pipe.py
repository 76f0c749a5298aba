"""`harness list scenarios | head -1`: a reader that goes away early is no harness bug (issue 14,
item 7): exit 0, nothing on stderr."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("args", [["list", "scenarios"], ["list", "tools"]])
def test_a_closed_pipe_exits_quietly(args: list[str]) -> None:
    child = subprocess.Popen([sys.executable, "-c", "from harness.cli import main; main()", *args],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # nobody reads: every write fails with EPIPE, as after `head -1` has exited
    with child.stderr:
        stderr = child.stderr.read()
    assert child.wait(timeout=60) == 0
    assert stderr == b""
