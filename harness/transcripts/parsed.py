"""The neutral shape every transcript dialect parses into, and the error a malformed one raises.

Owns `TranscriptError` (one line: `FILE: location: expected X, got Y`), the parsed values (`Call`,
`Turn`, `Output`, `Parsed`) and the small checks the dialect readers share (`Reader`). It never knows
a dialect's field names and never builds a scenario.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class TranscriptError(ValueError):
    """A transcript or a `--map` file is malformed. `str()` is one line:
    `file: location: expected X, got Y` (location like `messages[3].tool_calls[1].function.name`)."""

    def __init__(self, file: str, location: str, expected: str, got: Any = None, *, has_got: bool = True) -> None:
        detail = f"expected {expected}" + (f", got {show(got)}" if has_got else "")
        super().__init__(f"{file}: {location}: {detail}" if location else f"{file}: {detail}")
        self.file, self.location, self.expected = file, location, expected


class _Missing:
    """The value of a key the transcript does not have."""

    def __repr__(self) -> str:
        return "nothing (the key is missing)"


MISSING: Any = _Missing()


def show(value: Any) -> str:
    """A short, one-line rendering of an offending value for an error message."""
    if value is MISSING:
        return repr(value)
    if isinstance(value, Mapping):
        text = "an object with keys " + ", ".join(map(repr, list(value)[:6])) + (", ..." if len(value) > 6 else "")
        return text if value else "an empty object"
    if isinstance(value, list):
        return f"a list of {len(value)} item{'' if len(value) == 1 else 's'}"
    text = repr(value).replace("\n", "\\n")
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call as the model emitted it: `arguments` is the raw text, byte for byte."""

    id: str
    name: str
    arguments: str
    where: str  # its location in the transcript, for messages


@dataclass(frozen=True, slots=True)
class Turn:
    """The tool calls of one assistant turn, in model order; `position` is where the turn sits in
    the transcript (the index of its message or first item, to pair results with repeated ids)."""

    label: str
    calls: tuple[Call, ...]
    position: int


@dataclass(frozen=True, slots=True)
class Output:
    """A tool result the transcript holds for the call `call_id` (`is_error`: the transcript marks it
    failed). `value` is the text the model was shown (non-text content as its JSON text)."""

    call_id: str
    value: str
    is_error: bool
    where: str
    position: int


@dataclass(frozen=True)
class Parsed:
    """A transcript reduced to its turns and tool outputs, in transcript order."""

    turns: tuple[Turn, ...]
    outputs: tuple[Output, ...]
    dialect: str  # e.g. "OpenAI Chat Completions"
    warnings: tuple[str, ...] = field(default=())


class Reader:
    """Typed access to parsed JSON with the error location built up by the caller."""

    def __init__(self, file: str) -> None:
        self.file = file

    def fail(self, location: str, expected: str, got: Any = None, *, has_got: bool = True) -> TranscriptError:
        return TranscriptError(self.file, location, expected, got, has_got=has_got)

    def obj(self, value: Any, location: str, expected: str = "an object") -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(location, expected, value)
        return value

    def array(self, value: Any, location: str, expected: str = "a list") -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(location, expected, value)
        return value

    def required_string(self, parent: Mapping[str, Any], key: str, location: str, what: str) -> str:
        """`parent[key]` as a non-empty string; a missing key is reported as missing."""
        at = f"{location}.{key}" if location else key
        if key not in parent:
            raise self.fail(at, f"{what} (a non-empty string)", MISSING)
        value = parent[key]
        if not isinstance(value, str) or not value:
            raise self.fail(at, f"{what} (a non-empty string)", value)
        return value


def read_json(path: str | Path, file: str | None = None) -> Any:
    """The parsed JSON of a transcript file, or a TranscriptError naming the file (unreadable, not
    UTF-8, not JSON: line and column)."""
    name = file if file is not None else str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise TranscriptError(name, "", "a readable file", exc.strerror or str(exc)) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise TranscriptError(name, "", "UTF-8 text", has_got=False) from None
    return parse_json(text, name)


def parse_json(text: str, file: str) -> Any:
    """`json.loads(text)`, or a TranscriptError with the line and column of the first error."""
    if not text.strip():
        raise TranscriptError(file, "", "a JSON transcript, got an empty file", has_got=False)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TranscriptError(file, f"line {exc.lineno} column {exc.colno}", f"valid JSON ({exc.msg})",
                              has_got=False) from None
    except RecursionError:
        raise TranscriptError(file, "", "JSON nested less deeply", has_got=False) from None


def content_text(parts: Any) -> str:
    """What a tool result's content was: none as ""; a string as is; a list of text parts (`text`, `input_text`,
    `output_text`) joined with newlines; anything else (images, files) as its JSON text, so it is
    still a string the scenario file can hold."""
    if parts is None:
        return ""
    if isinstance(parts, str):
        return parts
    if isinstance(parts, list) and all(
        isinstance(p, Mapping) and isinstance(p.get("type"), str) and p.get("type") in _TEXT_TYPES
        and isinstance(p.get("text"), str) for p in parts
    ):
        return "\n".join(p["text"] for p in parts)
    return json.dumps(parts, ensure_ascii=False)


_TEXT_TYPES = frozenset({"text", "input_text", "output_text"})
