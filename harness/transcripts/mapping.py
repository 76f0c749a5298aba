"""The `--map FILE` of `harness import`: transcript tool names to the tools a scenario can run.

Owns the map file format (TOML or JSON, one entry per transcript tool name) and its validation:
`Bash = "terminal"` or `Read = { tool = "read_file", arguments = { file_path = "path" } }` (rename
argument `file_path` to `path`). A target is a tool of the catalogue, of a `--tools` module, or one
the map declares: an entry's `declare` table is a scenario's `[tools.NAME]` declaration (`does`,
`result`, `declared`, `latency`, ...) of a tool named by its `tool` (default: the transcript's name),
copied into the scenario. Errors name the file, the key and what was expected; an unknown target
lists the valid ones. Renaming applies only to arguments that parse as a JSON object (re-serialised
with `json.dumps`); anything else stays raw. It never reads transcripts and never checks a
declaration's contents (the scenario loader does, when the import loads what it wrote).
"""

from __future__ import annotations

import difflib
import json
import re
import tomllib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.tools.catalogue import BUILTIN
from harness.transcripts.parsed import MISSING, Reader, TranscriptError

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
#: Names a scenario may declare a tool under (the scenario loader's rule).
DECLARABLE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")


@dataclass(frozen=True, slots=True)
class Target:
    """What one transcript tool becomes: a tool the scenario can run, with its arguments renamed.
    `at` is the entry's key in the map file (for messages)."""

    tool: str
    renames: Mapping[str, str] = field(default_factory=dict)
    at: str = field(default="", compare=False)

    def arguments(self, raw: str) -> tuple[str, str | None]:
        """The call's arguments for the catalogue tool, and a warning when a rename could not apply.

        Raw text is returned byte for byte unless a rename applies to a JSON object."""
        if not self.renames:
            return raw, None
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            return raw, None
        if not isinstance(value, dict) or not set(value) & set(self.renames):
            return raw, None
        renamed = [self.renames.get(key, key) for key in value]
        clash = sorted({key for key in renamed if renamed.count(key) > 1})
        if clash:
            return raw, f"argument {clash[0]!r} would be given twice by the renames; arguments kept as sent"
        return json.dumps(dict(zip(renamed, value.values(), strict=True)), ensure_ascii=False), None


@dataclass(frozen=True)
class ToolMap:
    """Transcript tool name -> `Target`, read from `file`; `declared` holds the tools the map
    declares (tool name -> its `[tools.NAME]` table, as the map wrote it) and `declared_at` the key
    of the entry that declares each."""

    targets: Mapping[str, Target]
    file: str = "<map>"
    declared: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    declared_at: Mapping[str, str] = field(default_factory=dict)

    def get(self, name: str) -> Target | None:
        return self.targets.get(name)

    def check(self, tools: Collection[str]) -> None:
        """Every target is one of `tools` (the tools the scenario will have) or declared in the map;
        a TranscriptError names the first entry that is not, and lists the valid names."""
        r = Reader(self.file)
        for name, target in self.targets.items():
            if target.tool not in tools and target.tool not in self.declared:
                raise _unknown(r, target.at or _key(name), target.tool, [*tools, *self.declared])


def load_map(path: str | Path, *, tools: Collection[str] = BUILTIN) -> ToolMap:
    """Read and validate a map file: `.json` is JSON, `.toml` TOML, anything else either. `tools`:
    the names a target may have besides those the map declares (default: the catalogue's)."""
    file = str(path)
    try:
        text = Path(path).read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise TranscriptError(file, "", "a readable map file", exc.strerror or str(exc)) from None
    except UnicodeDecodeError:
        raise TranscriptError(file, "", "UTF-8 text", has_got=False) from None
    suffix = Path(path).suffix.lower()
    if suffix != ".toml":
        try:
            return parse_map(json.loads(text), file, tools=tools)
        except json.JSONDecodeError as exc:
            if suffix == ".json":
                raise TranscriptError(file, f"line {exc.lineno} column {exc.colno}", f"valid JSON ({exc.msg})",
                                      has_got=False) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        what = "valid TOML" if suffix == ".toml" else "a TOML or JSON map"
        raise TranscriptError(file, "", f"{what} ({exc})", has_got=False) from None
    return parse_map(data, file, tools=tools)


def parse_map(data: Any, file: str = "<map>", *, tools: Collection[str] = BUILTIN) -> ToolMap:
    """Validate map data (a parsed TOML or JSON document); `tools` as for `load_map`."""
    r = Reader(file)
    table = r.obj(data, "(top level)", "a table of transcript tool name = tool to run")
    targets: dict[str, Target] = {}
    declared: dict[str, Mapping[str, Any]] = {}
    declared_at: dict[str, str] = {}
    for name, value in table.items():
        key = _key(name)
        if isinstance(value, str):
            targets[name] = Target(value, at=key)
            continue
        entry = r.obj(value, key, "a tool name or a table { tool = ..., arguments = { old = \"new\" }, "
                      "declare = { does = [...], ... } }")
        unknown = sorted(set(entry) - {"tool", "arguments", "declare"})
        if unknown:
            raise r.fail(f"{key}.{unknown[0]}", "only the keys tool, arguments and declare (unknown key)",
                         has_got=False)
        if "tool" not in entry and "declare" not in entry:
            raise r.fail(f"{key}.tool", "the tool to map to", MISSING)
        tool = entry.get("tool", name)
        if not isinstance(tool, str) or not tool:
            raise r.fail(f"{key}.tool", "the tool to map to (a non-empty string)", tool)
        renames = r.obj(entry.get("arguments", {}), f"{key}.arguments",
                        "a table of transcript argument = the tool's argument")
        for old, new in renames.items():
            if not isinstance(new, str) or not new:
                raise r.fail(f"{key}.arguments.{old}", "the tool's argument name (a non-empty string)", new)
        if "declare" in entry:
            at = f"{key}.tool" if "tool" in entry else key
            if tool in tools:
                raise r.fail(at, "a new name for the tool the entry declares (a tool of the catalogue or of a "
                             "--tools module keeps its behaviour; map onto it without declare)", tool)
            if not DECLARABLE.fullmatch(tool):
                raise r.fail(at, "a tool name of letters, digits, '_', '-' or '.' for the declared tool", tool)
            if tool in declared:
                raise r.fail(at, f"a tool declared once (entry {declared_at[tool]} declares {tool!r} too; map "
                             "this entry onto it without declare)", tool)
            declared[tool] = r.obj(entry["declare"], f"{key}.declare",
                                   "the tool's declaration, as a scenario's [tools.NAME] table (does = [...], "
                                   "result, declared, latency)")
            declared_at[tool] = key
        targets[name] = Target(tool, dict(renames), at=f"{key}.tool" if "tool" in entry else key)
    tool_map = ToolMap(targets, file, declared, declared_at)
    tool_map.check(tools)
    return tool_map


def _key(name: str) -> str:
    """A map key as the file spells it (quoted unless bare)."""
    return name if _BARE_KEY.fullmatch(name) else json.dumps(name)


def _unknown(r: Reader, at: str, value: Any, valid: Collection[str]) -> TranscriptError:
    names = sorted(set(valid))
    close = difflib.get_close_matches(value, names, n=1) if isinstance(value, str) else []
    hint = f"did you mean {close[0]!r}? " if close else ""
    return r.fail(at, f"a tool of the catalogue, of a --tools module or declared in this map ({hint}valid: "
                  f"{', '.join(names)})", value)
