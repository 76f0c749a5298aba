"""The tool catalogue: which tools exist in a run, by name.

Owns lookup, the built-in set, per-scenario overrides (latency, a declared field that lies,
`stops_on_cancel`) and per-call results (a transcript's recorded return values, which replace what
the tool's behaviour returns while its touches stay). It never runs a tool.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Mapping
from dataclasses import replace
from typing import Any

from harness.model import JSONValue, ToolCall
from harness.tools import effects, files, home, remote, shell
from harness.tools.guard import Guarded, user_code
from harness.tools.modules import load_tools
from harness.tools.spec import Args, Behaviour, ToolIO, ToolSpec


class Catalogue(Mapping[str, ToolSpec]):
    """An immutable name -> ToolSpec mapping, iterated in name order, with per-call results."""

    __slots__ = ("_running", "_specs", "results")

    def __init__(self, specs: Mapping[str, ToolSpec], results: Mapping[str, JSONValue] | None = None) -> None:
        self._specs = {name: specs[name] for name in sorted(specs)}
        #: call id -> the value that call returns when it succeeds (instead of its behaviour's).
        self.results: Mapping[str, JSONValue] = dict(results or {})
        #: name -> the spec as a call runs it (`running`), made on first use: every call of every run asks.
        self._running: dict[str, ToolSpec] = {}

    def running(self, name: str) -> ToolSpec | None:
        """The spec a call of tool `name` runs with (`_running_spec`), or None for an unknown tool."""
        spec = self._running.get(name)
        if spec is None:
            found = self._specs.get(name)
            if found is None:
                return None
            spec = self._running[name] = _running_spec(found)
        return spec

    def __getitem__(self, name: str) -> ToolSpec:
        return self._specs[name]

    # `Mapping` would answer these through `__getitem__` and an exception: they run for every call.
    def get(self, name: str, default: Any = None) -> Any:
        return self._specs.get(name, default)

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)

    def replace_tool(self, spec: ToolSpec) -> Catalogue:
        return Catalogue({**self._specs, spec.name: spec}, self.results)

    def with_results(self, results: Mapping[str, JSONValue]) -> Catalogue:
        return Catalogue(self._specs, {**self.results, **results})

    def overridden(self, name: str, **changes: Any) -> Catalogue:
        return self.replace_tool(replace(self._specs[name], **changes))


#: Built-in behaviours whose values hold only str, int, bool, None, dict and list whatever the call's
#: arguments (read: none passes an argument's value or a float through), so an attempt digests their
#: values without looking at the types first (`harness.sim.trace.value_digest`). A behaviour wrapped or
#: replaced (options, a recorded result, a user's tool) is not one of these. tests/tools/test_plain_values.py
#: holds every built-in scenario's values of these to it.
PLAIN_VALUED: frozenset[Behaviour] = frozenset({
    files.read_file, files.write_file, files.write_file_atomic, files.patch, files.search_files, shell.run_tests,
    remote.web_search})

BUILTIN = Catalogue({spec.name: spec for module in (files, shell, remote, effects, home) for spec in module.SPECS})


def base_catalogue(tools_modules: tuple[str, ...] = ()) -> Catalogue:
    """The built-in tools plus those of the named Python modules, a later module's tool replacing an
    earlier one (or a built-in) of the same name. Raises `ToolsModuleError` for a module that cannot
    be used."""
    if not tools_modules:
        return BUILTIN
    specs = dict(BUILTIN.items())
    for name in tools_modules:
        specs.update((spec.name, spec) for spec in load_tools(name))
    return Catalogue(specs)


def prepare(call: ToolCall, catalogue: Mapping[str, ToolSpec]) -> tuple[ToolSpec, Args] | str:
    """The spec and parsed arguments of a call, or the error text a runtime would report."""
    if type(catalogue) is Catalogue:
        # `catalogue.running(call.name)`, its memo read first (from C: every attempt of every run asks).
        spec = catalogue._running.get(call.name) or catalogue.running(call.name)
    else:
        found = catalogue.get(call.name)
        spec = _running_spec(found) if found is not None else None
    if spec is None:
        return f"unknown tool {call.name!r}"
    args = call.parsed_arguments()
    if args is None:
        return "arguments are not a valid JSON object"
    results = getattr(catalogue, "results", None)
    if results and call.id in results:
        spec = replace(spec, behaviour=_Returning(spec.behaviour, results[call.id]))
    return spec, args


def _running_spec(spec: ToolSpec) -> ToolSpec:
    """`spec` as a call runs it: a user's Python tool guarded (what its code raises or returns that cannot
    be recorded is its error, `harness.tools.guard`), any other as it is. A `Guarded` keeps no state of a
    call, so one serves every call of the tool."""
    if user_code(spec.behaviour) and not spec.delegates:
        return replace(spec, behaviour=Guarded(spec.behaviour, spec.name))
    return spec


class _Returning:
    """A behaviour that acts like `behaviour` and returns `value` (a recorded result) if it succeeds."""

    __slots__ = ("behaviour", "value")

    def __init__(self, behaviour: Behaviour, value: JSONValue) -> None:
        self.behaviour, self.value = behaviour, value

    def __call__(self, args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
        yield from self.behaviour(args, io)
        return self.value
