"""Outside a bridged run, `threading`, `time`, `queue` and `concurrent.futures` are the real ones (issue 24).

The thread bridge's patches decide per call: bridged in a bridge thread, real anywhere else. These
tests use the real modules as a user's process would, next to `from_threads` runs: in the same process
after a run (a real pool on real OS threads, a real `time.sleep` taking real time, the process's own
pool counter), and from another real OS thread while a run is open on the main thread (the patches
are in place then, and must not reach it). Each is run with both carriers of bridge threads.
"""

from __future__ import annotations

import _thread
import concurrent.futures
import queue
import threading
import time
from typing import Any

import pytest

from harness import find_scenario, run
from harness.bridges.threads import from_threads
from harness.run import RunStatus

pytestmark = pytest.mark.usefixtures("no_threads_left_and_quiet")

#: The real primitives, read at import (before any patch): what the tests compare against. In a dict,
#: not as globals: the bridge points the executor module's globals that hold them at the bridged ones.
REAL: dict[str, Any] = {"Thread": threading.Thread, "monotonic": time.monotonic, "sleep": time.sleep,
                        "get_ident": _thread.get_ident, "lock": _thread.allocate_lock}


def pooled(tool_calls: list[Any], run_tool: Any) -> list[dict[str, Any]]:
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(run_tool, tc) for tc in tool_calls]
    return [{"tool_call_id": tc.id, "content": f.result()} for tc, f in zip(tool_calls, futures, strict=True)]


def real_work(seen: dict[str, Any]) -> None:
    """What a thread of no run does: a real pool on real OS threads, real sleeps, real clocks."""
    main_ident = REAL["get_ident"]()

    def job(i: int) -> tuple[int, bool, str]:
        time.sleep(0.01)
        thread = threading.current_thread()
        return REAL["get_ident"](), isinstance(thread, REAL["Thread"]), thread.name

    start = REAL["monotonic"]()
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        jobs = list(pool.map(job, range(4)))
        seen["prefix"] = pool._thread_name_prefix  # type: ignore[attr-defined]
    time.sleep(0.05)
    seen["slept_s"] = REAL["monotonic"]() - start
    seen["monotonic_gap_s"] = abs(time.monotonic() - REAL["monotonic"]())
    seen["idents"] = {ident for ident, _, _ in jobs}
    seen["main_ident"] = main_ident
    seen["real_threads"] = all(real for _, real, _ in jobs)
    seen["names"] = sorted({name for _, _, name in jobs})
    event, lock, simple = threading.Event(), threading.Lock(), queue.SimpleQueue()
    seen["event_times_out"] = event.wait(0.01) is False
    seen["lock"] = type(lock) is type(REAL["lock"]()) and lock.acquire(timeout=0.01)
    simple.put(1)
    seen["queue"] = type(simple).__module__ == "_queue" and simple.get(timeout=0.01) == 1
    seen["ident"] = threading.get_ident() == REAL["get_ident"]()


def assert_real(seen: dict[str, Any]) -> None:
    assert seen["slept_s"] >= 0.05 + 0.01  # two rounds of 10 ms jobs on 2 workers, then 50 ms: real time
    assert seen["monotonic_gap_s"] < 1.0  # the real clock, not the run's virtual one
    assert seen["real_threads"] and seen["main_ident"] not in seen["idents"] and 1 <= len(seen["idents"]) <= 2
    assert all(name.startswith(seen["prefix"] + "_") for name in seen["names"])
    assert seen["event_times_out"] and seen["lock"] and seen["queue"] and seen["ident"]


def test_the_real_modules_after_a_bridged_run(each_carrier: str) -> None:
    assert run(find_scenario("incident-triage"), from_threads(pooled), 3).status is RunStatus.COMPLETED
    before = concurrent.futures.ThreadPoolExecutor()._thread_name_prefix  # type: ignore[attr-defined]
    seen: dict[str, Any] = {}
    real_work(seen)
    assert_real(seen)
    # The process's own pool counter moved on by one pool (the one `real_work` made), not by the run's.
    assert int(seen["prefix"].rsplit("-", 1)[1]) == int(before.rsplit("-", 1)[1]) + 1


def test_the_real_modules_on_another_thread_while_a_run_is_open(each_carrier: str) -> None:
    """A real thread started before the run does its real work while the executor, in a bridge thread
    on the main thread, waits for it on a real lock (a blocking call the bridge does not see)."""
    go, done = REAL["lock"](), REAL["lock"]()
    go.acquire()
    done.acquire()
    seen: dict[str, Any] = {}

    def helper() -> None:
        go.acquire()
        try:
            real_work(seen)
        finally:
            done.release()

    def execute(tool_calls: list[Any], run_tool: Any, *, waits: bool = True) -> list[dict[str, Any]]:
        results = pooled(tool_calls[:1], run_tool)
        if waits:
            go.release()  # the patches are in place now: the helper works while this run is open
            done.acquire()
            seen["bridged_sleep"] = time.sleep is not REAL["sleep"]
        return results + pooled(tool_calls[1:], run_tool)

    def alone(tool_calls: list[Any], run_tool: Any) -> list[dict[str, Any]]:
        return execute(tool_calls, run_tool, waits=False)

    other = REAL["Thread"](target=helper)
    other.start()
    try:
        result = run(find_scenario("incident-triage"), from_threads(execute, name="split"), 3)
    finally:
        go.release() if go.locked() else None
        other.join(5)
    assert result.status is RunStatus.COMPLETED, result.error
    assert seen["bridged_sleep"]  # the run was open, its patches in place, while the helper worked
    assert_real(seen)
    # The helper's real work took no virtual time: the run is the one it is without it.
    assert result.fingerprint == run(find_scenario("incident-triage"), from_threads(alone, name="split"), 3).fingerprint
