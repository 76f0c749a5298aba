"""The tool catalogue: which tools exist in a run, by name.

Owns lookup, the built-in set and per-scenario overrides (latency, a declared field that lies,
`stops_on_cancel`). It never runs a tool.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from harness.model import ToolCall
from harness.tools import effects, files, home, remote, shell
from harness.tools.spec import Args, ToolSpec


class Catalogue(Mapping[str, ToolSpec]):
    """An immutable name -> ToolSpec mapping, iterated in name order."""

    __slots__ = ("_specs",)

    def __init__(self, specs: Mapping[str, ToolSpec]) -> None:
        self._specs = {name: specs[name] for name in sorted(specs)}

    def __getitem__(self, name: str) -> ToolSpec:
        return self._specs[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)

    def replace_tool(self, spec: ToolSpec) -> Catalogue:
        return Catalogue({**self._specs, spec.name: spec})

    def overridden(self, name: str, **changes: Any) -> Catalogue:
        return self.replace_tool(replace(self._specs[name], **changes))


BUILTIN = Catalogue({spec.name: spec for module in (files, shell, remote, effects, home) for spec in module.SPECS})


def prepare(call: ToolCall, catalogue: Mapping[str, ToolSpec]) -> tuple[ToolSpec, Args] | str:
    """The spec and parsed arguments of a call, or the error text a runtime would report."""
    spec = catalogue.get(call.name)
    if spec is None:
        return f"unknown tool {call.name!r}"
    args = call.parsed_arguments()
    if args is None:
        return "arguments are not a valid JSON object"
    return spec, args
