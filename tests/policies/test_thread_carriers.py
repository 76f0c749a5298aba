"""Greenlets or OS threads carry from_threads' bridge threads, and bridged code cannot tell which.

With greenlets (the default where the thread-state dict holds `threading.local` data: 3.11, 3.12) every
bridge thread runs on the harness's own OS thread; with OS threads (`HARNESS_THREAD_CARRIER=os`, 3.13)
each has one of its own. Each test runs under both carriers and shows what must look per-thread does:
`threading.local` (a library's, made before the run, and one made inside it), `contextvars`,
`threading.get_ident()` / `current_thread()`, asyncio's running loop (two threads each inside their
own `asyncio.run` at once); that fingerprints are the same; that a run leaves nothing alive; and that a
thread that spins under `except Exception`, or blocks in a real lock, is stopped by the wall-clock
watchdog as the harness's own code would be.
"""

from __future__ import annotations

import _thread
import asyncio
import concurrent.futures
import contextvars
import gc
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import simpy

from harness import find_scenario, run
from harness.bridges.threads import from_threads, turnstile
from harness.run import RunStatus

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.usefixtures("no_threads_left_and_quiet")

#: Made at import, before any run, as a library's module-level state.
_library_local = threading.local()
_library_var: contextvars.ContextVar[str] = contextvars.ContextVar("_library_var", default="unset")


def _pool(tool_calls: list[Any], run_tool: Any) -> list[Any]:
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(run_tool, tc) for tc in tool_calls]
    return [{"id": tc.id, "result": future.result()} for tc, future in zip(tool_calls, futures, strict=True)]


def test_the_carrier_is_the_one_asked_for(each_carrier: str) -> None:
    seen: list[bool] = []

    def execute(tool_calls: list[Any], run_tool: Any) -> list[Any]:
        seen.append(turnstile.current() is not None and turnstile.current().turnstile.green)  # type: ignore[union-attr]
        return [run_tool(tc) for tc in tool_calls]

    run(find_scenario("incident-triage"), from_threads(execute), seed=1)
    assert seen == [each_carrier == "greenlet"]


def test_thread_local_state_is_each_threads_own(each_carrier: str) -> None:
    seen: list[tuple[str, Any, Any, Any]] = []

    def execute(tool_calls: list[Any], run_tool: Any) -> list[Any]:
        inside = threading.local()
        barrier = threading.Barrier(3)

        def worker(mark: str) -> None:
            before = (getattr(_library_local, "mark", None), getattr(inside, "mark", None), _library_var.get())
            _library_local.mark = inside.mark = mark
            _library_var.set(mark)
            barrier.wait()  # all three alive at once, each having set its own state
            time.sleep(1)  # and switched away and back
            seen.append((mark, before, (_library_local.mark, inside.mark, _library_var.get()),
                         (threading.get_ident(), threading.current_thread().ident, threading.current_thread().name)))

        threads = [threading.Thread(target=worker, args=(f"w{i}",), name=f"w{i}") for i in range(2)]
        for thread in threads:
            thread.start()
        worker("main")
        for thread in threads:
            thread.join()
        return [run_tool(tc) for tc in tool_calls]

    result = run(find_scenario("incident-triage"), from_threads(execute), seed=1)
    assert result.status is RunStatus.COMPLETED
    assert sorted(mark for mark, *_ in seen) == ["main", "w0", "w1"]
    for mark, before, after, (ident, thread_ident, name) in seen:
        assert before == (None, None, "unset") and after == (mark, mark, mark)
        assert ident == thread_ident and name == ("MainThread" if mark == "main" else mark)
    assert len({ident for *_, (ident, _, _) in seen}) == 3
    # The test's own thread kept its state (greenlets ran on it).
    assert getattr(_library_local, "mark", None) is None and _library_var.get() == "unset"


def test_each_thread_has_its_own_running_asyncio_loop(each_carrier: str) -> None:
    seen: list[tuple[str, bool]] = []

    def execute(tool_calls: list[Any], run_tool: Any) -> list[Any]:
        def worker(mark: str) -> None:
            async def inside() -> None:
                loop = asyncio.get_running_loop()
                time.sleep(1)  # blocks this thread (and its loop) in virtual time: the other thread runs
                seen.append((mark, asyncio.get_running_loop() is loop))

            asyncio.run(inside())

        other = threading.Thread(target=worker, args=("other",))
        other.start()
        worker("main")
        other.join()
        return [run_tool(tc) for tc in tool_calls]

    outer = asyncio.events._get_running_loop()
    result = run(find_scenario("incident-triage"), from_threads(execute), seed=1)
    assert result.status is RunStatus.COMPLETED, result.error
    assert sorted(seen) == [("main", True), ("other", True)]
    assert asyncio.events._get_running_loop() is outer  # the test's thread: none, as before the run


def test_a_thread_without_a_loop_sees_none_while_others_wait_inside_theirs(each_carrier: str) -> None:
    """asyncio caches the running loop per OS thread: a greenlet switch must not leak one thread's
    loop to another, before, while or after the others run theirs (also across runs)."""
    seen: list[tuple[str, Any]] = []
    get = asyncio.events._get_running_loop

    def execute(tool_calls: list[Any], run_tool: Any) -> list[Any]:
        def with_loop(mark: str) -> None:
            async def inside() -> None:
                time.sleep(1)  # parked inside its running loop: the others run meanwhile
                seen.append((mark, asyncio.get_running_loop() is not None))

            seen.append((mark + " before", get()))
            asyncio.run(inside())
            seen.append((mark + " after", get()))

        def without_loop() -> None:
            for step in range(3):
                time.sleep(0.4)
                seen.append((f"plain {step}", get()))

        threads = [threading.Thread(target=with_loop, args=("a",)), threading.Thread(target=without_loop),
                   threading.Thread(target=with_loop, args=("b",))]
        for thread in threads:
            thread.start()
        seen.append(("main", get()))
        for thread in threads:
            thread.join()
        seen.append(("main end", get()))
        return [run_tool(tc) for tc in tool_calls]

    for seed in (1, 2):
        seen.clear()
        result = run(find_scenario("incident-triage"), from_threads(execute), seed=seed)
        assert result.status is RunStatus.COMPLETED, result.error
        assert sorted(seen, key=lambda s: s[0]) == [
            ("a", True), ("a after", None), ("a before", None), ("b", True), ("b after", None),
            ("b before", None), ("main", None), ("main end", None), ("plain 0", None), ("plain 1", None),
            ("plain 2", None)]
    assert get() is None


def test_both_carriers_give_the_same_fingerprints() -> None:
    fingerprints: dict[str, list[str]] = {}
    saved = turnstile._carrier[0]
    try:
        for carrier in ("greenlet", "os"):
            turnstile._carrier[0] = carrier
            fingerprints[carrier] = [run(find_scenario(name), from_threads(_pool), seed=seed).fingerprint
                                     for name in ("incident-triage", "ops-approvals") for seed in (1, 7)]
    finally:
        turnstile._carrier[0] = saved
    assert fingerprints["greenlet"] == fingerprints["os"]


def test_no_run_is_kept_alive_by_a_carrier(each_carrier: str) -> None:
    gc.collect()
    before = sum(isinstance(o, simpy.Environment) for o in gc.get_objects())
    for seed in (1, 2):
        run(find_scenario("incident-triage"), from_threads(_pool), seed=seed)
    gc.collect()
    assert sum(isinstance(o, simpy.Environment) for o in gc.get_objects()) == before


_STOPPED = """
import _thread, signal, sys, threading
from harness import find_scenario, run
from harness.bridges.threads import from_threads
from harness.run import WallClockExceeded

real = {"lock": _thread.allocate_lock()}  # made before any run: a real lock, never bridged

def swallows(tool_calls, run_tool):
    while True:  # spins, and swallows whatever it is interrupted with
        try:
            sum(range(100))
        except Exception:
            pass

def blocks(tool_calls, run_tool):
    def holder():
        real["lock"].acquire()
        threading.Event().wait()  # parks holding the real lock
    threading.Thread(target=holder).start()
    threading.Event().wait(0.001)  # the holder runs
    real["lock"].acquire()  # blocks for real: no other thread can release it

def wall_timeout(*_):
    raise WallClockExceeded("wall clock")  # as harness run --wall-timeout does

signal.signal(signal.SIGALRM, wall_timeout)
for executor in (swallows, blocks):
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    print(run(find_scenario("incident-triage"), from_threads(executor), seed=1).status.value, flush=True)
"""


def test_the_watchdog_stops_a_thread_that_swallows_exceptions_or_blocks_for_real(each_carrier: str) -> None:
    done = subprocess.run([sys.executable, "-c", _STOPPED], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "HARNESS_THREAD_CARRIER": each_carrier})
    assert (done.returncode, done.stdout.split(), done.stderr) == (0, ["hang", "hang"], "")


def test_an_unknown_carrier_name_means_os_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    saved = turnstile._carrier[0]
    try:
        turnstile._carrier[0] = None
        monkeypatch.setenv("HARNESS_THREAD_CARRIER", "os")
        assert turnstile.carrier() == "os"
    finally:
        turnstile._carrier[0] = saved


def test_the_real_ident_is_untouched_outside_bridge_threads() -> None:
    seen: list[int] = []

    def execute(tool_calls: list[Any], run_tool: Any) -> list[Any]:
        seen.append(threading.get_ident())
        return [run_tool(tc) for tc in tool_calls]

    run(find_scenario("incident-triage"), from_threads(execute), seed=1)
    assert seen == [1000] and threading.get_ident() == _thread.get_ident() != 1000


def _chain_of_threads(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
    """A thread per call, started one after another, and a main thread polling once a second."""
    out: dict[str, Any] = {}
    stop = threading.Event()

    def work(tc: Any) -> None:
        out[tc.id] = tools(tc)

    for tc in tool_calls:
        threading.Thread(target=work, args=(tc,)).start()
    while not stop.wait(timeout=1) and len(out) < len(tool_calls):
        pass
    return [{"tool_call_id": tc.id, "content": out[tc.id]} for tc in tool_calls]


def test_a_hundred_threads_started_in_a_chain_finish_and_replay_on_either_carrier(each_carrier: str) -> None:
    """A greenlet starts at the recursion depth of whoever first switches into it: carriers made by
    threads handing the baton on, each deep in its body, got deeper down the chain until the bridge's own
    code met the recursion limit (99 threads: 96 calls started, then a hang where OS threads finish in
    2,000 ms), and a parked carrier kept its depth into later runs (fanout-100 gave one fingerprint on a
    process's first run and another on the next)."""
    from tests.helpers import scenario

    sc = scenario([(f"c{i}", "web_search", {"query": f"q{i}"}) for i in range(99)],
                  tools={"web_search": {"latency": {"fixed": 1000}}})
    executor = from_threads(_chain_of_threads)
    first = run(sc, executor, 7)
    assert first.status is RunStatus.COMPLETED and first.makespan_ms == 2000
    assert sum(1 for event in first.trace if event["ev"] == "start") == 99
    fanout = [run(find_scenario("fanout-100"), executor, 7) for _ in range(3)]
    assert {result.fingerprint for result in fanout} == {fanout[0].fingerprint}
    assert fanout[0].status is RunStatus.COMPLETED and fanout[0].makespan_ms == 3000
