"""The `[[batches]]` of a scenario file: the fixed batches of calls a run plays.

Owns a call's spelling (id, tool name, the raw JSON arguments the model emitted or an inline table)
and the per-call settings `PerCall` gathers: latency, failure, fixed result, production result
(`recorded`, `recorded_error`), dependencies within its batch and arguments read from earlier calls
(`args_from`). It never checks that a call's tool exists (`harness.scenario.tools_load`) or that its
arguments fit it (`harness.scenario.arguments`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.faults.failures import FailureModel
from harness.faults.latency import LatencyModel
from harness.model import Batch, ToolCall
from harness.scenario.arguments import OPT_OUT
from harness.scenario.reader import Reader, check_text
from harness.scenario.spec import Recorded
from harness.tools.inputs import ArgsFromError, Source

_BATCH_KEYS = {"label", "calls"}
_CALL_KEYS = {"id", "name", "arguments", "latency", "failure", "depends_on", "result", "args_from", "recorded",
              "recorded_error", OPT_OUT}


@dataclass
class PerCall:
    """What calls of the batches set for themselves, by call id: latency, failure, fixed result, production
    result, dependencies and arguments read from earlier calls."""

    latency: dict[str, LatencyModel] = field(default_factory=dict)
    failures: dict[str, FailureModel] = field(default_factory=dict)
    depends_on: dict[str, tuple[str, ...]] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)
    args_from: dict[str, dict[str, str]] = field(default_factory=dict)
    recorded: dict[str, Recorded] = field(default_factory=dict)


def parse_batches(r: Reader, value: Any) -> tuple[tuple[Batch, ...], PerCall]:
    """`[[batches]]` with their `[[batches.calls]]`, in order; call ids are unique across the scenario."""
    if not isinstance(value, list) or not value:
        raise r.fail("batches", "a non-empty array of tables ([[batches]])", value, has_got=value is not None)
    batches: list[Batch] = []
    per_call = PerCall()
    seen: set[str] = set()
    for b, batch_value in enumerate(value):
        where = f"batches[{b}]"
        batch = r.table(batch_value, where, _BATCH_KEYS)
        calls_value = batch.get("calls")
        if not isinstance(calls_value, list) or not calls_value:
            raise r.fail(f"{where}.calls", "a non-empty array of tables ([[batches.calls]])", calls_value,
                         has_got=calls_value is not None)
        calls: list[ToolCall] = []
        for c, call_value in enumerate(calls_value):
            at = f"{where}.calls[{c}]"
            call = r.table(call_value, at, _CALL_KEYS)
            for required in ("id", "name"):
                if required not in call:
                    raise r.fail(f"{at}.{required}", "a non-empty string", has_got=False)
            call_id = r.string(call["id"], f"{at}.id")
            if call_id in seen:
                raise r.fail(f"{at}.id", "an id not used by another call in the scenario", call_id)
            seen.add(call_id)
            arguments = call.get("arguments", "{}")
            if isinstance(arguments, Mapping):
                try:
                    arguments = json.dumps(arguments)
                except (TypeError, ValueError):
                    raise r.fail(f"{at}.arguments", "an inline table of JSON values (TOML dates and times have "
                                 "no JSON form; quote them)", arguments) from None
            elif not isinstance(arguments, str):
                raise r.fail(f"{at}.arguments", "the raw JSON string the model emitted, or an inline table",
                             arguments)
            else:
                try:
                    parsed = json.loads(arguments)
                except (ValueError, RecursionError):
                    parsed = None  # malformed arguments are a legitimate input: kept raw
                # JSON escapes can spell a lone surrogate ("\ud800") that no tool could encode.
                check_text(r, parsed, f"{at}.arguments", 0)
            if "latency" in call:
                per_call.latency[call_id] = r.latency(call["latency"], f"{at}.latency")
            if "failure" in call:
                per_call.failures[call_id] = r.failure(call["failure"], f"{at}.failure")
            if "result" in call:
                per_call.results[call_id] = _json_value(r, call["result"], f"{at}.result")
            if "recorded" in call or "recorded_error" in call:
                per_call.recorded[call_id] = _recorded(r, call, at)
            if "depends_on" in call:
                needs = call["depends_on"]
                batch_ids = {c.id for c in calls}
                if not isinstance(needs, list) or not all(isinstance(n, str) and n in batch_ids for n in needs):
                    raise r.fail(f"{at}.depends_on", "a list of ids of earlier calls in the same batch", needs)
                per_call.depends_on[call_id] = tuple(needs)
            if "args_from" in call:
                per_call.args_from[call_id] = _args_from(r, call["args_from"], f"{at}.args_from", seen - {call_id})
            r.boolean(call.get(OPT_OUT, True), f"{at}.{OPT_OUT}")
            calls.append(ToolCall(call_id, r.string(call["name"], f"{at}.name"), arguments, c))
        # Empty is allowed: batches built in Python (and Hypothesis') have no label, and their
        # reproducers must load back as they ran.
        label = r.string(batch.get("label", f"batch-{b + 1}"), f"{where}.label", nonempty=False)
        batches.append(Batch(tuple(calls), label))
    return tuple(batches), per_call


def _recorded(r: Reader, call: Mapping[str, Any], at: str) -> Recorded:
    """`recorded = VALUE` or `recorded_error = "text"`: what the call returned in production, an
    expectation only. With `result` (a fixed value) there would be nothing left to check."""
    for other in ("result", "recorded") if "recorded_error" in call else ("result",):
        if other in call:
            key = "recorded_error" if "recorded_error" in call else "recorded"
            raise r.fail(f"{at}.{key}", f"no {key} next to {other}: a call's production result is either its "
                         "fixed value (result) or an expectation its computed value is checked against "
                         "(recorded, recorded_error)", has_got=False)
    if "recorded_error" in call:
        return Recorded(error=r.string(call["recorded_error"], f"{at}.recorded_error", nonempty=False))
    return Recorded(_json_value(r, call["recorded"], f"{at}.recorded"))


def _args_from(r: Reader, value: Any, field: str, earlier: set[str]) -> dict[str, str]:
    """`args_from = { ticket_id = "open-ticket.value.ticket" }`: arguments read from earlier calls' results."""
    if not isinstance(value, Mapping):
        raise r.fail(field, 'a table of argument = "CALL.value.key" (or a template with {CALL.value.key})', value)
    for arg, text in value.items():
        try:
            source = Source.parse(text)
        except ArgsFromError as exc:
            raise r.fail(f"{field}.{arg}", str(exc), has_got=False) from None
        for producer in source.producers:
            if producer not in earlier:
                raise r.fail(f"{field}.{arg}", "a reference to a call earlier in the scenario", producer)
    return {str(k): str(v) for k, v in value.items()}


def _json_value(r: Reader, value: Any, field: str) -> Any:
    """A value a call can return: TOML's strings, numbers, booleans, arrays and tables (no dates)."""
    if isinstance(value, str | bool | int) or value is None:
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise r.fail(field, "a finite number (JSON has no nan or inf)", value)
        return value
    if isinstance(value, list):
        return [_json_value(r, item, f"{field}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, Mapping):
        return {str(k): _json_value(r, v, f"{field}.{k}") for k, v in value.items()}
    raise r.fail(field, "a JSON value (string, number, boolean, array or table)", value)
