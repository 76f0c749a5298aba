"""hermes-agent's tool executor as seed 000 describes it, written as a user would, in plain
`concurrent.futures` code (nothing from the harness is imported).

From the seed: the batch runs on a thread pool (at most 8 workers); the main thread does not block on
the results but polls with `wait(timeout=5.0)`, so that every 5 s it can check the user's stop signal
(and send a heartbeat). Interrupts are handled in three layers: if the signal is already on before the
pool starts, every call is skipped; if it is noticed while calls run, calls not yet started are
cancelled and running ones get a 3 s grace period; at the end, interrupted calls get a cancellation
note in their result. Results are appended in model order.
"""

from __future__ import annotations

import concurrent.futures
from typing import Any

_MAX_TOOL_WORKERS = 8
_POLL_SECONDS = 5.0
_GRACE_SECONDS = 3.0

heartbeats: list[float] = []  # what the heartbeat would send: how long the batch has been running


def execute(tool_calls: list[Any], run_tool: Any, interrupted: Any) -> list[dict[str, Any]]:
    if interrupted.is_set():
        return [{"tool_call_id": tc.id, "content": "[Tool execution skipped - user interrupted]",
                 "outcome": "cancelled"} for tc in tool_calls]

    results: list[dict[str, Any] | None] = [None] * len(tool_calls)

    def _run_tool(index: int, tool_call: Any) -> None:
        try:
            results[index] = {"tool_call_id": tool_call.id, "content": run_tool(tool_call)}
        except Exception as error:
            results[index] = {"tool_call_id": tool_call.id, "success": False,
                              "error": f"Error executing tool '{tool_call.function.name}': {error}"}

    import time

    started = time.monotonic()
    executor = concurrent.futures.ThreadPoolExecutor(max_workers=min(len(tool_calls), _MAX_TOOL_WORKERS))
    try:
        futures = [executor.submit(_run_tool, i, tc) for i, tc in enumerate(tool_calls)]
        while True:
            _done, not_done = concurrent.futures.wait(futures, timeout=_POLL_SECONDS)
            if not not_done:
                break
            if interrupted.is_set():
                for future in not_done:
                    future.cancel()  # only calls not started yet can be cancelled
                concurrent.futures.wait(not_done, timeout=_GRACE_SECONDS)
                break
            heartbeats.append(time.monotonic() - started)
    finally:
        executor.shutdown(wait=False, cancel_futures=True)

    messages = []
    for index, tool_call in enumerate(tool_calls):
        result = results[index]
        if result is not None:
            messages.append(result)
        elif futures[index].cancelled():
            messages.append({"tool_call_id": tool_call.id, "outcome": "cancelled",
                             "content": "[Tool execution cancelled - skipped due to user interrupt]"})
        else:
            messages.append({"tool_call_id": tool_call.id, "outcome": "unknown",
                             "content": "[Tool execution interrupted - still running after the grace period]"})
    return messages
