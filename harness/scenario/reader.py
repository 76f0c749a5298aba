"""Reading a scenario file's data field by field: `Reader`, and the `ScenarioError` it raises.

Owns the error every part of loading raises (one line: `file: field: expected X, got Y`), the checks
every table shares (a table with only known keys, the closest valid one named; strings, booleans,
counts, absolute paths, latencies, failure models) and the guard against text no fingerprint can hold
and data nested absurdly deep. It never knows what a scenario's tables mean: `harness.scenario.load`
and the `*_load` modules beside it do.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from functools import partial
from typing import Any

from harness.faults.failures import FailureModel, FailureSpecError, parse_failure
from harness.faults.latency import LatencyModel, LatencySpecError, parse_latency
from harness.suggest import below, check_keys


class ScenarioError(ValueError):
    """A scenario file is malformed. `str()` is one line: `file: field: expected X, got Y`."""

    def __init__(self, file: str, field: str, expected: str, got: Any = None, *, has_got: bool = True) -> None:
        detail = f"expected {expected}" + (f", got {_show(got)}" if has_got else "")
        super().__init__(f"{file}: {field}: {detail}")
        self.file, self.field, self.expected = file, field, expected


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class Reader:
    """Field-by-field validation with the error location built up as it descends."""

    def __init__(self, file: str) -> None:
        self.file = file

    def fail(self, field: str, expected: str, got: Any = None, *, has_got: bool = True) -> ScenarioError:
        return ScenarioError(self.file, field, expected, got, has_got=has_got)

    def table(self, value: Any, field: str, allowed: set[str]) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(field, "a table", value)
        check_keys(value, allowed, field, partial(ScenarioError, self.file, has_got=False))
        return value

    def string(self, value: Any, field: str, *, nonempty: bool = True) -> str:
        if not isinstance(value, str) or (nonempty and not value):
            raise self.fail(field, "a non-empty string" if nonempty else "a string", value)
        return value

    def name(self, value: Any, field: str) -> str:
        """A name shown on terminals and in file and command names: no control characters (a NUL cannot
        be in a path or an argument, an escape sequence would repaint the terminal)."""
        text = self.string(value, field)
        if any(ord(c) < 32 or ord(c) == 127 for c in text):
            raise self.fail(field, "a name without control characters (NUL, newline, escape...)", value)
        return text

    def boolean(self, value: Any, field: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(field, "true or false", value)
        return value

    def positive(self, value: Any, field: str) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise self.fail(field, "a positive integer", value)
        return value

    def non_negative(self, value: Any, field: str) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise self.fail(field, "a whole number of milliseconds >= 0", value)
        return value

    def abs_path(self, value: Any, field: str) -> str:
        path = self.string(value, field)
        if not path.startswith("/"):
            raise self.fail(field, "an absolute path (starting with /)", value)
        normal = posixpath.normpath(path)
        if normal.count("/") > MAX_PATH_DEPTH:
            raise self.fail(field, f"a path at most {MAX_PATH_DEPTH} directories deep", value)
        return normal

    def failure(self, value: Any, field: str) -> FailureModel:
        try:
            return parse_failure(value)
        except FailureSpecError as exc:
            raise ScenarioError(self.file, below(field, exc.field), str(exc), has_got=False) from None

    def latency(self, value: Any, field: str) -> LatencyModel:
        try:
            return parse_latency(value)
        except LatencySpecError as exc:
            raise ScenarioError(self.file, below(field, exc.field), str(exc).removeprefix("expected "),
                                has_got=False) from None


#: Deeper than this, a scenario is not a workload but an attack on the loader (and on json.dumps).
MAX_DEPTH = 64
#: A world path deeper than this is refused: the world is walked recursively (digests, diffs), and a
#: path a thousand directories deep would end a run in a RecursionError instead of a verdict.
MAX_PATH_DEPTH = 256


def check_text(r: Reader, value: Any, field: str, depth: int) -> None:
    """Every string is text UTF-8 can carry (no lone surrogates: they cannot be hashed into a
    fingerprint or written to a reproducer), and nothing nests absurdly deep."""
    if depth > MAX_DEPTH:
        raise r.fail(field or "(top level)", f"data nested at most {MAX_DEPTH} levels deep", has_got=False)
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise r.fail(field or "(top level)", "text without lone surrogates (\\ud800-\\udfff cannot be "
                         "encoded as UTF-8)", value) from None
    elif isinstance(value, Mapping):
        for key, item in value.items():
            check_text(r, key, field or "(top level)", depth + 1)
            check_text(r, item, f"{field}.{key}" if field else str(key), depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            check_text(r, item, f"{field}[{i}]", depth + 1)
