"""The answer to a name that is not one of the valid ones: the closest valid name, and the valid list.

Owns the one way a typo is told apart and named wherever users spell names: a tool, an argument of a
tool, a key of a scenario file's table. `closest` is difflib's best match (its default cutoff, 0.6),
`did_you_mean` the hint as messages spell it, and `check_keys` the unknown-key check every table of
a data file goes through: it raises an error naming the key's path, the valid keys and the closest.
It never decides which names are valid (its callers do) and imports nothing of the harness, so every
layer may use it.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any


class FieldError(ValueError):
    """Data that does not fit its format: `field` is where (a key path such as `tools.q.does[0].op`),
    `expected` what should be there."""

    def __init__(self, field: str, expected: str) -> None:
        super().__init__(f"{field}: expected {expected}" if field else f"expected {expected}")
        self.field, self.expected = field, expected


class SpecError(ValueError):
    """A data spelling is wrong (a latency, a failure, a fault plan): the message says what was
    expected, `field` which key it is about, below where parsing began (`lognormal.sigm`), if one."""

    def __init__(self, expected: str, field: str = "") -> None:
        super().__init__(expected)
        self.field = field


def closest(name: str, valid: Iterable[str]) -> str | None:
    """The valid name `name` most likely misspells, or None when none is close."""
    found = difflib.get_close_matches(name, sorted(valid), n=1)
    return found[0] if found else None


def did_you_mean(name: str, valid: Iterable[str]) -> str:
    """`"did you mean 'x'? "` for the closest valid name, or `""`: the start of a parenthesis."""
    found = closest(name, valid)
    return f"did you mean {found!r}? " if found is not None else ""


def below(field: str, key: str) -> str:
    """The path of `key` inside the table at `field` (`""` is the top level)."""
    return f"{field}.{key}" if field and key else field or key


def unknown_key(table: Mapping[str, Any], allowed: Collection[str]) -> tuple[str, str] | None:
    """The first key of `table` (in name order) that `allowed` lacks, and what was expected instead;
    None when every key is allowed."""
    unknown = sorted(str(key) for key in table if key not in allowed)
    if not unknown:
        return None
    hint = did_you_mean(unknown[0], allowed).strip()
    return unknown[0], f"one of the keys {', '.join(sorted(allowed))} (unknown key{'; ' + hint if hint else ''})"


def check_keys(table: Any, allowed: Collection[str], field: str = "",
               error: Callable[..., Exception] = FieldError) -> None:
    """Raise `error(field=PATH, expected=TEXT)` for the first key of `table` that `allowed` lacks
    (a value that is not a table has no keys: its caller says what it expected instead)."""
    if not isinstance(table, Mapping):
        return
    found = unknown_key(table, allowed)
    if found is not None:
        raise error(field=below(field, found[0]), expected=found[1])
