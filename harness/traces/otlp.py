"""Reading OTLP JSON trace exports: the `resourceSpans / scopeSpans / spans` encoding of OTLP/HTTP
JSON and of the collector's file exporter, as one document per file (`.json`, pretty or not) or one
document per line (`.jsonl`, and a `.json` the file exporter wrote line by line: `harness.traces.documents`).

Owns the format's field names and spellings: hex ids (base64 ids, as protobuf's own JSON mapping
writes them, are read too), nanosecond times as strings or numbers, attributes as `key` / typed `value`
lists, the GenAI semantic conventions' `gen_ai.operation.name`, `gen_ai.tool.name`,
`gen_ai.tool.call.id`, `gen_ai.tool.call.arguments` and `error.type`, and the span status. It yields a
`SpanRecord` for each tool call and model call and drops every other span after reading its ids. A
malformed span raises `TraceError` naming the
file, the line, the span id and the field. It never groups spans into turns (`harness.traces.turns`).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from harness.traces.documents import Progress, documents
from harness.traces.records import SpanRecord, TraceError

#: Operations that are a tool call, and those that are a model call (which delimit turns).
TOOL_OPERATIONS = frozenset({"execute_tool"})
MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
#: The attributes a record keeps; every other attribute (prompts, results, user data) is never read.
_KEYS = frozenset({"gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.tool.call.id", "gen_ai.tool.call.arguments",
                   "error.type"})
_ERROR_STATUS = (2, "STATUS_CODE_ERROR")


def read_otlp(path: Path, progress: Progress | None = None) -> Iterator[SpanRecord]:
    """The tool-call and model-call spans of the OTLP JSON file at `path`, in file order; `progress`
    is told how many bytes each step consumed."""
    file = str(path)
    for line, document in documents(path, progress):
        yield from otlp_records(document, file, line)


def is_otlp(document: Any) -> bool:
    """Whether `document` is meant as an OTLP JSON trace document (it has `resourceSpans`)."""
    return isinstance(document, Mapping) and "resourceSpans" in document


def otlp_records(document: Any, file: str, line: str) -> Iterator[SpanRecord]:
    """The tool-call and model-call spans of one OTLP JSON document (`line` says where it was)."""
    if not isinstance(document, Mapping) or not isinstance(document.get("resourceSpans"), list):
        raise TraceError(file, line, "resourceSpans", "an OTLP JSON trace document (an object with a "
                         "resourceSpans list)", document if not isinstance(document, Mapping)
                         else document.get("resourceSpans"))
    for i, resource in enumerate(document["resourceSpans"]):
        scopes = resource.get("scopeSpans", resource.get("instrumentationLibrarySpans", [])) \
            if isinstance(resource, Mapping) else None
        if not isinstance(scopes, list):
            raise TraceError(file, line, f"resourceSpans[{i}].scopeSpans", "a list", scopes)
        for j, scope in enumerate(scopes):
            spans = scope.get("spans", []) if isinstance(scope, Mapping) else None
            if not isinstance(spans, list):
                raise TraceError(file, line, f"resourceSpans[{i}].scopeSpans[{j}].spans", "a list", spans)
            for k, span in enumerate(spans):
                record = _span(span, file, line, f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]")
                if record is not None:
                    yield record


def _span(span: Any, file: str, line: str, location: str) -> SpanRecord | None:
    if not isinstance(span, Mapping):
        raise TraceError(file, line, location, "a span object", span)
    where = ", ".join(p for p in (line, location) if p)
    span_id = _id(span.get("spanId"), 8, file, where, "spanId")
    where = ", ".join(p for p in (line, f"span {span_id}") if p)  # from here on, the span names itself
    attributes = _attributes(span.get("attributes", []), file, where)
    operation = attributes.get("gen_ai.operation.name")
    name = span.get("name")
    if operation is None and isinstance(name, str) and name.split(" ", 1)[0] in TOOL_OPERATIONS | MODEL_OPERATIONS:
        operation = name.split(" ", 1)[0]  # the conventions' span name is "{operation} {target}"
    if operation not in TOOL_OPERATIONS and operation not in MODEL_OPERATIONS:
        return None
    trace_id = _id(span.get("traceId"), 16, file, where, "traceId")
    parent = span.get("parentSpanId")
    parent_id = "" if parent in (None, "") else _id(parent, 8, file, where, "parentSpanId")
    start = _nanos(span.get("startTimeUnixNano"), file, where, "startTimeUnixNano")
    end = _nanos(span.get("endTimeUnixNano"), file, where, "endTimeUnixNano")
    if end < start:
        raise TraceError(file, where, "endTimeUnixNano", f"a time at or after startTimeUnixNano ({start})", end)
    if operation in MODEL_OPERATIONS:
        return SpanRecord(trace_id, span_id, parent_id, operation, start, end, file=file)
    tool = attributes.get("gen_ai.tool.name")
    if not isinstance(tool, str) or not tool:
        raise TraceError(file, where, "attributes.gen_ai.tool.name", "the tool's name (a non-empty string) on an "
                         "execute_tool span", tool)
    call_id = attributes.get("gen_ai.tool.call.id", "")
    arguments = attributes.get("gen_ai.tool.call.arguments")
    for key, value in (("gen_ai.tool.call.id", call_id), ("gen_ai.tool.call.arguments", arguments)):
        if value is not None and not isinstance(value, str):
            raise TraceError(file, where, f"attributes.{key}", "a string", value)
    error_type = attributes.get("error.type", "")
    if not isinstance(error_type, str):
        error_type = str(error_type)
    status = span.get("status")
    if not error_type and isinstance(status, Mapping) and status.get("code") in _ERROR_STATUS:
        message = status.get("message")
        error_type = message if isinstance(message, str) and message else "error"
    return SpanRecord(trace_id, span_id, parent_id, operation, start, end, tool=tool, call_id=call_id,
                      error_type=error_type, arguments=arguments, file=file)


def _attributes(value: Any, file: str, where: str) -> dict[str, Any]:
    """The attributes a record keeps, as plain values; others are skipped unread."""
    if not isinstance(value, list):
        raise TraceError(file, where, "attributes", "a list of {key, value} objects", value)
    found: dict[str, Any] = {}
    for i, item in enumerate(value):
        if not isinstance(item, Mapping) or not isinstance(item.get("key"), str):
            raise TraceError(file, where, f"attributes[{i}]", "a {key, value} object with a string key", item)
        key = item["key"]
        if key in _KEYS:
            found[key] = _any_value(item.get("value"), file, where, f"attributes.{key}")
    return found


def _any_value(value: Any, file: str, where: str, field: str) -> Any:
    """An OTLP AnyValue as a plain value (int64 values are strings in OTLP JSON)."""
    if not isinstance(value, Mapping) or len(value) > 1:
        raise TraceError(file, where, field, "a typed value such as {\"stringValue\": ...}", value)
    if not value:
        return None
    ((kind, inner),) = value.items()
    if kind == "stringValue" and isinstance(inner, str):
        return inner
    if kind == "intValue" and (isinstance(inner, int) or (isinstance(inner, str) and inner.lstrip("-").isdigit())):
        return int(inner)
    if kind in ("boolValue", "doubleValue") and isinstance(inner, bool | int | float):
        return inner
    if kind in ("arrayValue", "kvlistValue", "bytesValue"):
        return inner
    raise TraceError(file, where, field, "a typed value (stringValue, intValue, doubleValue, boolValue, ...)", value)


def _id(value: Any, size: int, file: str, where: str, field: str) -> str:
    """A trace or span id as lowercase hex: OTLP JSON's hex, or base64 as protobuf's JSON mapping writes it."""
    if isinstance(value, str):
        if len(value) == 2 * size:
            try:
                raw = bytes.fromhex(value)
            except ValueError:
                raw = b""
            if raw:
                return raw.hex()
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) == size:
            return raw.hex()
    raise TraceError(file, where, field, f"{'an' if size == 8 else 'a'} {size}-byte id as {2 * size} hex digits", value)


def _nanos(value: Any, file: str, where: str, field: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and value.isdigit() and value.isascii():
        return int(value)
    raise TraceError(file, where, field, "nanoseconds since the Unix epoch (a whole number, as a string or a number)",
                     value)
