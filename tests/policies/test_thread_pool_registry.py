"""The real pool's exit-time registry of workers while `from_threads` batches run (thread bridge).

`concurrent.futures.thread._threads_queues` holds every pool worker for the join at interpreter exit.
While a batch is open a bridged worker is not registered at all (it ends with its run, never at exit:
`harness.bridges.threads.pools._Workers`), any other thread's worker is, and the real registry is back
when the batch ends.
"""

from __future__ import annotations

import concurrent.futures
import concurrent.futures.thread as futures_thread
import threading
import weakref
from typing import Any

import pytest

from harness import find_scenario, run
from harness.bridges.threads import from_threads, pools
from harness.run import RunStatus

pytestmark = pytest.mark.usefixtures("no_threads_left_and_quiet")

seen: dict[str, Any] = {}


def pooled(tool_calls: list[Any], run_tool: Any) -> list[dict[str, Any]]:
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(run_tool, tc) for tc in tool_calls]
        concurrent.futures.wait(futures)
        seen["bridged workers registered"] = [t.name for t in list(futures_thread._threads_queues)
                                              if t.name.startswith("ThreadPoolExecutor-")]
    return [{"id": tc.id, "result": future.result()} for tc, future in zip(tool_calls, futures, strict=True)]


def test_bridged_workers_stay_out_of_the_exit_time_registry_and_it_is_back_after() -> None:
    seen.clear()
    real_registry = futures_thread._threads_queues
    result = run(find_scenario("incident-triage"), from_threads(pooled), 3)
    assert result.status is RunStatus.COMPLETED, result.status
    assert seen["bridged workers registered"] == []
    assert futures_thread._threads_queues is real_registry
    assert isinstance(real_registry, weakref.WeakKeyDictionary)
    assert not [t for t in list(real_registry) if type(t).__module__.startswith("harness.")]


def test_the_stand_in_registers_any_other_thread_in_the_real_registry() -> None:
    real: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
    workers = pools._Workers(real)
    other = threading.Thread(target=len)  # made outside any run: the real class
    workers[other] = "its work queue"
    assert real[other] == "its work queue"
    assert list(workers) == [other] and len(workers) == 1 and workers.get(other) == "its work queue"
