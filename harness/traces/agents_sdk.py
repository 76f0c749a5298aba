"""Reading openai-agents' exported traces: the items its tracing processors export (`Trace.export()` and
`Span.export()` of `agents.tracing`).

Owns that format's field names: an item is `{"object": "trace.span", "id", "trace_id", "parent_id",
"started_at", "ended_at", "span_data": {"type": ...}, "error": null | {"message", "data"}}` (a trace
item, `"object": "trace"`, carries no timing and is skipped). A file holds such items one per line, as a
JSON list, or as the body the SDK's `BackendSpanExporter` posts (`{"data": [items]}`). A `function` span
is a tool call (`span_data.name` is the tool, `span_data.input` its arguments text); a `generation` or
`response` span is a model call. Everything else (agent, turn, handoff, guardrail and custom spans) is
dropped after its type is read. A function span's output is only matched against the SDK's own timeout message
(`Tool 'NAME' timed out after N seconds.`: with its default `timeout_behavior` the SDK records a
timed-out call as that output, not as an error), and its error's `data` is not read beyond `data.error`,
the error's text; neither is kept. Times are ISO 8601 with microseconds. A function span records no
tool-call id; a generation span's output does, when the model is the Chat Completions one and the trace
keeps model data (`tool_calls` ids, names and arguments: only those are kept, `emitted`), and a function
span takes the id of the call it answers (`harness.traces.turns`); without them each function span is
its own call (no retries are seen). The SDK puts a turn's `generation` span and its `function` spans
side by side under one `turn` span, which `harness.traces.turns` splits as it does `invoke_agent`
siblings. A malformed item raises `TraceError` naming the file, the line or item, the span id and the
field. It never groups.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from harness.traces.records import SpanRecord, TraceError, iso_nanos

#: `span_data.type` values that are a model call; `function` is a tool call.
MODEL_TYPES = frozenset({"generation", "response"})
ITEM_OBJECTS = frozenset({"trace", "trace.span"})
#: What the SDK's default `timeout_behavior="error_as_result"` hands the model as the tool's output (agents.tool's
#: `default_tool_timeout_error_message`); the span records no error then, only this output.
_TIMED_OUT = re.compile(r"Tool '.*' timed out after [0-9.e+-]+ seconds\.", re.DOTALL)


def is_agents_export(document: Any) -> bool:
    """Whether `document` is meant as openai-agents' export: one item, a list of them, or `{"data": [...]}`."""
    if isinstance(document, Mapping):
        if document.get("object") in ITEM_OBJECTS:
            return True
        data = document.get("data")
        return isinstance(data, list) and (not data or _is_item(data[0]))
    return isinstance(document, list) and bool(document) and _is_item(document[0])


def _is_item(value: Any) -> bool:
    return isinstance(value, Mapping) and value.get("object") in ITEM_OBJECTS


def agents_records(document: Any, file: str, line: str) -> Iterator[SpanRecord]:
    """The function and model-call spans of one document of an openai-agents export."""
    if isinstance(document, Mapping) and "object" in document:
        items: list[Any] = [document]
        prefix = ""
    elif isinstance(document, Mapping):
        data, prefix = document.get("data"), "data"
        if not isinstance(data, list):
            raise TraceError(file, line, "data", "a list of openai-agents trace items", data)
        items = data
    elif isinstance(document, list):
        items, prefix = document, ""
    else:
        raise TraceError(file, line, "", "an openai-agents trace item (an object with \"object\": \"trace.span\")",
                         document)
    for index, item in enumerate(items):
        location = f"{prefix}[{index}]" if len(items) > 1 or prefix else ""
        record = _item(item, file, ", ".join(p for p in (line, location) if p))
        if record is not None:
            yield record


def _item(item: Any, file: str, where: str) -> SpanRecord | None:
    if not isinstance(item, Mapping) or item.get("object") not in ITEM_OBJECTS:
        raise TraceError(file, where, "object", "an openai-agents trace item (\"trace\" or \"trace.span\")",
                         item.get("object") if isinstance(item, Mapping) else item)
    if item["object"] == "trace":
        return None
    span_id = item.get("id")
    if not isinstance(span_id, str) or not span_id:
        raise TraceError(file, where, "id", "the span's id (a non-empty string)", span_id)
    where = ", ".join(p for p in (where.split(", ")[0] if where.startswith("line") else "", f"span {span_id}") if p)
    data = item.get("span_data")
    kind = data.get("type") if isinstance(data, Mapping) else None
    if not isinstance(kind, str):
        raise TraceError(file, where, "span_data.type", "the span's type (function, generation, agent, ...)",
                         kind if isinstance(data, Mapping) else data)
    if kind != "function" and kind not in MODEL_TYPES:
        return None
    assert isinstance(data, Mapping)
    trace_id = item.get("trace_id")
    if not isinstance(trace_id, str) or not trace_id:
        raise TraceError(file, where, "trace_id", "the trace's id (a non-empty string)", trace_id)
    parent = item.get("parent_id")
    if parent is not None and not isinstance(parent, str):
        raise TraceError(file, where, "parent_id", "the parent span's id (a string, or null)", parent)
    start = iso_nanos(item.get("started_at"), file, where, "started_at")
    end = iso_nanos(item.get("ended_at"), file, where, "ended_at")
    if end < start:
        raise TraceError(file, where, "ended_at", f"a time at or after started_at ({item.get('started_at')})",
                         item.get("ended_at"))
    if kind in MODEL_TYPES:
        return SpanRecord(trace_id, span_id, parent or "", "chat", start, end, file=file,
                          emitted=emitted(data.get("output")))
    tool = data.get("name")
    if not isinstance(tool, str) or not tool:
        raise TraceError(file, where, "span_data.name", "the tool's name (a non-empty string) on a function span",
                         tool)
    arguments = data.get("input")
    if arguments is not None and not isinstance(arguments, str):
        raise TraceError(file, where, "span_data.input", "the call's arguments (a string, or null)", arguments)
    error_type = _error(item.get("error"), file, where)
    output = data.get("output")
    if not error_type and isinstance(output, str) and _TIMED_OUT.fullmatch(output):
        error_type = "timeout: " + output
    return SpanRecord(trace_id, span_id, parent or "", "execute_tool", start, end, tool=tool,
                      error_type=error_type, arguments=arguments, file=file)


def emitted(output: Any) -> tuple[tuple[str, str, str | None], ...]:
    """The tool calls a generation span's output holds, as (call id, tool, arguments): Chat Completions
    messages' `tool_calls` (`{"id", "function": {"name", "arguments"}}`) and Responses items
    (`{"type": "function_call", "call_id", "name", "arguments"}`). Nothing else of the output is kept;
    a shape it does not know gives none."""
    found: list[tuple[str, str, str | None]] = []
    for item in output if isinstance(output, list) else []:
        if not isinstance(item, Mapping):
            continue
        calls = item.get("tool_calls")
        for call in calls if isinstance(calls, list) else []:
            function = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(function, Mapping):
                found += _call(call.get("id"), function.get("name"), function.get("arguments"))
        if item.get("type") == "function_call":
            found += _call(item.get("call_id"), item.get("name"), item.get("arguments"))
    return tuple(found)


def _call(call_id: Any, name: Any, arguments: Any) -> list[tuple[str, str, str | None]]:
    if isinstance(call_id, str) and call_id and isinstance(name, str) and name:
        return [(call_id, name, arguments if isinstance(arguments, str) else None)]
    return []


def _error(error: Any, file: str, where: str) -> str:
    """The error's text: its message, and `data.error` when the SDK put the exception's text there."""
    if error is None:
        return ""
    message = error.get("message") if isinstance(error, Mapping) else None
    if not isinstance(message, str):
        raise TraceError(file, where, "error", "null or an object with a message string", error)
    data = error.get("data")
    detail = data.get("error") if isinstance(data, Mapping) else None
    text = f"{message}: {detail}" if isinstance(detail, str) and detail else message
    return text or "error"
