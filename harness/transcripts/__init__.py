"""Transcript import: real model transcripts (OpenAI, Anthropic) -> scenarios.

Owns the public entry points: `import_transcript(kind, data, ...)` for already-parsed JSON,
`import_file(kind, path, ...)` for a file, and `to_toml(data)` for the scenario file text. Each
assistant turn with tool calls becomes one batch, in model order, call ids and raw arguments kept.
A call of a tool whose behaviour is known (the catalogue, a `--tools` module, a tool the map
declares) computes its result from the simulated world; the transcript's result is recorded as an
expectation, and the import checks the scenario's serial reference run against every one of them
(`Imported.fidelity`). A tool of unknown behaviour returns the transcript's result. A malformed
transcript or map file raises `TranscriptError` (one line: `FILE: location: expected X, got Y`); a
tools module that cannot be used, `ToolsModuleError`. It never runs a schedule and never writes
files (the `harness import` command in `command.py` does).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.scenario.load import ScenarioError, scenario_from_data
from harness.scenario.spec import Scenario
from harness.tools.catalogue import base_catalogue
from harness.tools.modules import ToolsModuleError
from harness.transcripts import anthropic, fidelity, openai
from harness.transcripts.build import GENERIC_LATENCY_MS, Imported, build, generic_spec
from harness.transcripts.fidelity import Disagreement
from harness.transcripts.mapping import Target, ToolMap, load_map, parse_map
from harness.transcripts.parsed import TranscriptError, read_json

#: The transcript dialects `harness import` reads, by the name the command takes.
KINDS = ("openai", "anthropic")


def import_transcript(kind: str, data: Any, *, name: str, file: str = "<transcript>",
                      tool_map: ToolMap | None = None, tools_modules: Sequence[str] = ()) -> Imported:
    """The scenario for a parsed transcript (`data`: the JSON value) of dialect `kind` (openai or
    anthropic), named `name`; `file` names the transcript in errors and in the scenario's source.
    `tools_modules` are Python tool modules (as `harness run --tools`) whose tools calls may name
    or the map may target; the scenario names them (`tools_module`)."""
    if kind == "openai":
        parsed = openai.parse(data, file)
    elif kind == "anthropic":
        parsed = anthropic.parse(data, file)
    else:
        raise ValueError(f"unknown transcript kind {kind!r}; expected one of {', '.join(KINDS)}")
    modules = tuple(dict.fromkeys(tools_modules))
    tools = base_catalogue(modules)  # ToolsModuleError for a module that cannot be used
    imported = build(parsed, name=name, file=file, tool_map=tool_map, tools=tools, tools_modules=modules)
    scenario = load_imported(imported.data, file, tool_map, trust=modules)
    return replace(imported, fidelity=tuple(fidelity.check(scenario)))


def load_imported(data: dict[str, Any], file: str, tool_map: ToolMap | None = None, *,
                  trust: Sequence[str] = ()) -> Scenario:
    """The scenario the imported data describes. A tool the map declares is checked here, by the
    scenario loader: its error is the map file's (`MAP: ENTRY.declare.does[0].op: expected ...`).
    Any other load error is the importer's (a harness bug): `ScenarioError` is raised as is. The
    data names only the tool modules the caller passed (`trust`): a transcript or a map names no code
    (the rule of `harness.scenario.trust`)."""
    try:
        return scenario_from_data(data, f"<import of {file}>", trust=trust)
    except ScenarioError as exc:
        if tool_map is not None:
            for tool in sorted(tool_map.declared, key=len, reverse=True):  # 'q.x' before 'q'
                prefix = f"tools.{tool}"
                if exc.field == prefix or exc.field.startswith(prefix + "."):
                    where = f"{tool_map.declared_at[tool]}.declare{exc.field[len(prefix):]}"
                    detail = str(exc).removeprefix(f"{exc.file}: {exc.field}: ").removeprefix("expected ")
                    raise TranscriptError(tool_map.file, where, detail, has_got=False) from None
        raise


def import_file(kind: str, path: str | Path, *, name: str | None = None, map_path: str | Path | None = None,
                tools_modules: Sequence[str] = ()) -> Imported:
    """Read the transcript at `path` (and the map file, if any) and import it; the scenario is named
    after the file's stem unless `name` is given."""
    modules = tuple(dict.fromkeys(tools_modules))
    tool_map = load_map(map_path, tools=base_catalogue(modules)) if map_path is not None else None
    data = read_json(path)
    return import_transcript(kind, data, name=name or Path(path).stem, file=str(path), tool_map=tool_map,
                             tools_modules=modules)


def to_toml(data: dict[str, Any]) -> str:
    """The scenario data as scenario-file TOML; loading it back gives the same data (strings, the
    raw arguments among them, are kept exactly: control characters are escaped)."""
    import tomli_w

    return tomli_w.dumps(data)


__all__ = [
    "GENERIC_LATENCY_MS",
    "KINDS",
    "Disagreement",
    "Imported",
    "Target",
    "ToolMap",
    "ToolsModuleError",
    "TranscriptError",
    "generic_spec",
    "import_file",
    "import_transcript",
    "load_imported",
    "load_map",
    "parse_map",
    "to_toml",
]
