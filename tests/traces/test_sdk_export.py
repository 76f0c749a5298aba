"""An OTLP JSON export written by the real OpenTelemetry SDK imports, and the overlap of tool calls the
import records is what the runtime did.

The spans are shaped as the GenAI semantic conventions say: a `chat` span, and under it the
`execute_tool` spans of the calls it emitted (`gen_ai.tool.name`, `gen_ai.tool.call.id`, `error.type`).
The SDK's spans go through its own OTLP encoder (`encode_spans`) and protobuf's JSON mapping; OTLP
JSON differs from that mapping only in writing ids as hex, which `_hex_ids` does as the collector does.
"""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk.trace")
pytest.importorskip("opentelemetry.exporter.otlp.proto.common.trace_encoder")

from google.protobuf.json_format import MessageToDict
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from harness.traces import import_traces

MS = 1_000_000
T0 = 1_767_600_000_000 * MS


def _provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def _otlp_json(exporter: InMemorySpanExporter, *, hex_ids: bool = True) -> dict[str, Any]:
    document = MessageToDict(encode_spans(exporter.get_finished_spans()))
    return _hex_ids(document) if hex_ids else document


def _hex_ids(document: dict[str, Any]) -> dict[str, Any]:
    for resource in document["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return document


def _tool(tracer: trace.Tracer, name: str, call_id: str, start_ms: int, end_ms: int, error: str = "") -> None:
    """One execute_tool span as an instrumented runtime opens and closes it (under the current span)."""
    span = tracer.start_span(f"execute_tool {name}", start_time=T0 + start_ms * MS, attributes={
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.call.arguments": json.dumps({"q": call_id})})
    if error:
        span.set_attribute("error.type", error)
        span.set_status(Status(StatusCode.ERROR, error))
    span.end(end_time=T0 + end_ms * MS)


def _two_turns(tracer: trace.Tracer) -> None:
    """Turn 1: three calls a parallel runtime started together (a and b overlap, c starts as a ends: no
    overlap with a), b fails with a timeout, a is retried after a ConnectionError. Turn 2: one call."""
    with tracer.start_as_current_span("invoke_agent demo", start_time=T0, attributes={
            "gen_ai.operation.name": "invoke_agent"}):
        with tracer.start_as_current_span("chat model", start_time=T0, end_on_exit=False, attributes={
                "gen_ai.operation.name": "chat"}) as chat:
            _tool(tracer, "search", "call_a", 100, 300, error="ConnectionError")
            _tool(tracer, "search", "call_a", 350, 420)
            _tool(tracer, "fetch", "call_b", 101, 2101, error="TimeoutError")
            _tool(tracer, "read", "call_c", 420, 500)
            chat.end(end_time=T0 + 2200 * MS)
        with tracer.start_as_current_span("chat model", start_time=T0 + 2300 * MS, end_on_exit=False, attributes={
                "gen_ai.operation.name": "chat"}) as chat:
            _tool(tracer, "read", "call_d", 2400, 2450)
            chat.end(end_time=T0 + 2500 * MS)


@pytest.mark.parametrize("hex_ids", [True, False], ids=["otlp-json-hex-ids", "protobuf-json-base64-ids"])
@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_an_sdk_export_imports_with_the_overlap_that_happened(tmp_path: Path, suffix: str, hex_ids: bool) -> None:
    provider, exporter = _provider()
    _two_turns(provider.get_tracer("runtime"))
    document = _otlp_json(exporter, hex_ids=hex_ids)
    path = tmp_path / f"export{suffix}"
    path.write_text(json.dumps(document, indent=None if suffix == ".jsonl" else 2) + "\n")

    imported = import_traces([path])

    assert (imported.tool_spans, imported.model_spans) == (5, 2)
    first, second = imported.turns
    assert [c.call_id for c in first.calls] == ["call_a", "call_b", "call_c"]
    assert [c.tool for c in first.calls] == ["search", "fetch", "read"]
    a, b, c = first.calls
    assert [x.outcome for x in a.attempts] == ["error", "ok"] and a.attempts[0].error_type == "ConnectionError"
    assert b.outcome == "timeout" and c.outcome == "ok"
    assert [x.duration_ms for x in a.attempts] == [200.0, 70.0]
    # What the runtime did: b overlaps both attempts of a and c; a's retry ends as c starts (no overlap).
    assert first.overlaps() == (("call_a", "call_b"), ("call_b", "call_c"))
    assert first.peak_concurrency() == 2
    assert first.makespan_ms == 2001.0
    assert [c.call_id for c in second.calls] == ["call_d"] and second.overlaps() == ()
    assert first.parent_id != second.parent_id  # each turn is its own chat span's


def test_real_concurrency_of_an_asyncio_runtime_is_recorded(tmp_path: Path) -> None:
    """Calls an asyncio runtime gathers overlap in the export (each starts before any ends); a call it
    awaits afterwards overlaps none of them: the import reads what really ran at once."""
    provider, exporter = _provider()
    tracer = provider.get_tracer("runtime")

    async def tool(name: str, call_id: str, started: asyncio.Event | None = None) -> None:
        with tracer.start_as_current_span(f"execute_tool {name}", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.call.id": call_id}):
            await asyncio.sleep(0.02)

    async def turn() -> None:
        with tracer.start_as_current_span("chat model", attributes={"gen_ai.operation.name": "chat"}):
            await asyncio.gather(tool("search", "g1"), tool("search", "g2"), tool("fetch", "g3"))
            await tool("read", "after")

    asyncio.run(turn())
    path = tmp_path / "asyncio.json"
    path.write_text(json.dumps(_otlp_json(exporter)))
    (only,) = import_traces([path]).turns
    assert [c.call_id for c in only.calls][-1] == "after"
    assert set(only.overlaps()) == {("g1", "g2"), ("g1", "g3"), ("g2", "g3")}
    assert only.peak_concurrency() == 3


def test_tool_calls_beside_their_chat_spans_split_into_turns(tmp_path: Path) -> None:
    """The other shape runtimes emit: chat and execute_tool spans as siblings under invoke_agent. Each
    call belongs to the last chat span that ended before it started."""
    provider, exporter = _provider()
    tracer = provider.get_tracer("runtime")
    with tracer.start_as_current_span("invoke_agent demo", start_time=T0, attributes={
            "gen_ai.operation.name": "invoke_agent"}):
        for turn, at in enumerate((0, 1000)):
            tracer.start_span("chat model", start_time=T0 + at * MS, attributes={
                "gen_ai.operation.name": "chat"}).end(end_time=T0 + (at + 100) * MS)
            _tool(tracer, "search", f"t{turn}-1", at + 150, at + 400)
            _tool(tracer, "read", f"t{turn}-2", at + 151, at + 200)
    path = tmp_path / "siblings.jsonl"
    path.write_text(json.dumps(_otlp_json(exporter)) + "\n")
    turns = import_traces([path]).turns
    assert [[c.call_id for c in t.calls] for t in turns] == [["t0-1", "t0-2"], ["t1-1", "t1-2"]]
    assert all(t.overlaps() == ((t.calls[0].call_id, t.calls[1].call_id),) for t in turns)
