"""The `--map FILE` of `harness import`: transcript tool names to catalogue tools.

Owns the map file format (TOML or JSON, one entry per transcript tool name) and its validation:
`Bash = "terminal"` or `Read = { tool = "read_file", arguments = { file_path = "path" } }` (rename
argument `file_path` to `path`). Errors name the file, the key and what was expected; an unknown
catalogue tool lists the valid ones. Renaming applies only to arguments that parse as a JSON object
(re-serialised with `json.dumps`); anything else stays raw. It never reads transcripts.
"""

from __future__ import annotations

import difflib
import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.tools.catalogue import BUILTIN
from harness.transcripts.parsed import MISSING, Reader, TranscriptError

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True, slots=True)
class Target:
    """What one transcript tool becomes: a catalogue tool, with its arguments renamed."""

    tool: str
    renames: Mapping[str, str] = field(default_factory=dict)

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
    """Transcript tool name -> `Target`, read from `file`."""

    targets: Mapping[str, Target]
    file: str = "<map>"

    def get(self, name: str) -> Target | None:
        return self.targets.get(name)


def load_map(path: str | Path) -> ToolMap:
    """Read and validate a map file: `.json` is JSON, `.toml` TOML, anything else either."""
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
            return parse_map(json.loads(text), file)
        except json.JSONDecodeError as exc:
            if suffix == ".json":
                raise TranscriptError(file, f"line {exc.lineno} column {exc.colno}", f"valid JSON ({exc.msg})",
                                      has_got=False) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        what = "valid TOML" if suffix == ".toml" else "a TOML or JSON map"
        raise TranscriptError(file, "", f"{what} ({exc})", has_got=False) from None
    return parse_map(data, file)


def parse_map(data: Any, file: str = "<map>") -> ToolMap:
    """Validate map data (a parsed TOML or JSON document)."""
    r = Reader(file)
    table = r.obj(data, "(top level)", "a table of transcript tool name = catalogue tool")
    targets: dict[str, Target] = {}
    for name, value in table.items():
        key = name if _BARE_KEY.fullmatch(name) else json.dumps(name)
        if isinstance(value, str):
            targets[name] = Target(_tool(r, value, key))
            continue
        entry = r.obj(value, key, "a catalogue tool name or a table { tool = ..., arguments = { old = \"new\" } }")
        unknown = sorted(set(entry) - {"tool", "arguments"})
        if unknown:
            raise r.fail(f"{key}.{unknown[0]}", "only the keys tool and arguments (unknown key)", has_got=False)
        if "tool" not in entry:
            raise r.fail(f"{key}.tool", "the catalogue tool to map to", MISSING)
        tool = _tool(r, entry["tool"], f"{key}.tool")
        renames = r.obj(entry.get("arguments", {}), f"{key}.arguments",
                        "a table of transcript argument = catalogue argument")
        for old, new in renames.items():
            if not isinstance(new, str) or not new:
                raise r.fail(f"{key}.arguments.{old}", "the catalogue argument name (a non-empty string)", new)
        targets[name] = Target(tool, dict(renames))
    return ToolMap(targets, file)


def _tool(r: Reader, value: Any, at: str) -> str:
    valid = sorted(BUILTIN)
    if isinstance(value, str) and value in BUILTIN:
        return value
    close = difflib.get_close_matches(value, valid, n=1) if isinstance(value, str) else []
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise r.fail(at, f"a catalogue tool ({hint}valid: {', '.join(valid)})", value)
