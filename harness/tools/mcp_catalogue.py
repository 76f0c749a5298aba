"""A saved MCP `tools/list` result as a catalogue of declared tools (TOML text).

Owns the translation of each tool of a listing: its description, its `inputSchema` (kept whole as JSON
text, `input_schema`), its `annotations` (the four hints, absent ones left out: `harness.tools.hints`)
and a behaviour skeleton the user completes, guessed from argument names (a required string argument
named like a path is a file; one named like an id is a record under `/mcp/`) and marked as a guess on
every line it wrote. It reads a listing, never a server (`harness.tools.mcp_server` asks one) and never
a tool: the harness only ever reads the list.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.tools.hints import McpHints

#: An argument whose name says it is a file (`path`, `file_path`, `filePath`, `dir`, ...).
# The word boundary is case-sensitive (only the word is not): with the whole pattern case-insensitive,
# the camelCase boundary `(?<=[a-z])(?=[A-Z])` holds between any two letters, so `profile` was a path.
PATHLIKE = re.compile(r"(?:^|_|(?<=[a-z])(?=[A-Z]))(?i:path|file|filename|filepath|dir|directory|folder)$")
#: An argument whose name says it names a record (`id`, `ticket_id`, `ticketId`, `key`, `slug`, `uuid`).
IDLIKE = re.compile(r"(?:^|_|(?<=[a-z])(?=[A-Z]))(?i:id|key|slug|uuid)$")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_TOOL_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")


class ListingError(ValueError):
    """A listing that is not a `tools/list` result; `str()` is one line saying where and what."""


@dataclass(frozen=True, slots=True)
class Imported:
    """The catalogue's TOML text, how many tools it holds, and a warning per tool it left out."""

    text: str
    tools: int
    warnings: tuple[str, ...]


def read_listing(text: str, source: str) -> list[Mapping[str, Any]]:
    """The tools of a `tools/list` result as JSON text: `{"tools": [...]}`, a JSON-RPC response holding it
    in `result`, or the bare list. Raises `ListingError`."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ListingError(f"{source}: expected the JSON of a tools/list result, got invalid JSON ({exc})") from None
    return tools_of(data, source)


def tools_of(data: Any, source: str) -> list[Mapping[str, Any]]:
    """The `tools` of a listing as parsed JSON; raises `ListingError`."""
    if isinstance(data, Mapping) and isinstance(data.get("result"), Mapping):
        data = data["result"]
    tools = data.get("tools") if isinstance(data, Mapping) else data
    if not isinstance(tools, list):
        raise ListingError(f"{source}: expected a tools/list result ({{\"tools\": [...]}}), got {_short(data)}")
    for i, tool in enumerate(tools):
        if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str):
            raise ListingError(f"{source}: tools[{i}]: expected a tool with a name, got {_short(tool)}")
    return tools


def to_catalogue(tools: list[Mapping[str, Any]], source: str, server: str | None = None) -> Imported:
    """The catalogue of `tools` (as `tools_of` returns them), with a header naming `source`; `server`, the
    name the server gives itself (`serverInfo`), is written into each tool, for MCP faults to name."""
    lines = [f"# Declared tools of the MCP server {source}, from its tools/list; `harness tools import mcp` wrote it.",
             "# annotations: the server's hints as it gave them (an absent hint stays absent; a policy that follows",
             "#   the spec reads it as the worst case: not read-only, destructive, not idempotent, open world).",
             "# does: what a call really touches, which the server never says. Lines marked `guess` were guessed",
             "#   from argument names: check them, and complete the rest (docs/mcp.md).",
             "# Reference it from a scenario: tools_from = \"<this file>\"; a [tools.NAME] table there adds or",
             "#   replaces keys (a completed `does`, a latency) without editing this file."]
    warnings: list[str] = []
    count = 0
    for i, tool in enumerate(tools):
        name = tool["name"]
        problem = _problem(tool)
        if problem:
            warnings.append(f"tools[{i}] {name!r:.60}: left out: {problem}")
            continue
        lines += ["", *_tool(tool, server)]
        count += 1
    return Imported("\n".join(lines) + "\n", count, tuple(warnings))


def _problem(tool: Mapping[str, Any]) -> str | None:
    if not _TOOL_NAME.fullmatch(tool["name"]):
        return "a tool name of letters, digits, '_', '-' or '.' is all a scenario can call"
    schema = tool.get("inputSchema", {"type": "object"})
    if not isinstance(schema, Mapping) or schema.get("type", "object") != "object":
        return "its inputSchema is not a JSON Schema of an object"
    try:
        McpHints.parse(tool.get("annotations") or {})
    except ValueError as exc:
        return f"annotations: {exc}"
    return None


def _tool(tool: Mapping[str, Any], server: str | None) -> list[str]:
    name = tool["name"]
    key = f"tools.{name if _BARE_KEY.fullmatch(name) else json.dumps(name)}"
    schema = tool.get("inputSchema", {"type": "object"})
    hints = McpHints.parse(tool.get("annotations") or {})
    out = [f"[{key}]"]
    description = tool.get("description")
    if isinstance(description, str) and description:
        out.append(f"description = {_basic(description)}")
    if server:
        out.append(f"server = {_basic(server)}   # its MCP server, as [faults] mcp_stall and the like name it")
    out.append(f"input_schema = {_literal(json.dumps(schema, sort_keys=True))}")
    given = hints.to_data()
    out.append(f"annotations = {{ {', '.join(f'{k} = {str(v).lower()}' for k, v in given.items())} }}" if given
               else "annotations = {}   # no hints: the spec's worst case (not read-only, destructive, not idempotent, "
                    "open world)")
    out.append("# latency = { uniform = [100, 400] }   # as for any tool; the default is 100 ms")
    steps = _guess(name, schema, hints)
    if not steps:
        out.append("does = []   # guess: no required string argument names a file or a record; say what it touches")
    for why, step in steps:
        out.append(f"[[{key}.does]]   # guess: {why}")
        out += [f"{field} = {_basic(value)}" for field, value in step.items()]
    return out


def _guess(tool: str, schema: Mapping[str, Any], hints: McpHints) -> list[tuple[str, dict[str, str]]]:
    """Touch points from the required string arguments named like paths and ids, by the hints: a read-only
    tool reads them; a destructive one deletes them; an idempotent one writes them; any other appends."""
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    if not isinstance(properties, Mapping) or not isinstance(required, list):
        return []
    strings = [n for n, p in properties.items() if n in required and isinstance(p, Mapping)
               and p.get("type", "string") == "string" and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n)]
    resources: list[tuple[str, str]] = []
    for arg in strings:
        if PATHLIKE.search(arg):
            resources.append((arg, f"{{{arg}}}"))
        elif IDLIKE.search(arg):
            stem = re.sub(r"_?(?:id|key|slug|uuid)$", "", arg, flags=re.I) or tool
            resources.append((arg, f"/mcp/{stem}/{{{arg}}}"))
    payload = " ".join(f"{{{a}}}" for a in strings if a not in dict(resources))
    line = f"{tool} {payload}".rstrip() + "\n"
    steps: list[tuple[str, dict[str, str]]] = []
    for arg, path in resources:
        if hints.is_read_only:
            steps.append((f"`{arg}` names what it reads", {"op": "read", "path": path, "as": arg + "_content"}))
        elif hints.effective("destructive"):
            steps.append((f"`{arg}` names what it deletes (destructive)", {"op": "delete", "path": path}))
        elif hints.effective("idempotent"):
            steps.append((f"`{arg}` names what it sets (idempotent)", {"op": "write", "path": path, "content": line}))
        else:
            steps.append((f"`{arg}` names what it adds to", {"op": "append", "path": path, "content": line}))
    if not hints.is_read_only and hints.is_open_world:
        steps.append(("an effect outside the machine (open world)", {"op": "ledger", "ledger": tool,
                                                                     "payload": line.rstrip()}))
    return steps


def _literal(text: str) -> str:
    """A TOML string holding `text`: a literal string when it can be one (no quote, no newline), else basic."""
    return f"'{text}'" if "'" not in text and "\n" not in text and "\r" not in text else json.dumps(text)


def _basic(text: str) -> str:
    """A TOML basic string holding `text` (JSON's escapes are TOML's; DEL is the one JSON leaves bare)."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _short(value: Any) -> str:
    text = json.dumps(value)[:60] if not isinstance(value, str) else repr(value[:60])
    return text
