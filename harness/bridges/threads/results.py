"""What a thread executor returned, read as one `CallResult` per item.

Owns the result shapes a thread executor may return and what the bridge does about calls still
running when it returns. An item is a `CallResult`; an exception (`concurrent.futures.CancelledError`
-> cancelled, `TimeoutError` -> timeout, anything else -> error); a mapping with envelope keys —
`id` / `tool_call_id` / `call_id`, `success`, `result` / `content`, `error`, and optionally `outcome`
(`ok`, `error`, `timeout`, `cancelled`, `unknown`) — like seed 003's dicts or hermes' tool messages;
or the tool's value itself. Without an id, items pair with calls by position. A call still running
in one of the executor's threads when it returns is left running, whatever the executor reports for
it (failed, timed out, cancelled, unknown, succeeded or nothing): no thread can be made to stop, so
the tool runs on in the thread the runtime left behind, and the oracles name the orphan
(`harness.bridges.leftovers`); the result is kept as reported. A call whose tool still waits for
the user's approval is given up there and then (it never runs; what the executor reports for it is
kept as reported); a call it never started and reports cancelled is a skip. It never judges the results.
"""

from __future__ import annotations

import concurrent.futures
import json
from collections.abc import Mapping, Sequence
from typing import Any

from simpy.events import PENDING

from harness.bridges.asyncio.asking import Asking
from harness.model import Batch, CallResult, Outcome
from harness.scheduling.context import CallHandle, SchedulerContext

_ENVELOPE = frozenset({"id", "tool_call_id", "call_id", "success", "result", "error", "content", "outcome"})
#: An outcome's value -> the outcome (`Outcome("ok")` is a lookup in the enum's machinery).
_OUTCOMES = {outcome.value: outcome for outcome in Outcome}


def _read(item: Any, position: int, batch: Batch) -> tuple[str, Outcome, Any, str | None]:
    """(call id, outcome, value, error) of one returned item."""
    if isinstance(item, BaseException):
        text = str(item) or type(item).__name__
        fallback = _fallback(position, batch)
        if isinstance(item, concurrent.futures.CancelledError):
            return fallback, Outcome.CANCELLED, None, text
        if isinstance(item, TimeoutError):
            return fallback, Outcome.TIMEOUT, None, text
        return fallback, Outcome.ERROR, None, text
    plain = type(item) is dict  # most often: then no ABC check, and its `get` reads nothing else
    if not ((plain or isinstance(item, Mapping)) and not _ENVELOPE.isdisjoint(item)):
        return _fallback(position, batch), Outcome.OK, item, None
    get = item.get
    for key in _ID_KEYS:
        call_id = get(key)
        if isinstance(call_id, str):
            break
    else:
        call_id = _fallback(position, batch)
    error = get("error")
    stated = get("outcome")
    if isinstance(stated, str) and stated in _OUTCOMES:
        outcome = _OUTCOMES[stated]
    elif error is None and get("success") is not False:
        return call_id, Outcome.OK, (item["result"] if plain and "result" in item
                                     else get("result", get("content"))), None
    else:
        outcome = Outcome.ERROR
    error_text = None if error is None else (error if isinstance(error, str) else json.dumps(error))
    if outcome is Outcome.OK:
        return call_id, outcome, get("result", get("content")), None
    return call_id, outcome, None, error_text or str(get("content") or outcome.value)


_ID_KEYS = ("id", "tool_call_id", "call_id")


def _fallback(position: int, batch: Batch) -> str:
    """The id of an item that names no call: the call at its position."""
    calls = batch.calls
    return calls[position].id if position < len(calls) else f"unpaired-{position}"


def read_results(items: Any, batch: Batch, ctx: SchedulerContext,
                 handles: Mapping[str, list[CallHandle]], asking: Mapping[str, Asking] | None = None) -> Any:
    """CallResults for what the executor returned; anything that is not a sequence is passed on
    untouched (the run reports it as a contract error)."""
    if not isinstance(items, Sequence) or isinstance(items, str | bytes):
        return items
    calls: dict[str, Any] | None = None  # made when a skip needs it
    asking = asking or {}
    results = []
    ok = Outcome.OK
    for position, item in enumerate(items):
        if type(item) is dict and "error" not in item and "outcome" not in item and "success" not in item:
            # The most common item (`{"id": ..., "result": ...}`, a tool message), read by `_read`'s own
            # rules, inlined: the first id key naming a string, the result (else the content), ok.
            get = item.get
            for key in _ID_KEYS:
                call_id = get(key)
                if isinstance(call_id, str):
                    break
            else:
                call_id = None  # no envelope id: `_read` decides
            if call_id is not None:
                value = item["result"] if "result" in item else get("content")
                started = handles.get(call_id, ())
                if len(started) == 1:  # reported as it settled: see below
                    handle = started[0]
                    settled = handle._value
                    if (settled is not PENDING and settled.outcome is ok and settled.value is value
                            and settled.error is None and settled.attempts == 1
                            and settled.start_ms == handle.started_ms <= settled.end_ms and not settled.notes
                            and settled.call_id == call_id):
                        results.append(settled)
                        continue
                outcome, error = ok, None
            else:
                call_id, outcome, value, error = _read(item, position, batch)
                started = handles.get(call_id, ())
        elif isinstance(item, CallResult):
            results.append(item)
            continue
        else:
            call_id, outcome, value, error = _read(item, position, batch)
            started = handles.get(call_id, ())
        asked = asking.get(call_id)
        if outcome is not Outcome.OK:
            if asked is not None and not started:
                asked.give_up()
            # A call still running is not abandoned for the runtime: its thread runs on (see above).
            if calls is None:
                calls = {call.id: call for call in batch.calls}
            if not started and outcome is Outcome.CANCELLED and call_id in calls:
                skipped = ctx.skip(calls[call_id], error or "cancelled before it started")
                results.append(CallResult(call_id, outcome, None, skipped.error, 0, skipped.start_ms, skipped.end_ms))
                continue
        if len(started) == 1:  # the common case, without the generators below
            handle = started[0]
            start = handle.started_ms
            settled = handle._value  # `handle.result`, without two properties: it is the call's CallResult
            if settled is not PENDING:
                end = settled.end_ms
                if (settled.outcome is outcome and settled.value is value and settled.error == error
                        and settled.attempts == 1 and settled.start_ms == start <= end and not settled.notes
                        and settled.call_id == call_id):
                    # Reported as it settled: the very result the call settled with, the same in every
                    # field as the one made below, which the run then trusts without reading it again.
                    results.append(settled)
                    continue
            else:
                end = ctx.now
        else:
            start = started[0].started_ms if started else ctx.now
            # A call still running ends, as far as the runtime knows, when it reports it (now).
            end = (ctx.now if any(not h.triggered for h in started)
                   else max((h.result.end_ms for h in started), default=start))
        result = CallResult(call_id, outcome, value, error, len(started), start, max(end, start))
        results.append(result)
    return results
