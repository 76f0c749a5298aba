"""from_threads on OS threads reuses parked ones, and bridged code still sees every thread as a fresh one.

With the OS-thread carrier (`HARNESS_THREAD_CARRIER=os`, or where greenlets cannot carry bridge
threads), a bridge thread runs on a parked OS thread of the bridge's when one is free (starting an OS
thread costs more than a whole baton pass). Each test here first shows that the OS thread was indeed
reused (the same real OS ident, `_thread.get_ident` read before any patch, in two bridge threads), so
none can pass without reuse, then that the reuse is invisible: `threading.local` data (of a local
made before the run, as a library's, and of one made inside it), `contextvars` values,
`current_thread()`; and that a thread which never ends is never handed to another.
"""

from __future__ import annotations

import _thread
import contextvars
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from harness import find_scenario, run
from harness.bridges.threads import from_threads
from harness.bridges.threads.turnstile import retire_parked
from harness.run import RunStatus

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.usefixtures("no_threads_left_and_quiet", "os_carrier"),
    # 3.13 keeps `threading.local` data out of the thread-state dict: no OS thread is reused there.
    pytest.mark.skipif(sys.version_info >= (3, 13), reason="OS threads are reused on 3.11 and 3.12 only"),
]

#: The real OS thread ident (bridged code's `threading.get_ident()` is its bridge thread's), out of the
#: module's globals, where the bridge would point it at the bridged one as the executor's own import.
_REAL = {"os_ident": _thread.get_ident}


def _os_ident() -> int:
    return _REAL["os_ident"]()

#: Made at import, before any run, as a library's module-level local (asyncio's running loop is one).
_library_local = threading.local()
_library_var: contextvars.ContextVar[str] = contextvars.ContextVar("_library_var", default="unset")


def _seen_then_set(seen: list[dict[str, Any]], mark: str) -> None:
    """Record what this thread sees of the thread-local state, then leave state of its own behind."""
    seen.append({"ident": _os_ident(), "name": threading.current_thread().name,
                 "local": getattr(_library_local, "mark", None), "var": _library_var.get()})
    _library_local.mark = mark
    _library_var.set(mark)


def _executor(seen: list[dict[str, Any]]) -> Any:
    def execute(tool_calls: list[Any], run_tool: Any) -> list[Any]:
        _seen_then_set(seen, "main")
        worker = threading.Thread(target=_seen_then_set, args=(seen, "worker"), name="worker")
        worker.start()
        worker.join()
        return [{"id": tc.id, "result": run_tool(tc)} for tc in tool_calls]
    return execute


def test_a_reused_os_thread_starts_with_no_thread_local_data_and_an_empty_context() -> None:
    retire_parked()
    seen: list[dict[str, Any]] = []
    scheduler = from_threads(_executor(seen))
    for seed in (1, 2):
        assert run(find_scenario("incident-triage"), scheduler, seed=seed).status is RunStatus.COMPLETED
    first, second = {s["ident"] for s in seen[:2]}, {s["ident"] for s in seen[2:]}
    assert len(first) == 2 and first == second  # the second run ran on the first run's OS threads
    # ... and saw none of what the first run's threads left there
    fresh = [("MainThread", None, "unset"), ("worker", None, "unset")]
    assert [(s["name"], s["local"], s["var"]) for s in seen] == fresh * 2
    assert getattr(_library_local, "mark", None) is None and _library_var.get() == "unset"  # the test's thread


def test_a_local_made_inside_the_run_is_fresh_in_every_thread() -> None:
    seen: list[Any] = []

    def execute(tool_calls: list[Any], run_tool: Any) -> list[Any]:
        local = threading.local()
        local.value = "main"

        def worker() -> None:
            seen.append((_os_ident(), getattr(local, "value", None)))
            local.value = "worker"

        for _ in range(2):
            thread = threading.Thread(target=worker)
            thread.start()
            thread.join()
        seen.append((_os_ident(), local.value))
        return [{"id": tc.id, "result": run_tool(tc)} for tc in tool_calls]

    for seed in (1, 2):
        run(find_scenario("incident-triage"), from_threads(execute), seed=seed)
    assert [value for _, value in seen] == [None, None, "main"] * 2
    assert len({ident for ident, _ in seen}) < len(seen)  # some OS thread served two bridge threads


def test_threads_alive_at_once_have_distinct_idents_and_their_own_current_thread() -> None:
    seen: list[Any] = []

    def execute(tool_calls: list[Any], run_tool: Any) -> list[Any]:
        barrier = threading.Barrier(3)

        def worker() -> None:
            barrier.wait()  # all three alive at once
            seen.append((threading.get_ident(), threading.current_thread().name))

        threads = [threading.Thread(target=worker, name=f"w{i}") for i in range(2)]
        for thread in threads:
            thread.start()
        worker()
        for thread in threads:
            thread.join()
        return [{"id": tc.id, "result": run_tool(tc)} for tc in tool_calls]

    for seed in (1, 2, 3):
        assert run(find_scenario("incident-triage"), from_threads(execute), seed=seed).status is RunStatus.COMPLETED
    for batch in (seen[0:3], seen[3:6], seen[6:9]):
        assert len({ident for ident, _ in batch}) == 3
        assert sorted(name for _, name in batch) == ["MainThread", "w0", "w1"]


_STUBBORN = """
import threading, time
import _thread
from harness import find_scenario, run
from harness.bridges.threads import from_threads

idents = {}
real = {"os_ident": _thread.get_ident}  # not a global of its own: the bridge would swap it for the bridged one
os_ident = lambda: real["os_ident"]()

def stubborn(tool_calls, run_tool):
    def never_ends():
        idents["stubborn"] = os_ident()
        while True:
            try:
                time.sleep(1)
            except BaseException:  # swallows its release again and again: parked for good
                pass
    threading.Thread(target=never_ends).start()
    return [run_tool(tc) for tc in tool_calls]

def later(tool_calls, run_tool):
    idents.setdefault("later", set()).add(os_ident())
    pool = threading.Thread(target=lambda: idents["later"].add(os_ident()))
    pool.start()
    pool.join()
    return [run_tool(tc) for tc in tool_calls]

print(run(find_scenario("incident-triage"), from_threads(stubborn), seed=1).status.value)
for seed in range(1, 6):
    print(run(find_scenario("incident-triage"), from_threads(later), seed=seed).status.value)
print(len(idents["later"]) >= 2, idents["stubborn"] not in idents["later"], flush=True)
"""


def test_a_thread_that_never_ends_is_never_handed_to_another() -> None:
    # In a process of its own: the stubborn thread stays parked for good (a daemon thread).
    done = subprocess.run([sys.executable, "-c", _STUBBORN], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "HARNESS_THREAD_CARRIER": "os"})
    assert (done.returncode, done.stdout.split(), done.stderr) == (0, ["completed"] * 6 + ["True", "True"], "")
