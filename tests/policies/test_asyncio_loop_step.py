"""The virtual loop's two ways of stepping: its lean iteration (in `VirtualLoop.run_ready`, a trimmed copy of
CPython's `BaseEventLoop._run_once`, used only on the versions it was checked against) and the stock
`_run_once`. Both must run the same handles in the same order at the same virtual times, so every bridged
run is the same on either path; the bridge's own tests also pass on the stock path."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from harness import find_scenario, run
from harness.bridges import from_asyncio
from harness.bridges.asyncio import loop as loops
from harness.bridges.asyncio.loop import VirtualLoop
from tests.policies.test_asyncio_bridge import GATHER, WAIT, as_completed_executor

ROOT = Path(__file__).resolve().parents[2]

#: The asyncio bridge's own tests, run again on the stock path by `test_the_bridge_tests_pass_on_the_stock_path`.
BRIDGE_TESTS = ("test_asyncio_adapter.py", "test_asyncio_bridge.py", "test_asyncio_orphans.py",
                "test_asyncio_run_memory.py", "test_asyncio_start_order.py", "test_blocking_on_loop.py",
                "test_bridges_approval_wait.py", "test_bridges_crew.py", "test_seed003_executor.py",
                "test_sync_tools_in_asyncio.py", "test_machine.py")


@pytest.fixture(params=["lean", "stock"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test on each stepping path (the lean one only where this Python has it)."""
    if request.param == "lean" and not loops.lean:
        pytest.skip(f"no lean iteration on Python {sys.version_info[:2]}: the stock path is the only one")
    monkeypatch.setattr(loops, "lean", request.param == "lean")
    return str(request.param)


# -- handle by handle ---------------------------------------------------------------------------------


Program = Callable[[asyncio.AbstractEventLoop, list[str]], Coroutine[Any, Any, None]]


async def _timers_and_cancellations(loop: asyncio.AbstractEventLoop, log: list[str]) -> None:
    """Enough cancelled timers (over 100, most of them cancelled) for `_run_once` to rebuild its heap,
    interleaved with timers that fire, at equal and different times."""
    handles = [loop.call_later(i % 7 / 1000 + 0.002, log.append, f"timer {i}") for i in range(240)]
    for i, handle in enumerate(handles):
        if i % 5:
            handle.cancel()
    loop.call_soon(log.append, "soon")
    await asyncio.sleep(0.004)
    log.append("woke")
    for i in range(3):  # cancelled at the head of the heap: popped one by one
        loop.call_later(0.001, log.append, f"late {i}").cancel()
    await asyncio.sleep(0.003)
    log.append("done")


async def _tasks_and_errors(loop: asyncio.AbstractEventLoop, log: list[str]) -> None:
    """Tasks that sleep, time out, fail and are cancelled; a callback that raises."""
    async def worker(n: int) -> int:
        log.append(f"start {n}")
        await asyncio.sleep(n / 1000)
        log.append(f"end {n}")
        if n == 3:
            raise ValueError("three")
        return n

    def raises() -> None:
        log.append("raising")
        raise RuntimeError("in a callback")

    loop.call_soon(raises)
    results = await asyncio.gather(*(worker(n) for n in (5, 1, 3, 1, 0)), return_exceptions=True)
    log.append(repr(results))
    try:
        await asyncio.wait_for(worker(50), timeout=0.01)
    except TimeoutError:
        log.append("timed out")
    slow = asyncio.ensure_future(worker(40))
    await asyncio.sleep(0)
    slow.cancel()
    done, pending = await asyncio.wait([slow, asyncio.ensure_future(worker(2))])
    log.append(f"{len(done)} done, {len(pending)} pending, cancelled {slow.cancelled()}")
    queue: asyncio.Queue[int] = asyncio.Queue()

    async def producer() -> None:
        for i in range(4):
            await queue.put(i)
            await asyncio.sleep(0.0015)

    async def consumer() -> None:
        for _ in range(4):
            log.append(f"got {await queue.get()} at {loop.time():.4f}")

    await asyncio.gather(producer(), consumer())


def _step_through(program: Program) -> list[str]:
    """Run `program` on a virtual loop to its end, as the bridge's pump does: the ready handles, then
    the clock moved to the next timer; every handle's effect logged with the virtual time it ran at."""
    loop = VirtualLoop()
    now = [0]
    loop._now_ms = lambda: now[0]
    log: list[str] = []
    errors: list[str] = []
    loop.on_error = errors.append
    try:
        main = loop.create_task(program(loop, log))
        for _ in range(10_000):
            loop.run_ready()
            log.append(f"-- {now[0]} ms")
            due = loop.next_timer_ms()
            if main.done() and due is None:
                break
            assert due is not None, "the program waits on nothing"
            now[0] = max(due, now[0])
        assert main.done() and main.exception() is None
        return log + errors
    finally:
        loop.reclaim()
        loop.close()


@pytest.mark.parametrize("program", [_timers_and_cancellations, _tasks_and_errors])
def test_the_lean_iteration_runs_what_run_once_runs(program: Program, monkeypatch: pytest.MonkeyPatch) -> None:
    if not loops.lean:
        pytest.skip(f"no lean iteration on Python {sys.version_info[:2]}")
    lean = _step_through(program)
    monkeypatch.setattr(loops, "lean", False)
    stock = _step_through(program)
    assert lean == stock
    assert len(lean) > 20
    if program is _tasks_and_errors:  # the failing callback ran, and its error reached the run's handler
        assert "raising" in lean and any("in a callback" in line for line in lean)


def test_the_lean_iteration_is_used_only_where_it_was_checked() -> None:
    assert loops.lean == (sys.version_info[:2] in loops.LEAN_VERSIONS)
    # The stock method is asyncio's own (the bridge steps it on the other path): not overridden here.
    assert "_run_once" not in vars(VirtualLoop)


def test_a_debug_loop_steps_with_run_once() -> None:
    calls: list[str] = []
    loop = VirtualLoop()
    loop.set_debug(True)
    real = loop._run_once

    def counted() -> None:
        calls.append("run_once")
        real()

    loop._run_once = counted  # type: ignore[method-assign]
    loop.call_soon(calls.append, "handle")
    try:
        loop.run_ready()
    finally:
        loop.reclaim()
        loop.close()
    assert calls == ["run_once", "handle"]


# -- whole runs -----------------------------------------------------------------------------------------


AS_COMPLETED = from_asyncio(as_completed_executor, name="as_completed")


@pytest.mark.parametrize(("scenario", "scheduler", "seed"), [
    ("code-review", GATHER, 7), ("fanout-100", WAIT, 3), ("incident-triage", AS_COMPLETED, 5),
    ("interrupt-midbatch", GATHER, 1), ("interrupt-midbatch", WAIT, 2)])
def test_a_bridged_run_is_the_same_on_both_paths(path: str, scenario: str, scheduler: Any, seed: int,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    sc = find_scenario(scenario)
    here = run(sc, scheduler, seed)
    monkeypatch.setattr(loops, "lean", path != "lean")
    other = run(sc, scheduler, seed)
    assert (here.fingerprint, here.status, here.makespan_ms) == (other.fingerprint, other.status, other.makespan_ms)


@pytest.mark.slow
def test_the_bridge_tests_pass_on_the_stock_path() -> None:
    script = ("import sys, pytest\n"
              "from harness.bridges.asyncio import loop\n"
              "loop.lean = False\n"
              "sys.exit(pytest.main(sys.argv[1:]))\n")
    files = [str(Path(__file__).parent / name) for name in BRIDGE_TESTS]
    done = subprocess.run([sys.executable, "-c", script, "-q", "-x", "-p", "no:cacheprovider", *files], cwd=ROOT,
                          env={**os.environ, "PYTHONHASHSEED": "0"}, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout
