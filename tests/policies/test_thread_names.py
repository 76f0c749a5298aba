"""Worker names bridged code sees are the run's, not the process's (issue 24, thread bridge).

`ThreadPoolExecutor` names its workers after a process-wide counter (`ThreadPoolExecutor-0_0` for the
process's first pool, `-1_0` for the next): a runtime that writes worker names into its results or
trace would replay differently in a fresh process. Under `from_threads` a pool made in a bridged
thread is numbered by its run, so every run, in any process, sees the same names.
"""

from __future__ import annotations

import concurrent.futures
import threading
from typing import Any

import pytest

from harness import find_scenario, run
from harness.bridges.threads import from_threads

pytestmark = pytest.mark.usefixtures("no_threads_left_and_quiet")


def names_its_workers(tool_calls: list[Any], run_tool: Any) -> list[dict[str, Any]]:
    def named(tc: Any) -> str:
        run_tool(tc)
        return threading.current_thread().name

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as first:
        head = [first.submit(named, tc) for tc in tool_calls[:1]]
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as second:
        rest = [second.submit(named, tc) for tc in tool_calls[1:]]
    return [{"tool_call_id": tc.id, "content": f.result()} for tc, f in zip(tool_calls, head + rest, strict=True)]


def worker_names(seed: int) -> list[Any]:
    result = run(find_scenario("incident-triage"), from_threads(names_its_workers), seed)
    return [r.value for r in result.results]


def test_pool_workers_are_named_by_the_run_not_the_process() -> None:
    first = worker_names(1)
    # Pools made outside any run move the process-wide counter; the run's names do not follow it.
    concurrent.futures.ThreadPoolExecutor().shutdown()
    assert worker_names(1) == first == worker_names(2)
    assert first[0] == "ThreadPoolExecutor-0_0" and all(n.startswith("ThreadPoolExecutor-1_") for n in first[1:])


def test_pools_outside_a_run_keep_the_process_counter() -> None:
    worker_names(1)
    before = concurrent.futures.ThreadPoolExecutor()._thread_name_prefix  # type: ignore[attr-defined]
    after = concurrent.futures.ThreadPoolExecutor()._thread_name_prefix  # type: ignore[attr-defined]
    assert int(after.rsplit("-", 1)[1]) == int(before.rsplit("-", 1)[1]) + 1
    assert not type(concurrent.futures.ThreadPoolExecutor.__dict__["_counter"]).__name__.startswith("_Pool")
