"""What a traced call touches, guessed from its arguments and its tool's name, without keeping secrets.

Owns the guess. A trace records a call's arguments, never what it did, so: a top-level argument named
like a path (`path`, `file_path`, `filePath`, `dir`, ...: the MCP import's rule,
`harness.tools.mcp_catalogue`) names a file, and one named like an id (`id`, `ticket_id`, `key`, `slug`,
`uuid`) a record of its stem (`ticket`; a bare `id` a `record`). A tool's name says whether it reads
(`read_file`, `get_user`, `web_search`: a read verb and no write verb) or changes (`write_file`,
`update_ticket`, `send_email`: a write verb) what it names; neither (`run_tests`) is `unknown`, which
is taken as a change (the cautious side). A tool's resource arguments are those every one of its calls
carries with a non-empty string (or integer) value, since every call must send what its tool reads.

Values are kept only with `keep_arguments`. Otherwise each becomes a pseudonym: an HMAC-SHA256 of the
namespace and the value (a path normalized first, `./a` being `a`) under a key hashed from the import
itself (its trace ids, span ids and argument texts, none of which the scenario holds without
`--keep-arguments`), so two calls that touched the same file get the same pseudonym and the scenario
neither holds the name nor lets a reader test a guess of it; the same import gives the same
pseudonyms. It never reads a trace file and never writes a scenario (`harness.traces.library` does).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.tools.mcp_catalogue import IDLIKE, PATHLIKE
from harness.traces.records import Turn

_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Verbs of a tool name that reads, and of one that changes what it names (a name with both changes).
READ_VERBS = frozenset({"read", "get", "list", "search", "find", "fetch", "query", "view", "show", "lookup",
                        "describe", "grep", "glob", "ls", "cat", "stat", "browse", "retrieve", "load", "inspect",
                        "select", "count", "open", "download"})
WRITE_VERBS = frozenset({"write", "edit", "patch", "update", "set", "create", "delete", "remove", "rm", "append",
                         "insert", "put", "post", "save", "move", "rename", "mv", "upload", "send", "add", "modify",
                         "replace", "apply", "commit", "push", "deploy", "drop", "truncate", "store", "close",
                         "assign", "merge", "upsert", "cancel", "submit", "publish", "mkdir", "touch", "copy", "cp"})
READ, WRITE, UNKNOWN = "read", "write", "unknown"
FILE = "file"


@dataclass(frozen=True)
class Access:
    """The guess for one tool: its kind and its resource arguments as (argument, namespace)."""

    tool: str
    kind: str
    fields: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Resources:
    """The guesses for an import: per tool, and per call (turn index, call index) its resources as
    (argument, namespace, value): a pseudonym, or the recorded value with `keep_arguments`."""

    tools: Mapping[str, Access]
    values: Mapping[tuple[int, int], tuple[tuple[str, str, str], ...]]
    kept: bool

    def world_path(self, namespace: str, value: str) -> str:
        """The file of the simulated world that stands for `value` (as the tool's steps spell it)."""
        return posixpath.normpath(f"/traced/{namespace}/{value}")


def kind_of(tool: str) -> str:
    """`read`, `write` or `unknown`, from the words of the tool's name (`read_file`, `getUser`, `web.search`)."""
    words = {w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", tool)}
    if words & WRITE_VERBS:
        return WRITE
    if words & READ_VERBS:
        return READ
    return UNKNOWN


def namespace_of(field: str) -> str | None:
    """`file` for an argument named like a path, the record's stem for one named like an id, else None."""
    if not _FIELD.fullmatch(field):
        return None
    if PATHLIKE.search(field):
        return FILE
    if IDLIKE.search(field):
        stem = re.sub(r"_?(?:id|key|slug|uuid)$", "", field, flags=re.I).strip("_").lower()
        return stem if stem and stem != FILE else "record"
    return None


def _value(namespace: str, value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and namespace != FILE:
        return str(value)
    if isinstance(value, str) and value.strip():
        return value
    return None


def _arguments(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def infer(turns: Sequence[Turn], *, keep_arguments: bool = False, guess: bool = True) -> Resources:
    """The guesses for `turns` (see the module's rules); with `guess` false, none: every tool is of
    unknown kind with no resource argument, so its calls touch nothing and claim the most conservative
    metadata."""
    if not guess:
        unknown = {call.tool: Access(call.tool, UNKNOWN, ()) for turn in turns for call in turn.calls}
        return Resources(dict(sorted(unknown.items())), {}, keep_arguments)
    parsed = {(t, c): _arguments(call.arguments) for t, turn in enumerate(turns) for c, call in enumerate(turn.calls)}
    common: dict[str, dict[str, str]] = {}
    for (t, c), arguments in parsed.items():
        tool = turns[t].calls[c].tool
        fields = {} if arguments is None else {
            name: space for name, value in arguments.items()
            if (space := namespace_of(name)) is not None and _value(space, value) is not None}
        # A resource argument is one every call of the tool carries (a call must send what its tool reads).
        common[tool] = fields if tool not in common else {k: v for k, v in common[tool].items() if fields.get(k) == v}
    tools = {tool: Access(tool, kind_of(tool), tuple(sorted(fields.items()))) for tool, fields in common.items()}
    key = _key(turns)
    values: dict[tuple[int, int], tuple[tuple[str, str, str], ...]] = {}
    for (t, c), arguments in parsed.items():
        access = tools[turns[t].calls[c].tool]
        if not access.fields or arguments is None:
            continue
        found = []
        for name, space in access.fields:
            value = _value(space, arguments[name])
            assert value is not None  # a resource argument is one every call carries
            found.append((name, space, value if keep_arguments else pseudonym(key, space, value)))
        values[(t, c)] = tuple(found)
    return Resources(dict(sorted(tools.items())), values, keep_arguments)


def pseudonym(key: bytes, namespace: str, value: str) -> str:
    """`NAMESPACE-` and 12 hex digits of the keyed hash of the (normalized) value."""
    if namespace == FILE:
        value = posixpath.normpath(value)
    digest = hmac.new(key, f"{namespace}\0{value}".encode(), hashlib.sha256).hexdigest()
    return f"{namespace}-{digest[:12]}"


def _key(turns: Sequence[Turn]) -> bytes:
    """A key only the import's own data gives: its ids and argument texts, which the scenario leaves out."""
    digest = hashlib.sha256(b"harness.traces.resources\0")
    for turn in turns:
        digest.update(f"{turn.trace_id}\0{turn.parent_id}\0".encode())
        for call in turn.calls:
            digest.update(f"{call.call_id}\0{call.arguments}\0".encode())
            for attempt in call.attempts:
                digest.update(f"{attempt.span_id}\0".encode())
    return digest.digest()
