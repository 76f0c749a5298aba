"""Production traces -> recorded turns, learned models and a scenario to run them (issue 29).

Owns the public entry points: `trace_files(paths)` (a directory stands for its `.json` / `.jsonl`
files), `import_traces(paths, progress)` (the turns of OTLP JSON, openai-agents and LangSmith
exports: `harness.traces.formats` tells them apart and reads, `harness.traces.turns` groups),
`learn(turns)` (per-tool latency fits and rates, the workload: `harness.traces.learn`) and
`scenario_text(...)` (the scenario file: `harness.traces.library`). The built-in synthetic sample is
`SAMPLE` (`harness.traces.sample` makes it). A malformed file raises `TraceError`, one line naming the
file, the span and the field. It never runs a schedule and never
writes files (the `harness traces` commands in `harness.cli.traces` do).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from harness.traces.formats import read_records
from harness.traces.learn import MIN_SAMPLES, Fit, Learned, ToolModel, Workload, learn
from harness.traces.library import scenario_text, tool_names
from harness.traces.records import Attempt, CallRecord, SpanRecord, TraceError, Turn
from harness.traces.turns import Imported, reconstruct

#: The built-in synthetic sample export (`python -m harness.traces.sample` writes it; see that module).
SAMPLE = Path(__file__).resolve().parent / "data" / "sample.jsonl"
#: The suffixes read as trace exports (whatever format they hold).
SUFFIXES = (".json", ".jsonl")


def trace_files(paths: Sequence[str | Path]) -> tuple[Path, ...]:
    """The files `paths` name, a directory standing for its .json and .jsonl files (recursively, sorted)."""
    found: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            inside = sorted(p for p in path.rglob("*") if p.suffix.lower() in SUFFIXES and p.is_file())
            if not inside:
                raise TraceError(str(path), "", "", "a directory holding .json or .jsonl trace files", has_got=False)
            found.extend(inside)
        elif not path.exists():
            raise TraceError(str(path), "", "", "a trace file (.json or .jsonl) or a directory of them",
                             "no such file")
        elif path.suffix.lower() not in SUFFIXES:
            raise TraceError(str(path), "", "", "a trace export named .json or .jsonl", path.suffix or "no suffix")
        else:
            found.append(path)
    return tuple(dict.fromkeys(found))


def import_traces(paths: Sequence[str | Path], progress: Callable[[int], None] | None = None) -> Imported:
    """The turns of the trace files `paths` (see `trace_files`; each file's format is detected:
    `harness.traces.formats`); `progress` is told each step's bytes."""
    files = trace_files(paths)

    def records() -> Iterator[SpanRecord]:
        for file in files:
            yield from read_records(file, progress)

    return reconstruct(records(), tuple(str(f) for f in files))


__all__ = [
    "MIN_SAMPLES",
    "SAMPLE",
    "SUFFIXES",
    "Attempt",
    "CallRecord",
    "Fit",
    "Imported",
    "Learned",
    "SpanRecord",
    "ToolModel",
    "TraceError",
    "Turn",
    "Workload",
    "import_traces",
    "learn",
    "scenario_text",
    "tool_names",
    "trace_files",
]
