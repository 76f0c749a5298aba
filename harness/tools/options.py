"""Options of the catalogue's file tools: how a scenario asks for hermes' own way of doing a thing.

Owns which options each built-in tool takes, their values and defaults, and `configure`, which gives a
tool of the catalogue the behaviour its options select (a `Configured` behaviour: the built-in function
with the options bound, equal to another with the same function and options, so a reproducer's
scenario compares equal to the one it came from). The defaults are the catalogue's behaviour, exactly:
a scenario that names no option runs as it always did. It never loads a scenario file
(`harness.scenario.tools_load` reads `[tools.NAME]` keys) and never runs a tool.

- read_file `dedup` (false, true): hermes' read cache, "File unchanged since last read" while the mtime
  has not moved; `track_reads` (false, true): remembers each read's mtime (implied by `dedup` and by
  write_file's `stale_check`);
- write_file `write_mode` ("in-place", "atomic"): atomic is hermes' write (symlinks resolved, a temporary
  file renamed over the file); `stale_check` (false, true): refuses, unless the call says `force`, to
  overwrite a file changed since this session read it;
- patch `write_mode` (as write_file's, for replace mode) and `match` ("exact", "fuzzy"): replace mode
  falls back through hermes' fuzzy strategies when the exact text is not found.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import replace
from typing import Any

from harness.model import JSONValue
from harness.tools import files, hermes_files
from harness.tools.spec import Args, ToolIO, ToolSpec

#: tool -> option -> its values (the first is the default).
OPTIONS: dict[str, dict[str, tuple[Any, ...]]] = {
    "read_file": {"dedup": (False, True), "track_reads": (False, True)},
    "write_file": {"write_mode": ("in-place", "atomic"), "stale_check": (False, True)},
    "patch": {"write_mode": ("in-place", "atomic"), "match": ("exact", "fuzzy")},
}


class Configured:
    """A built-in behaviour with options bound: `function(args, io, **options)`."""

    __slots__ = ("function", "options")

    def __init__(self, function: Any, options: tuple[tuple[str, Any], ...]) -> None:
        self.function, self.options = function, options

    def __call__(self, args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
        result: Generator[float, None, JSONValue] = self.function(args, io, **dict(self.options))
        return result

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Configured) and (self.function, self.options) == (other.function, other.options)

    def __hash__(self) -> int:
        return hash(self.options)

    def __repr__(self) -> str:
        return f"Configured({getattr(self.function, '__name__', self.function)}, {dict(self.options)})"


def builtin_behaviour(tool: str) -> Any:
    """The catalogue's own behaviour of a tool that takes options."""
    return {"read_file": files.read_file, "write_file": files.write_file, "patch": files.patch}.get(tool)


def configured_behaviour(tool: str) -> Any:
    """The function a tool's options are bound to."""
    return {"read_file": hermes_files.read_file, "write_file": hermes_files.write_file, "patch": files.patch}[tool]


def defaults(tool: str) -> dict[str, Any]:
    return {name: values[0] for name, values in OPTIONS.get(tool, {}).items()}


def configure(spec: ToolSpec, options: Mapping[str, Any]) -> ToolSpec:
    """`spec` (a built-in tool, as the catalogue has it) with `options`; those equal to their default
    are dropped, and with none left the spec is the catalogue's own. Raises ValueError for an option
    the tool does not take or a value it does not know."""
    if spec.behaviour is not builtin_behaviour(spec.name) and not isinstance(spec.behaviour, Configured):
        raise ValueError(f"options are for the catalogue's own {spec.name} (this one is another tool of its name)")
    known = OPTIONS.get(spec.name, {})
    chosen: dict[str, Any] = {}
    for name, value in options.items():
        if name not in known:
            raise ValueError(f"{spec.name} takes no option {name!r}")
        if value not in known[name] or isinstance(value, bool) != isinstance(known[name][0], bool):
            raise ValueError(f"{spec.name}.{name}: one of {', '.join(map(_shown, known[name]))}")
        if value != known[name][0]:
            chosen[name] = value
    if spec.name == "read_file" and chosen.get("dedup"):
        chosen.pop("track_reads", None)  # the cache records every read it makes
    bound = tuple(sorted(chosen.items()))
    if not bound:
        return replace(spec, behaviour=builtin_behaviour(spec.name), options=())
    return replace(spec, behaviour=Configured(configured_behaviour(spec.name), bound), options=bound)


def _shown(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else f'"{value}"'
