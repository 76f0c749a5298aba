"""Fixtures shared by the bridge tests."""

from __future__ import annotations

import _thread
import concurrent.futures
import concurrent.futures._base
import queue
import threading
import time
from collections.abc import Iterator

import pytest


@pytest.fixture
def no_threads_left_and_quiet(capfd: pytest.CaptureFixture[str]) -> Iterator[None]:
    """The test leaves no thread behind (bare `_thread` threads included: `threading` does not see
    them), every patched primitive is the real one again, and nothing reached stderr."""
    before = (threading.active_count(), _thread._count())  # type: ignore[attr-defined]
    yield
    assert (threading.active_count(), _thread._count()) == before  # type: ignore[attr-defined]
    assert threading.Lock is _thread.allocate_lock and time.sleep.__module__ == "time"
    assert queue.SimpleQueue.__module__ == "_queue" and concurrent.futures._base.Future is concurrent.futures.Future
    assert capfd.readouterr().err == ""
