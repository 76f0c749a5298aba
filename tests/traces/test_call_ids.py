"""Tool-call ids from openai-agents' and LangSmith's exports, where they hold them: a function span takes
the id of the call its generation span says the model emitted, a LangSmith tool run the id of the
ToolMessage it returned; spans of one id are one call's attempts (a retry)."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from harness.traces import import_traces

T0 = datetime(2026, 1, 5, 10, 0, 0)


def _at(ms: int) -> str:
    return (T0 + timedelta(milliseconds=ms)).isoformat() + "+00:00"


def _item(span_id: str, parent: str, start: int, end: int, data: dict[str, Any]) -> dict[str, Any]:
    return {"object": "trace.span", "id": span_id, "trace_id": "trace_1", "parent_id": parent,
            "started_at": _at(start), "ended_at": _at(end), "span_data": data, "error": None}


def _generation_output() -> list[dict[str, Any]]:
    """The Chat Completions message the SDK records as a generation span's output: two calls of search."""
    return [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_A", "type": "function", "function": {"name": "search", "arguments": '{"q":"a"}'}},
        {"id": "call_B", "type": "function", "function": {"name": "search", "arguments": '{"q":"b"}'}}]}]


def _agents_items(output: Any) -> list[dict[str, Any]]:
    """One turn: the generation, then search b (twice: a retry), then search a, under one turn span."""
    return [_item("span_gen", "span_turn", 0, 100, {"type": "generation", "output": output}),
            _item("span_f1", "span_turn", 101, 150, {"type": "function", "name": "search", "input": '{"q":"b"}'}),
            _item("span_f2", "span_turn", 102, 300, {"type": "function", "name": "search", "input": '{"q":"a"}'}),
            _item("span_f3", "span_turn", 200, 260, {"type": "function", "name": "search", "input": '{"q":"b"}'})]


def _write(tmp_path: Path, items: list[dict[str, Any]]) -> Path:
    path = tmp_path / "spans.jsonl"
    path.write_text("".join(json.dumps(i) + "\n" for i in items))
    return path


@pytest.mark.parametrize("order", ["as-exported", "reversed"])
def test_function_spans_take_the_ids_their_generation_emitted(tmp_path: Path, order: str) -> None:
    items = _agents_items(_generation_output())
    (turn,) = import_traces([_write(tmp_path, items if order == "as-exported" else items[::-1])]).turns
    calls = {c.call_id: c for c in turn.calls}
    assert sorted(calls) == ["call_A", "call_B"]
    assert [a.span_id for a in calls["call_B"].attempts] == ["span_f1", "span_f3"]  # the retry joins its call
    assert [a.span_id for a in calls["call_A"].attempts] == ["span_f2"]


def test_without_emitted_calls_each_function_span_is_its_own_call(tmp_path: Path) -> None:
    (turn,) = import_traces([_write(tmp_path, _agents_items(None))]).turns
    assert [c.call_id for c in turn.calls] == ["span_f1", "span_f2", "span_f3"]


def test_the_real_sdk_exports_a_generation_whose_calls_pair_with_its_function_spans(tmp_path: Path) -> None:
    """The items come from the SDK's own spans (`generation_span`, `function_span`) and `Span.export()`."""
    pytest.importorskip("agents")
    from agents import set_trace_processors
    from agents.tracing import TracingProcessor, custom_span, function_span, generation_span, trace

    class Collect(TracingProcessor):
        items: list[dict[str, Any]] = []  # noqa: RUF012 - one collector per test

        def on_trace_start(self, trace: Any) -> None: pass
        def on_trace_end(self, trace: Any) -> None: pass
        def on_span_start(self, span: Any) -> None: pass
        def on_span_end(self, span: Any) -> None: self.items.append(span.export())
        def shutdown(self) -> None: pass
        def force_flush(self) -> None: pass

    collect = Collect()
    collect.items = []
    set_trace_processors([collect])
    try:
        with trace("call ids"), custom_span("turn"):
            with generation_span(output=_generation_output()):
                pass
            with function_span("search", input='{"q":"a"}'):
                pass
            with function_span("search", input='{"q":"b"}'):
                pass
    finally:
        set_trace_processors([])
    items = [i for i in collect.items if i.get("trace_id")]
    (turn,) = import_traces([_write(tmp_path, items)]).turns
    assert [c.call_id for c in turn.calls] == ["call_A", "call_B"]


def _run(n: int, name: str, run_type: str, parent: int | None, start: int, end: int, **extra: Any) -> dict[str, Any]:
    return {"id": str(uuid.UUID(int=n)), "trace_id": str(uuid.UUID(int=1)), "name": name, "run_type": run_type,
            "parent_run_id": str(uuid.UUID(int=parent)) if parent else None, "start_time": _at(start),
            "end_time": _at(end), "inputs": extra.pop("inputs", {}), **extra}


def test_langsmith_tool_runs_take_their_tool_messages_ids(tmp_path: Path) -> None:
    """LangGraph's ToolNode invokes a tool with the model's tool call, and the tool returns a ToolMessage
    carrying its id, serialized as LangChain does (`kwargs`) or flat; a retry carries the same id."""
    message = {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "ToolMessage"],
               "kwargs": {"content": "secret result", "tool_call_id": "call_X", "name": "search"}}
    runs = [_run(1, "LangGraph", "chain", None, 0, 1000),
            _run(2, "agent", "chain", 1, 0, 100), _run(3, "ChatOpenAI", "llm", 2, 1, 99),
            _run(4, "tools", "chain", 1, 100, 900),
            _run(5, "search", "tool", 4, 101, 200, inputs={"q": "a"}, error="TimeoutError: slow",
                 outputs={"output": message}),
            _run(6, "search", "tool", 4, 201, 400, inputs={"q": "a"}, outputs={"output": message}),
            _run(7, "search", "tool", 4, 102, 300, inputs={"q": "b"},
                 outputs={"output": {"content": "x", "tool_call_id": "call_Y", "type": "tool"}}),
            _run(8, "read", "tool", 4, 103, 150, inputs={"path": "p"}, outputs={"output": "plain text"})]
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(runs))
    imported = import_traces([path])
    (turn,) = imported.turns
    calls = {c.call_id: c for c in turn.calls}
    assert set(calls) == {"call_X", "call_Y", str(uuid.UUID(int=8))}
    assert [a.outcome for a in calls["call_X"].attempts] == ["timeout", "ok"] and imported.retries == 1
