r"""The V4A patch format of hermes' `patch` tool, as text: parsed, and its hunks applied to a string.

Owns `parse_v4a` (hermes' `tools/patch_parser.py` `parse_v4a_patch`: the `*** Update/Add/Delete
File:` and `*** Move File: a -> b` operations between `*** Begin Patch` and `*** End Patch`, with
hermes' parse errors), `apply_hunks` (an Update's hunks applied to a file's content, with hermes'
failure wording), `header_paths` (every path the headers name, for the traversal guard) and
`already_applied` (hermes' `is_already_applied`, which replace mode shares). Headers match
`***\s*(Update|Add|Delete)\s+File:\s*p` and `***\s*Move\s+File:\s*a\s*->\s*b` at the start of a
line, so `***Update File:p` and `*** Update  File:  p` count; `*** Move to:` is a parse error in
hermes ("not supported; rename with '*** Move File: a -> b'") and the destination of an Update in the
older apply_patch dialect (`hermes=False`). It never reads or writes a world and never takes time:
the `patch` tool (`harness.tools.files`) does both.
"""

from __future__ import annotations

import re

from harness.tools.fuzzy import fuzzy_replace
from harness.tools.spec import ToolError

_OP_HEADERS = (
    ("update", re.compile(r"\*\*\*\s*Update\s+File:\s*(.+)")),
    ("add", re.compile(r"\*\*\*\s*Add\s+File:\s*(.+)")),
    ("delete", re.compile(r"\*\*\*\s*Delete\s+File:\s*(.+)")),
    ("move", re.compile(r"\*\*\*\s*Move\s+File:\s*(.+?)\s*->\s*(.+)")),
)
_BEGIN = re.compile(r"^\*\*\*\s*Begin\s+Patch\s*$")
_END = re.compile(r"^\*\*\*\s*End\s+Patch\s*$")
_END_OF_FILE = re.compile(r"^\*\*\*\s*End\s+of\s+File\s*$")
_MOVE_TO = re.compile(r"^\*\*\*\s*Move\s+to:\s*(.*)$")
_HINT = re.compile(r"@@\s*(.+?)\s*@@")


def already_applied(content: str, old: str, new: str) -> bool:
    """`is_already_applied`: a non-trivial `new` is present and `old` is gone."""
    return len(new.strip()) >= 8 and new in content and (old == new or old not in content)


class _Hunk:
    """One `@@` hunk: its context hint and its ` `/`-`/`+` lines as (prefix, text)."""

    __slots__ = ("hint", "lines")

    def __init__(self, hint: str | None = None) -> None:
        self.hint = hint
        self.lines: list[tuple[str, str]] = []

    def search(self) -> str:
        return "\n".join(text for prefix, text in self.lines if prefix != "+")

    def replacement(self) -> str:
        return "\n".join(text for prefix, text in self.lines if prefix != "-")


class Operation:
    """One `*** ... File:` section of a V4A patch."""

    __slots__ = ("hunks", "kind", "move_to", "path")

    def __init__(self, kind: str, path: str, move_to: str | None = None) -> None:
        self.kind = kind
        self.path = path
        self.move_to = move_to  # Move File's destination; Move to's, in the apply_patch dialect
        self.hunks: list[_Hunk] = []

    def added(self, hermes: bool) -> str:
        lines = [text for hunk in self.hunks for prefix, text in hunk.lines if prefix == "+"]
        return "\n".join(lines) if hermes else "".join(line + "\n" for line in lines)


def parse_v4a(body: str, *, hermes: bool = True) -> list[Operation]:
    """`parse_v4a_patch`: the operations between `*** Begin Patch` and `*** End Patch` (both
    optional). Raises ToolError with hermes' "Failed to parse patch: Parse error: ..." text."""
    lines = [line[:-1] if line.endswith("\r") else line for line in body.split("\n")]
    start, end = -1, len(lines)
    for index, line in enumerate(lines):
        if _BEGIN.match(line):
            start = index
        elif _END.match(line):
            end = index
            break
    operations: list[Operation] = []
    errors: list[str] = []
    current: Operation | None = None
    hunk: _Hunk | None = None

    def flush() -> None:
        if current is not None and hunk is not None and hunk.lines:
            current.hunks.append(hunk)

    for line in lines[start + 1:end]:
        header = next(((kind, m) for kind, rx in _OP_HEADERS if (m := rx.match(line))), None)
        if header is not None:
            flush()
            kind, match = header
            current = Operation(kind, match.group(1).strip(),
                                 match.group(2).strip() if kind == "move" else None)
            operations.append(current)
            hunk = _Hunk() if kind == "add" else None
            if kind in ("delete", "move"):
                current = None  # complete: any lines that follow belong to nothing
        elif _END_OF_FILE.match(line):
            continue
        elif (move_to := _MOVE_TO.match(line)) and current is not None:
            if hermes:
                errors.append(f"'*** Move to: {move_to.group(1).strip()}' is not supported; rename with "
                              f"'*** Move File: {current.path} -> {move_to.group(1).strip()}' and put any "
                              "edits in their own '*** Update File:' block")
            else:
                current.move_to = move_to.group(1).strip()
        elif line.startswith("@@"):
            if current is not None:
                flush()
                hint = _HINT.match(line)
                hunk = _Hunk(hint.group(1) if hint else None)
        elif current is not None and line:  # hermes skips blank lines
            if hunk is None:
                hunk = _Hunk()
            if line[0] in "+- ":
                hunk.lines.append((line[0], line[1:]))
            elif line[0] != "\\":  # "\ No newline at end of file"
                hunk.lines.append((" ", line))  # an implicit context line
    flush()
    for operation in operations:
        if not operation.path:
            errors.append("Operation with empty file path")
        if operation.kind == "update" and not operation.hunks:
            errors.append(f"UPDATE {operation.path!r}: no hunks found")
    if not hermes and not operations:
        raise ToolError("patch: no *** Add/Update/Delete File: sections in the V4A patch")
    if errors:
        raise ToolError("Failed to parse patch: Parse error: " + "; ".join(errors))
    return operations


def apply_hunks(content: str, operation: Operation, *, fuzzy: bool = False) -> tuple[str, str | None]:
    """The content after the operation's hunks, in order, or the first failure (hermes' wording).
    `fuzzy`: a hunk whose text is not found exactly once goes through hermes' fuzzy strategies
    (`harness.tools.fuzzy`), as hermes' `_apply_update` does."""
    for number, hunk in enumerate(operation.hunks, start=1):
        search, replacement = hunk.search(), hunk.replacement()
        if search == replacement:
            continue  # a context-only anchor: inert
        if not search:  # addition only: after the hint's line, else at the end
            if hunk.hint:
                occurrences = content.count(hunk.hint)
                if occurrences == 0:
                    return content, f"addition-only hunk context hint '{hunk.hint}' not found"
                if occurrences > 1:
                    return content, (f"addition-only hunk context hint '{hunk.hint}' is ambiguous "
                                     f"({occurrences} occurrences)")
                eol = content.find("\n", content.find(hunk.hint))
                content = (content + "\n" + replacement if eol == -1 else
                           content[:eol + 1] + replacement + "\n" + content[eol + 1:])
            else:
                content = content.rstrip("\n") + "\n" + replacement + "\n"
            continue
        count = content.count(search)
        if count == 1:
            content = content.replace(search, replacement, 1)
            continue
        if fuzzy:
            patched, _, _, problem = fuzzy_replace(content, search, replacement, False)
            if problem is None:
                content = patched
                continue
        if count == 0 and already_applied(content, search, replacement):
            continue  # hermes skips a hunk that already landed
        label = f"'{hunk.hint}'" if hunk.hint else "(no hint)"
        why = ("Could not find a match for old_string in the file" if count == 0 else
               f"Found {count} matches for old_string. Provide more context to make it unique")
        return content, f"hunk {number} {label} not found — {why}"
    return content, None


_HEADER_PATHS = re.compile(r"^\*\*\*\s*(?:Update|Add|Delete)\s+File:\s*(.+)$", re.MULTILINE)
_MOVE_PATHS = re.compile(r"^\*\*\*\s*Move\s+File:\s*(.+?)\s*->\s*(.+)$", re.MULTILINE)


def header_paths(body: str) -> list[str]:
    """Every path the headers of a V4A body name (both sides of a move), as `patch_tool` finds them
    for its traversal and sensitive-path guards."""
    paths = [m.group(1).strip() for m in _HEADER_PATHS.finditer(body)]
    paths += [m.group(i).strip() for m in _MOVE_PATHS.finditer(body) for i in (1, 2)]
    return [path for path in paths if path]

