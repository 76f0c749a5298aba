"""Reading LangSmith run exports: the runs LangSmith records for a LangChain or LangGraph agent.

Owns that format's field names: a run is `{"id", "trace_id", "parent_run_id", "run_type", "name",
"start_time", "end_time", "error", "inputs", "child_runs"}` (ISO 8601 times; without an offset they are
UTC, as LangSmith writes them). A file holds runs one per line, as a JSON list, as the runs API's answer
(`{"runs": [...]}`), or as one run with its `child_runs` nested (`read_run(load_child_runs=True)`). A
`tool` run is a tool call (its `name` the tool, its `inputs` the arguments, its `error` text the
outcome); an `llm` run is a model call. Their outputs are never read beyond a tool run's call id.

LangChain and LangGraph nest model calls inside chains (LangGraph: the `agent` node's chain holds the
`llm` run, the `tools` node's chain the `tool` runs of one turn), so a model call is moved up to the
highest chain above it that holds no tool call, and it stands there, with that chain's times, for the
model call that delimits turns (`harness.traces.turns`). That needs a trace's runs together: a file is
read whole before it yields (a run's parent in another file counts as absent). A run without a
`trace_id` belongs to its root's trace. A tool run's call id is the one its output's `ToolMessage`
carries (`outputs.output.tool_call_id`: LangChain returns one when the tool was invoked with a tool
call, as LangGraph's `ToolNode` does; the id is all that is read of the output); a tool run without one
is its own call. A malformed run raises `TraceError` naming the file, the line or item, the run id and
the field. It never groups runs into turns.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from harness.traces.records import SpanRecord, TraceError, iso_nanos

TOOL, MODEL = "tool", "llm"


def is_langsmith_export(document: Any) -> bool:
    """Whether `document` is meant as a LangSmith export: a run, a list of runs, or `{"runs": [...]}`."""
    if isinstance(document, Mapping):
        if "run_type" in document:
            return True
        runs = document.get("runs")
        return isinstance(runs, list) and (not runs or _is_run(runs[0]))
    return isinstance(document, list) and bool(document) and _is_run(document[0])


def _is_run(value: Any) -> bool:
    return isinstance(value, Mapping) and "run_type" in value


@dataclass(frozen=True, slots=True)
class _Run:
    run_id: str
    parent_id: str
    run_type: str
    where: str
    raw: Mapping[str, Any]


def langsmith_records(located: Iterable[tuple[str, Any]], file: str) -> Iterator[SpanRecord]:
    """The tool and model-call records of a file's LangSmith documents (`(where, document)` pairs)."""
    runs: dict[str, _Run] = {}
    for line, document in located:
        for where, run, parent in _runs(document, file, line):
            found = _run(run, parent, file, where)
            runs.setdefault(found.run_id, found)
    holds_tool: set[str] = set()
    for run in runs.values():
        if run.run_type == TOOL:
            parent = run.parent_id
            while parent and parent not in holds_tool:
                holds_tool.add(parent)
                parent = runs[parent].parent_id if parent in runs else ""
    emitted: set[str] = set()
    for run in runs.values():
        if run.run_type == TOOL:
            yield _tool(run, _trace(run, runs), file)
        elif run.run_type == MODEL:
            stand = run
            while stand.parent_id in runs and stand.parent_id not in holds_tool:
                stand = runs[stand.parent_id]
            if stand.run_id not in emitted:
                emitted.add(stand.run_id)
                start, end = _times(stand, file)
                yield SpanRecord(_trace(stand, runs), stand.run_id, stand.parent_id, "chat", start, end, file=file)


def _runs(document: Any, file: str, line: str) -> Iterator[tuple[str, Any, str]]:
    """`(where, run, parent id)` for each run of a document, nested child runs too."""
    if isinstance(document, Mapping) and "run_type" not in document:
        items, prefix = document.get("runs"), "runs"
        if not isinstance(items, list):
            raise TraceError(file, line, "runs", "a list of LangSmith runs", items)
    elif isinstance(document, Mapping):
        items, prefix = [document], ""
    elif isinstance(document, list):
        items, prefix = document, ""
    else:
        raise TraceError(file, line, "", "a LangSmith run (an object with a run_type)", document)
    stack = [(", ".join(p for p in (line, f"{prefix}[{i}]" if len(items) > 1 or prefix else "") if p), item, "")
             for i, item in enumerate(items)]
    stack.reverse()
    while stack:
        where, run, parent = stack.pop()
        yield where, run, parent
        children = run.get("child_runs") if isinstance(run, Mapping) else None
        if children is None:
            continue
        run_id = run.get("id")
        if not isinstance(children, list):
            raise TraceError(file, where, "child_runs", "a list of runs, or null", children)
        stack.extend(reversed([(f"{where}, child_runs[{i}]" if where else f"child_runs[{i}]", child, str(run_id))
                               for i, child in enumerate(children)]))


def _run(run: Any, parent: str, file: str, where: str) -> _Run:
    if not isinstance(run, Mapping):
        raise TraceError(file, where, "", "a LangSmith run (an object with id, run_type, start_time, ...)", run)
    run_id = run.get("id")
    if not isinstance(run_id, str) or not run_id:
        raise TraceError(file, where, "id", "the run's id (a non-empty string)", run_id)
    where = ", ".join(p for p in (where.split(", ")[0] if where.startswith("line") else "", f"run {run_id}") if p)
    run_type = run.get("run_type")
    if not isinstance(run_type, str):
        raise TraceError(file, where, "run_type", "the run's type (tool, llm, chain, ...)", run_type)
    parent_id = run.get("parent_run_id", parent)
    if parent_id is None:
        parent_id = parent
    if not isinstance(parent_id, str):
        raise TraceError(file, where, "parent_run_id", "the parent run's id (a string, or null)", parent_id)
    return _Run(run_id, parent_id, run_type, where, run)


def _trace(run: _Run, runs: Mapping[str, _Run]) -> str:
    trace_id = run.raw.get("trace_id")
    if isinstance(trace_id, str) and trace_id:
        return trace_id
    root, seen = run, {run.run_id}
    while root.parent_id in runs and root.parent_id not in seen:
        root = runs[root.parent_id]
        seen.add(root.run_id)
    return root.run_id


def _times(run: _Run, file: str) -> tuple[int, int]:
    start = iso_nanos(run.raw.get("start_time"), file, run.where, "start_time")
    end_time = run.raw.get("end_time")
    if end_time is None:
        raise TraceError(file, run.where, "end_time", "the time the run ended (an unfinished run cannot be timed)",
                         has_got=False)
    end = iso_nanos(end_time, file, run.where, "end_time")
    if end < start:
        raise TraceError(file, run.where, "end_time", f"a time at or after start_time ({run.raw.get('start_time')})",
                         end_time)
    return start, end


def _tool(run: _Run, trace_id: str, file: str) -> SpanRecord:
    start, end = _times(run, file)
    name = run.raw.get("name")
    if not isinstance(name, str) or not name:
        raise TraceError(file, run.where, "name", "the tool's name (a non-empty string) on a tool run", name)
    error = run.raw.get("error")
    if error is not None and not isinstance(error, str):
        raise TraceError(file, run.where, "error", "the error's text (a string, or null)", error)
    inputs = run.raw.get("inputs")
    arguments = None if inputs is None else orjson.dumps(inputs, option=orjson.OPT_SORT_KEYS).decode()
    return SpanRecord(trace_id, run.run_id, run.parent_id, "execute_tool", start, end, tool=name,
                      call_id=_call_id(run.raw.get("outputs")), error_type=_error_type(error or ""),
                      arguments=arguments, file=file)


def _call_id(outputs: Any) -> str:
    """The tool-call id of the `ToolMessage` a LangChain tool returns when it was invoked with a tool call
    (`outputs.output.tool_call_id`, or under `kwargs` as LangChain serializes it); '' when absent. Nothing
    else of the output is read."""
    output = outputs.get("output") if isinstance(outputs, Mapping) else None
    if not isinstance(output, Mapping):
        return ""
    for where in (output, output.get("kwargs")):
        call_id = where.get("tool_call_id") if isinstance(where, Mapping) else None
        if isinstance(call_id, str) and call_id:
            return call_id
    return ""


def _error_type(error: str) -> str:
    """A run's error is the exception's text, often a whole traceback: its last line names the exception."""
    lines = [line.strip() for line in error.splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""
