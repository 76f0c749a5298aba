"""A `concurrent.futures.Future` made in a bridge thread behaves as the standard library's (thread bridge).

`harness.bridges.threads.queues.Future` takes short cuts on a pool's hot path (its fields set without
`_base.Future.__init__`, `set_running_or_notify_cancel`, `set_result` and `result` without entering
the condition when its lock is free): every state, a held condition, a blocked reader and a done
callback must still get the standard library's answers, and the futures must hash as before.
"""

from __future__ import annotations

import concurrent.futures
import concurrent.futures._base
import threading
import time
from typing import Any

import pytest

from harness import find_scenario, run
from harness.bridges.threads import from_threads
from harness.run import RunStatus

pytestmark = pytest.mark.usefixtures("no_threads_left_and_quiet")

seen: dict[str, Any] = {}


def futures_by_hand(tool_calls: list[Any], run_tool: Any) -> list[dict[str, Any]]:
    Future: Any = concurrent.futures._base.Future  # what `submit` makes (not the package's name)
    first = Future()
    seen["bridged"] = type(first).__module__
    seen["running"] = first.set_running_or_notify_cancel()
    first.set_result("one")
    try:
        first.set_result("again")
    except concurrent.futures.InvalidStateError:
        seen["set twice"] = "InvalidStateError"
    seen["result"] = first.result()

    cancelled = Future()
    seen["cancel"] = cancelled.cancel()
    seen["cancelled runs"] = cancelled.set_running_or_notify_cancel()
    try:
        cancelled.result()
    except concurrent.futures.CancelledError:
        seen["cancelled result"] = "CancelledError"

    failed = Future()
    failed.set_running_or_notify_cancel()
    failed.set_exception(ValueError("boom"))
    try:
        failed.result()
    except ValueError as error:
        seen["failed result"] = str(error)

    held = Future()
    with held._condition:  # held by this thread: the short cuts step aside, the lock is re-entered
        seen["held running"] = held.set_running_or_notify_cancel()
        held.set_result("held")
        seen["held result"] = held.result()
    seen["held lock free after"] = not held._condition._lock.locked()

    called: list[Any] = []
    with_callback = Future()
    with_callback.add_done_callback(lambda future: called.append(future.result()))
    with_callback.set_result("called back")
    seen["callbacks"] = called

    awaited = Future()
    read: list[Any] = []
    reader = threading.Thread(target=lambda: read.append(awaited.result()))
    reader.start()
    time.sleep(0.001)  # virtual: the reader blocks in result() meanwhile
    seen["reader blocked"] = reader.is_alive() and not read
    awaited.set_result("woken")
    reader.join()
    seen["reader read"] = read

    # Creation order numbers a condition, its lock, then the future: three serials a future.
    later = Future()
    seen["serial step"] = hash(later) - hash(awaited)
    seen["condition serials"] = (hash(later._condition), hash(later._condition._lock), hash(later))
    return [{"id": tc.id, "result": run_tool(tc)} for tc in tool_calls]


def test_a_bridged_future_answers_as_the_standard_librarys_in_every_state() -> None:
    seen.clear()
    result = run(find_scenario("incident-triage"), from_threads(futures_by_hand), 3)
    assert result.status is RunStatus.COMPLETED
    condition_serials = seen.pop("condition serials")
    assert seen == {
        "bridged": "harness.bridges.threads.queues",
        "running": True, "set twice": "InvalidStateError", "result": "one",
        "cancel": True, "cancelled runs": False, "cancelled result": "CancelledError",
        "failed result": "boom",
        "held running": True, "held result": "held", "held lock free after": True,
        "callbacks": ["called back"],
        "reader blocked": True, "reader read": ["woken"],
        "serial step": 3 + 1,  # the reader's `Thread` took one between them
    }
    future = condition_serials[2]
    assert condition_serials == (future - 2, future - 1, future)
