"""Fixtures shared by the bridge tests."""

from __future__ import annotations

import _thread
import concurrent.futures
import concurrent.futures._base
import gc
import queue
import threading
import time
from collections.abc import Iterator

import pytest

from harness.bridges.threads import turnstile
from harness.bridges.threads.turnstile import retire_parked


@pytest.fixture
def no_threads_left_and_quiet(capfd: pytest.CaptureFixture[str]) -> Iterator[None]:
    """The test leaves no thread behind (bare `_thread` threads included: `threading` does not see
    them), every patched primitive is the real one again, and nothing reached stderr. The bridge's
    parked OS threads (kept for the next bridge threads) are retired first: only a thread that did not
    end and park counts as left behind."""
    retire_parked()
    before = (threading.active_count(), _thread._count())  # type: ignore[attr-defined]
    yield
    retire_parked()
    assert (threading.active_count(), _thread._count()) == before  # type: ignore[attr-defined]
    assert threading.Lock is _thread.allocate_lock and time.sleep.__module__ == "time"
    assert queue.SimpleQueue.__module__ == "_queue" and concurrent.futures._base.Future is concurrent.futures.Future
    assert capfd.readouterr().err == ""


@pytest.fixture
def no_cycle_collector() -> Iterator[None]:
    """The cycle collector off for the test: what is left of a run after it is dropped is what
    reference counting alone failed to free."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.fixture
def os_carrier() -> Iterator[None]:
    """Bridge threads carried by OS threads for the test (greenlets carry them by default where they can)."""
    saved = turnstile._carrier[0]
    turnstile._carrier[0] = "os"
    try:
        yield
    finally:
        turnstile._carrier[0] = saved


@pytest.fixture(params=["greenlet", "os"])
def each_carrier(request: pytest.FixtureRequest) -> Iterator[str]:
    """The test once with each carrier of bridge threads (greenlets only where this Python allows them)."""
    saved = turnstile._carrier[0]
    if request.param == "greenlet":
        turnstile._carrier[0] = None
        if turnstile.carrier() != "greenlet":
            turnstile._carrier[0] = saved
            pytest.skip("greenlets cannot carry bridge threads here (no greenlet, or Python 3.13+)")
    turnstile._carrier[0] = request.param
    try:
        yield request.param
    finally:
        turnstile._carrier[0] = saved
