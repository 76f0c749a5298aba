"""Tools written in Python: finding a user's module of `ToolSpec`s by name.

Owns the lookup of a tools module (an installed package's entry point in the group `harness.tools`
first, then an importable module path), the module protocol (a `TOOLS` attribute: an iterable of
`ToolSpec`, or a function returning one) and the errors that say which module could not be used and
why. Scenario files only ever *name* a module; the name is resolved here, by import, the way a
scheduler named `pkg.mod:Class` is. It never builds a catalogue (see `scenario.load`).

    # mypkg/tools.py
    from harness.tools import Declared, ToolSpec

    def query_db(args, io):
        yield 0.5
        return {"rows": io.read(f"/db/{args['table']}.csv").splitlines()}

    TOOLS = [ToolSpec("query_db", "Run a query", Declared(read_only=True), query_db)]
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Iterable
from functools import cache
from typing import Any

from harness.sim.realtime import sigint_mark
from harness.tools.guard import described, users_ctrl_c
from harness.tools.spec import ToolSpec

ENTRY_POINT_GROUP = "harness.tools"


class ToolsModuleError(LookupError):
    """A named tools module cannot be imported or does not provide tools; the message says which and why."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"tools module {name!r}: {reason}")
        self.name, self.reason = name, reason


def entry_point_names() -> list[str]:
    """Names of the tool catalogues installed packages ship (entry point group `harness.tools`)."""
    return sorted(entry_point_modules())


def entry_point_modules() -> dict[str, str]:
    """Each installed tool catalogue's name -> the module its entry point names."""
    return {ep.name: ep.module for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


def load_tools(name: str) -> tuple[ToolSpec, ...]:
    """The tools a module provides, in the order it lists them; cached per name (modules are imported once)."""
    return _load(name)


@cache
def _load(name: str) -> tuple[ToolSpec, ...]:
    if not isinstance(name, str) or not name or name != name.strip():
        raise ToolsModuleError(str(name), "expected a module name such as 'mypkg.tools' or an installed catalogue")
    provider: Any
    mark = sigint_mark()
    entry = [ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
    if entry:
        try:
            provider = entry[0].load()
        except BaseException as exc:  # the user's package: any import failure is theirs to see
            _not_ctrl_c(exc, mark)
            raise ToolsModuleError(name, f"entry point {entry[0].value!r} cannot be loaded "
                                   f"({described(exc)})") from None
    else:
        try:
            provider = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
                installed = entry_point_names()
                hint = f"; installed catalogues: {', '.join(installed)}" if installed else ""
                raise ToolsModuleError(name, f"no module named {exc.name!r} (is it installed or on "
                                       f"PYTHONPATH?){hint}") from None
            raise ToolsModuleError(name, f"importing it failed ({described(exc)})") from None
        except BaseException as exc:  # SystemExit too: a module must not choose the harness's exit code
            _not_ctrl_c(exc, mark)
            raise ToolsModuleError(name, f"importing it failed ({described(exc)})") from None
    if not callable(provider) and hasattr(provider, "TOOLS"):
        provider = provider.TOOLS
    if callable(provider) and not isinstance(provider, ToolSpec):
        try:
            provider = provider()
        except BaseException as exc:
            _not_ctrl_c(exc, mark)
            raise ToolsModuleError(name, f"its tool function failed ({described(exc)})") from None
    return _specs(name, provider)


def _not_ctrl_c(exc: BaseException, mark: int) -> None:
    """Re-raise the user's Ctrl-C; anything else the module's code raised, `SystemExit` and a
    `KeyboardInterrupt` of its own included, is its failure to load."""
    if users_ctrl_c(exc, mark):
        raise exc


def _specs(name: str, provider: Any) -> tuple[ToolSpec, ...]:
    if isinstance(provider, ToolSpec):
        provider = [provider]
    if isinstance(provider, str | bytes) or not isinstance(provider, Iterable):
        raise ToolsModuleError(name, "expected a TOOLS attribute: a list of harness.tools.ToolSpec (or a function "
                               f"returning one), got {type(provider).__name__}")
    specs = list(provider)
    seen: set[str] = set()
    for position, spec in enumerate(specs):
        if not isinstance(spec, ToolSpec):
            raise ToolsModuleError(name, f"TOOLS[{position}] is {type(spec).__name__}, not harness.tools.ToolSpec")
        if spec.name in seen:
            raise ToolsModuleError(name, f"two tools are named {spec.name!r}")
        seen.add(spec.name)
    if not specs:
        raise ToolsModuleError(name, "TOOLS is empty")
    return tuple(specs)


def module_of(spec: ToolSpec, candidates: Iterable[str]) -> str | None:
    """Which of the named modules provides exactly `spec` (by name and behaviour), if any."""
    for name in candidates:
        try:
            provided = load_tools(name)
        except ToolsModuleError:
            continue
        if any(p.name == spec.name and p.behaviour is spec.behaviour for p in provided):
            return name
    return None
