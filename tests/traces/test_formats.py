"""openai-agents' exported traces and LangSmith run exports import as OTLP JSON does: the same turns
model, each file's format detected from its first document.

The openai-agents export is written by the real SDK: a `Runner.run` of an agent on the SDK's own
`ScriptedModel` (`agents.testing`), its spans collected by a `TracingProcessor` as the SDK's exporters
get them (`Span.export()`). The LangSmith runs are built with the `langsmith` package's own `Run`
schema and serialized by it (`model_dump_json`), shaped as a LangGraph ReAct agent's trace is (root
chain, `agent` node chain holding the `llm` run, `tools` node chain holding the turn's `tool` runs):
the shape is hand-written, the serialization is the SDK's.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.traces import TraceError, import_traces


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


# --- openai-agents -------------------------------------------------------------------------------------

def _agents_export() -> list[dict[str, Any]]:
    """The items the SDK exports for one run: turn 1 calls search and fetch at once (fetch fails after
    20 ms, search answers after 80 ms), turn 2 calls slow, which times out after 50 ms, turn 3 answers."""
    agents = pytest.importorskip("agents")
    testing = pytest.importorskip("agents.testing")
    from agents.tracing import TracingProcessor

    class Collect(TracingProcessor):
        def __init__(self) -> None:
            self.items: list[dict[str, Any]] = []

        def on_trace_start(self, trace: Any) -> None:
            pass

        def on_trace_end(self, trace: Any) -> None:
            self.items.append(trace.export())

        def on_span_start(self, span: Any) -> None:
            pass

        def on_span_end(self, span: Any) -> None:
            self.items.append(span.export())

        def shutdown(self) -> None:
            pass

        def force_flush(self) -> None:
            pass

    @agents.function_tool
    async def search(q: str) -> str:
        await asyncio.sleep(0.08)
        return "found"

    @agents.function_tool
    async def fetch(url: str) -> str:
        await asyncio.sleep(0.02)
        raise ValueError("no route")

    @agents.function_tool(timeout=0.05)
    async def slow(n: int) -> str:
        await asyncio.sleep(0.3)
        return "late"

    model = testing.ScriptedModel([
        [testing.function_call("search", {"q": "a"}, call_id="c1"), testing.function_call("fetch", {"url": "u"},
                                                                                          call_id="c2")],
        [testing.function_call("slow", {"n": 1}, call_id="c3")],
        [testing.assistant_message("done")]], emit_traces=True)
    collect = Collect()
    agents.set_trace_processors([collect])
    try:
        asyncio.run(agents.Runner.run(agents.Agent(name="demo", model=model, tools=[search, fetch, slow]), "hi"))
    finally:
        agents.set_trace_processors([])
    return collect.items


@pytest.mark.parametrize("shape", ["jsonl", "list", "ingest-body"])
def test_a_real_openai_agents_export_imports_with_what_the_runner_did(tmp_path: Path, shape: str) -> None:
    items = _agents_export()
    if shape == "jsonl":
        path = tmp_path / "agents.jsonl"
        path.write_text("".join(json.dumps(item) + "\n" for item in items))
    else:
        path = tmp_path / "agents.json"
        path.write_text(json.dumps(items if shape == "list" else {"data": items}, indent=2))

    imported = import_traces([path])

    assert (imported.tool_spans, imported.model_spans) == (3, 3)
    first, second = imported.turns
    assert [c.tool for c in first.calls] == ["search", "fetch"]
    search, fetch = first.calls
    # The Runner starts a turn's function tools together: they overlapped, and fetch failed first.
    assert first.overlaps() == ((search.call_id, fetch.call_id),) and first.peak_concurrency() == 2
    assert search.outcome == "ok" and fetch.outcome == "error" and fetch.end_ns < search.end_ns
    assert "Error running tool" in fetch.attempts[0].error_type
    assert 75 <= search.attempts[0].duration_ms < 1000 and 15 <= fetch.attempts[0].duration_ms < 1000
    assert search.arguments == '{"q":"a"}'
    (slow,) = second.calls
    # The SDK's default timeout_behavior records no error: the span's output is its timeout message.
    assert slow.tool == "slow" and slow.outcome == "timeout", slow.attempts[0].error_type
    assert 45 <= slow.attempts[0].duration_ms < 290
    assert first.parent_id != second.parent_id and first.trace_id == second.trace_id


def test_the_cli_learns_from_an_openai_agents_export_outside_the_repo(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "agents.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in _agents_export()))
    monkeypatch.chdir(tmp_path)
    code, out, err = _invoke("traces", "import", "agents.jsonl")
    assert code == 0, err
    assert "read 3 tool spans and 3 model spans from 1 file: 2 turns, 3 calls" in err
    assert "[tools.search]" in out and "[tools.slow]" in out and out.count("[[batches]]") == 2


def _agent_item(**changes: Any) -> dict[str, Any]:
    item = {"object": "trace.span", "id": "span_b", "trace_id": "trace_1", "parent_id": "span_turn",
            "started_at": "2026-01-05T10:00:00.100000+00:00", "ended_at": "2026-01-05T10:00:00.300000+00:00",
            "span_data": {"type": "function", "name": "search", "input": "{}", "output": "x", "mcp_data": None},
            "error": None}
    item.update(changes)
    return item


@pytest.mark.parametrize(("changes", "field", "expected"), [
    ({"ended_at": "later"}, "ended_at", "an ISO 8601 time"),
    ({"ended_at": "2026-01-05T10:00:00.000001+00:00"}, "ended_at", "a time at or after started_at"),
    ({"span_data": {"type": "function", "name": ""}}, "span_data.name", "the tool's name"),
    ({"span_data": {"name": "x"}}, "span_data.type", "the span's type"),
    ({"error": "boom"}, "error", "null or an object with a message string"),
    ({"trace_id": 7}, "trace_id", "the trace's id"),
])
def test_a_malformed_openai_agents_span_names_the_file_the_line_the_span_and_the_field(
        tmp_path: Path, changes: dict[str, Any], field: str, expected: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(_agent_item(id="span_a")) + "\n" + json.dumps(_agent_item(**changes)) + "\n")
    code, out, err = _invoke("traces", "summary", str(path))
    assert code == 2 and out == ""
    assert err.startswith(f"harness: {path}: line 2, span span_b: {field}: expected {expected}"), err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_file_keeps_the_format_of_its_first_document(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_text(json.dumps(_agent_item()) + "\n" + json.dumps({"resourceSpans": []}) + "\n")
    with pytest.raises(TraceError, match=r"mixed.jsonl: line 2: expected an openai-agents item, as the file's "
                                         r"first document is, got an object with keys 'resourceSpans'"):
        import_traces([path])


# --- LangSmith ------------------------------------------------------------------------------------------

T0 = datetime(2026, 1, 5, 10, 0, 0)


def _runs() -> list[dict[str, Any]]:
    """A LangGraph ReAct agent's trace as LangSmith records it: turn 1 (the `tools` node runs search and
    read together; read fails), turn 2 (one search), then the final answer. Serialized by langsmith."""
    schemas = pytest.importorskip("langsmith.schemas")
    trace_id = uuid.UUID(int=1)
    made: list[Any] = []

    def run(n: int, name: str, run_type: str, parent: Any, start_ms: int, end_ms: int, **extra: Any) -> Any:
        made.append(schemas.Run(id=uuid.UUID(int=n), name=name, run_type=run_type, trace_id=trace_id,
                                parent_run_id=parent.id if parent is not None else None,
                                start_time=T0 + timedelta(milliseconds=start_ms),
                                end_time=T0 + timedelta(milliseconds=end_ms), inputs=extra.pop("inputs", {}),
                                **extra))
        return made[-1]

    root = run(1, "LangGraph", "chain", None, 0, 3000)
    agent = run(2, "agent", "chain", root, 0, 500)
    run(3, "ChatOpenAI", "llm", agent, 10, 490)
    tools = run(4, "tools", "chain", root, 500, 1400)
    run(5, "search", "tool", tools, 505, 1390, inputs={"query": "harness"})
    run(6, "read_file", "tool", tools, 506, 700, error="Traceback (most recent call last):\n  ...\n"
                                                        "FileNotFoundError: notes.txt")
    agent2 = run(7, "agent", "chain", root, 1400, 1900)
    run(8, "ChatOpenAI", "llm", agent2, 1410, 1890)
    tools2 = run(9, "tools", "chain", root, 1900, 2300)
    run(10, "search", "tool", tools2, 1901, 2299, inputs={"query": "harness"})
    agent3 = run(11, "agent", "chain", root, 2300, 3000)
    run(12, "ChatOpenAI", "llm", agent3, 2310, 2990)
    return [json.loads(r.model_dump_json()) for r in made]


def _nested(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The same runs as `read_run(load_child_runs=True)` gives them: the root with its child_runs nested."""
    by_id = {r["id"]: {**r, "child_runs": []} for r in runs}
    for r in by_id.values():
        if r["parent_run_id"] is not None:
            by_id[r["parent_run_id"]]["child_runs"].append(r)
    return by_id[runs[0]["id"]]


@pytest.mark.parametrize("shape", ["jsonl", "list", "runs-api", "nested"])
def test_a_langsmith_export_imports_with_one_turn_per_tools_node(tmp_path: Path, shape: str) -> None:
    runs = _runs()
    if shape == "jsonl":
        path = tmp_path / "runs.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in reversed(runs)))  # children before parents
    else:
        document = {"list": runs, "runs-api": {"runs": runs, "cursors": {}}, "nested": _nested(runs)}[shape]
        path = tmp_path / "runs.json"
        path.write_text(json.dumps(document, indent=2))

    imported = import_traces([path])

    assert (imported.tool_spans, imported.model_spans) == (3, 3)  # each llm run stands as its agent chain
    first, second = imported.turns
    assert [c.tool for c in first.calls] == ["search", "read_file"]
    search, read = first.calls
    assert first.overlaps() == ((search.call_id, read.call_id),)
    assert [search.attempts[0].duration_ms, read.attempts[0].duration_ms] == [885.0, 194.0]
    assert read.outcome == "error" and read.attempts[0].error_type == "FileNotFoundError: notes.txt"
    assert first.makespan_ms == 885.0 and first.trace_id == str(uuid.UUID(int=1))
    assert [c.tool for c in second.calls] == ["search"] and second.calls[0].arguments == search.arguments


def test_tool_runs_beside_model_chains_split_into_turns(tmp_path: Path) -> None:
    """LangChain's AgentExecutor puts the tool runs beside the chain that holds the llm run: each tool
    run belongs to the last such chain that ended before it started."""
    runs = _runs()
    for r in runs:  # move every tool run up beside the agent chains, as AgentExecutor records them
        if r["run_type"] == "tool":
            r["parent_run_id"] = str(uuid.UUID(int=1))
    path = tmp_path / "executor.json"
    path.write_text(json.dumps(runs))
    turns = import_traces([path]).turns
    assert [[c.tool for c in t.calls] for t in turns] == [["search", "read_file"], ["search"]]


@pytest.mark.parametrize(("changes", "field", "expected"), [
    ({"end_time": None}, "end_time", "the time the run ended"),
    ({"start_time": "yesterday"}, "start_time", "an ISO 8601 time"),
    ({"end_time": "2026-01-05T09:00:00"}, "end_time", "a time at or after start_time"),
    ({"run_type": None}, "run_type", "the run's type"),
    ({"error": {"kind": "x"}}, "error", "the error's text"),
    ({"parent_run_id": 3}, "parent_run_id", "the parent run's id"),
])
def test_a_malformed_langsmith_run_names_the_file_the_line_the_run_and_the_field(
        tmp_path: Path, changes: dict[str, Any], field: str, expected: str) -> None:
    runs = _runs()
    bad = next(r for r in runs if r["name"] == "read_file")
    bad.update(changes)
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in runs))
    code, out, err = _invoke("traces", "import", str(path))
    assert code == 2 and out == ""
    assert err.startswith(f"harness: {path}: line 6, run {bad['id']}: {field}: expected {expected}"), err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_an_unknown_document_lists_the_formats_read(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"events": [1]}))
    code, _, err = _invoke("traces", "import", str(path))
    assert code == 2 and err.count("\n") == 1
    assert "OTLP JSON" in err and "openai-agents" in err and "LangSmith" in err and "'events'" in err


def test_the_same_spans_in_another_order_give_the_same_scenario(tmp_path: Path) -> None:
    from harness.traces import learn, scenario_text

    items = _agents_export()
    texts = []
    for name, ordered in (("a.jsonl", items), ("b.jsonl", items[::-1]), ("c.jsonl", items[1::2] + items[::2])):
        path = tmp_path / name
        path.write_text("".join(json.dumps(item) + "\n" for item in ordered))
        imported = import_traces([path])
        texts.append(scenario_text(learn(imported.turns), imported.turns, name="same", files=("x",)))
    assert texts[0] == texts[1] == texts[2]
