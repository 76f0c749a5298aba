"""Python tools whose own code fails, and their fixed versions (issue 26: user code is judged as
user code). Each replaces the built-in `read_file` (same declared metadata and parameters), so any
scenario that reads files runs them: `harness run compare-three-files --tools tests.tools.broken`.

`TOOLS` raises; the other lists are importable as `tests.tools.broken:NAME`-style modules through
`module()`. It never judges a run.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import replace
from typing import Any

from harness.tools import BUILTIN, ToolError, ToolIO, ToolSpec


def _reading(result: Callable[[str], Any]) -> Callable[[Any, ToolIO], Generator[float, None, Any]]:
    def behaviour(args: Any, io: ToolIO) -> Generator[float, None, Any]:
        text = io.read(args["path"])
        yield 1.0
        return result(text)

    return behaviour


def _raises(text: str) -> Any:
    raise ValueError(f"cannot parse {len(text)} bytes")


def _exits(text: str) -> Any:
    raise SystemExit(0)


def _interrupts(text: str) -> Any:
    raise KeyboardInterrupt  # raised by the tool's code, not a Ctrl-C


def _fails_on_purpose(text: str) -> Any:
    raise ToolError("permission denied")  # how a tool reports failure: the scheduler's to handle


#: What each variant's `read_file` returns (or raises) given the file's text.
VARIANTS: dict[str, Callable[[str], Any]] = {
    "raises": _raises, "exits": _exits, "interrupts": _interrupts,
    "nan": lambda text: {"size": float("nan")}, "set": lambda text: set(text.splitlines()),
    "object": lambda text: object(), "int-key": lambda text: {1: text},
    "fixed": lambda text: {"content": text}, "fails-on-purpose": _fails_on_purpose,
}


def read_file(variant: str) -> ToolSpec:
    return replace(BUILTIN["read_file"], behaviour=_reading(VARIANTS[variant]))


TOOLS = [read_file("set")]
