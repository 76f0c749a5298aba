"""What a bridged executor returned, as `CallResult`s.

Owns the reading of an executor's items: a `CallResult`; an exception (as `gather(...,
return_exceptions=True)` gives: `TimeoutError` / `asyncio.TimeoutError` is outcome `timeout`,
`CancelledError` `cancelled`, anything else `error`); an envelope dict (`id` / `tool_call_id` /
`call_id` / `tool_use_id`, `success`, `is_error`, `result` / `content` / `output`, `error`, which may
itself be an exception); or the tool's value itself. Items are paired with calls by id, else by name
and arguments (`name` / `tool`, `arguments`), else by position. It never judges whether the results
are right: the oracles do.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

from simpy.events import PENDING

from harness.bridges.asyncio.toolbox import Toolbox
from harness.model import Batch, CallResult, Outcome

_IDS = ("id", "tool_call_id", "call_id", "tool_use_id")
_VALUES = ("result", "content", "output")
_ENVELOPE = {*_IDS, *_VALUES, "success", "error", "is_error", "outcome"}


def to_results(batch: Batch, toolbox: Toolbox, items: Sequence[Any]) -> list[CallResult]:
    paired: set[str] = set()
    results = []
    for position, item in enumerate(items):
        if isinstance(item, CallResult):
            results.append(item)
            paired.add(item.call_id)
            continue
        plain_id = item.get("id") if type(item) is dict and len(item) == 2 and "result" in item else None
        if type(plain_id) is str:
            # `{"id": ..., "result": value}`, the commonest item: what `_pair` and `_read` make of it.
            call_id, outcome, value, error = plain_id, Outcome.OK, item["result"], None
        else:
            # `type(...) is dict` first: the common item, without the ABC check's cost.
            envelope = (type(item) is dict or isinstance(item, Mapping)) and not _ENVELOPE.isdisjoint(item)
            data: Mapping[str, Any] = item if envelope else {"result": item}
            call_id = _pair(batch, data, position, paired)
            outcome, value, error = _read(item if isinstance(item, BaseException) else data)
        paired.add(call_id)
        handles = toolbox.handles.get(call_id, [])
        if len(handles) == 1:  # the common case: one attempt, without the generator
            handle = handles[0]
            start = handle.started_ms
            settled = handle._value
            if settled is not PENDING:  # `handle.triggered` and `handle.result`, without three properties
                if type(settled) is not CallResult:
                    settled = handle.result  # raises as the property does
                end = settled.end_ms
                if (settled.value is value and settled.outcome is outcome and settled.error == error
                        and settled.call_id == call_id and settled.attempts == 1 and settled.start_ms == start
                        and not settled.notes):
                    # Exactly the result the call settled with: that very object, which the run's driver
                    # knows it made (valid by construction) and does not check field by field again.
                    results.append(settled)
                    continue
            else:
                end = start
        else:
            start = handles[0].started_ms if handles else toolbox.ctx.now
            end = max((h.result.end_ms for h in handles if h.triggered), default=start)
        results.append(CallResult(call_id, outcome, value, error, len(handles), start, end))
    return results


def _pair(batch: Batch, data: Mapping[str, Any], position: int, paired: set[str]) -> str:
    for key in _IDS:
        value = data.get(key)
        if isinstance(value, str):
            return value
    name = data.get("name", data.get("tool"))
    if isinstance(name, str):
        arguments = data.get("arguments")
        for call in batch:
            if call.id in paired or call.name != name:
                continue
            if arguments is None or arguments == call.arguments or arguments == call.parsed_arguments():
                return call.id
    return batch.calls[position].id if position < len(batch) else f"unpaired-{position}"


def _read(item: Mapping[str, Any] | BaseException) -> tuple[Outcome, Any, str | None]:
    """(outcome, value, error) of one item."""
    if isinstance(item, BaseException):
        return _of_exception(item)
    error = item.get("error")
    if isinstance(error, BaseException):
        return _of_exception(error)
    declared = item.get("outcome")
    if isinstance(declared, str) and declared in Outcome._value2member_map_:
        outcome = Outcome(declared)
        return outcome, item.get("result") if outcome is Outcome.OK else None, None if error is None else _text(error)
    failed = item.get("success") is False or item.get("is_error") is True or error is not None
    if failed:
        detail = error if error is not None else next((item[k] for k in _VALUES if k in item), "failed")
        return Outcome.ERROR, None, _text(detail)
    return Outcome.OK, next((item[k] for k in _VALUES if k in item), None), None


def _of_exception(error: BaseException) -> tuple[Outcome, Any, str | None]:
    text = str(error) or type(error).__name__
    if isinstance(error, TimeoutError | asyncio.TimeoutError):
        return Outcome.TIMEOUT, None, text
    if isinstance(error, asyncio.CancelledError):
        return Outcome.CANCELLED, None, text
    return Outcome.ERROR, None, text


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)
