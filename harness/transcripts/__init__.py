"""Transcript import: real model transcripts (OpenAI, Anthropic) -> scenarios.

Owns the public entry points: `import_transcript(kind, data, ...)` for already-parsed JSON,
`import_file(kind, path, ...)` for a file, and `to_toml(data)` for the scenario file text. Each
assistant turn with tool calls becomes one batch, in model order, call ids and raw arguments kept;
the transcript's tool results become the calls' return values. A malformed transcript or map file
raises `TranscriptError` (one line: `FILE: location: expected X, got Y`). It never runs a scenario
and never writes files (the `harness import` command in `command.py` does).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.transcripts import anthropic, openai
from harness.transcripts.build import GENERIC_LATENCY_MS, Imported, build, generic_spec
from harness.transcripts.mapping import Target, ToolMap, load_map, parse_map
from harness.transcripts.parsed import TranscriptError, read_json

#: The transcript dialects `harness import` reads, by the name the command takes.
KINDS = ("openai", "anthropic")


def import_transcript(kind: str, data: Any, *, name: str, file: str = "<transcript>",
                      tool_map: ToolMap | None = None) -> Imported:
    """The scenario for a parsed transcript (`data`: the JSON value) of dialect `kind` (openai or
    anthropic), named `name`; `file` names the transcript in errors and in the scenario's source."""
    if kind == "openai":
        parsed = openai.parse(data, file)
    elif kind == "anthropic":
        parsed = anthropic.parse(data, file)
    else:
        raise ValueError(f"unknown transcript kind {kind!r}; expected one of {', '.join(KINDS)}")
    return build(parsed, name=name, file=file, tool_map=tool_map)


def import_file(kind: str, path: str | Path, *, name: str | None = None,
                map_path: str | Path | None = None) -> Imported:
    """Read the transcript at `path` (and the map file, if any) and import it; the scenario is named
    after the file's stem unless `name` is given."""
    tool_map = load_map(map_path) if map_path is not None else None
    data = read_json(path)
    return import_transcript(kind, data, name=name or Path(path).stem, file=str(path), tool_map=tool_map)


def to_toml(data: dict[str, Any]) -> str:
    """The scenario data as scenario-file TOML; loading it back gives the same data (strings, the
    raw arguments among them, are kept exactly: control characters are escaped)."""
    import tomli_w

    return tomli_w.dumps(data)


__all__ = [
    "GENERIC_LATENCY_MS",
    "KINDS",
    "Imported",
    "Target",
    "ToolMap",
    "TranscriptError",
    "generic_spec",
    "import_file",
    "import_transcript",
    "load_map",
    "parse_map",
    "to_toml",
]
