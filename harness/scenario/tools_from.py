"""`tools_from = "catalogue.toml"`: a scenario's tools read from a catalogue file beside it.

Owns reading a catalogue (a TOML file of `[tools.NAME]` tables only, such as `harness tools import mcp`
writes) relative to the scenario file, inside its directory unless trusted otherwise (as `from_dir`),
and merging its tables under the scenario's own: a scenario's `[tools.NAME]` adds keys to the
catalogue's table of that name, or replaces them (`does` the user completes beside an imported
catalogue that stays as written). A catalogue's mistakes are named by the catalogue file. It never
builds tools (`harness.scenario.tools_load`).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.scenario.reader import Reader, ScenarioError
from harness.scenario.tools_load import parse_tools
from harness.scenario.trust import Trust
from harness.tools.catalogue import Catalogue


def tools_from(r: Reader, value: Any, own: Any, trust: Trust, base: Catalogue) -> dict[str, Any]:
    """The `[tools]` tables of the catalogues `value` names (a path or a list, in order, a later one winning
    per tool), with the scenario's `own` tables merged over them key by key."""
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
        raise r.fail("tools_from", 'a catalogue file relative to the scenario (or a list of them), e.g. '
                     '"catalogue.toml"', value)
    base_dir = Path(r.file).parent if Path(r.file).is_file() else Path.cwd()
    merged: dict[str, Any] = {}
    for i, name in enumerate(names):
        where = "tools_from" if isinstance(value, str) else f"tools_from[{i}]"
        path = base_dir / name
        if not trust.allows_tree(path, base_dir):
            raise r.fail(where, f"a catalogue inside the scenario file's directory ({base_dir.resolve()}), got "
                         f"{name!r}; if you mean it to be read, add --allow-dir for its directory", has_got=False)
        tools = _read(r, where, path)
        parse_tools(Reader(str(path)), tools, base)  # its own mistakes, named by its own file
        for tool, table in tools.items():
            merged[tool] = {**merged.get(tool, {}), **table}
    if not isinstance(own, Mapping):
        raise r.fail("tools", "a table of tool name = table", own)
    for tool, table in own.items():
        merged[tool] = {**merged.get(tool, {}), **table} if isinstance(table, Mapping) else table
    return merged


def _read(r: Reader, where: str, path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise r.fail(where, f"a readable catalogue file ({path}: {exc.strerror or exc})", has_got=False) from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ScenarioError(str(path), "(syntax)", f"valid TOML in UTF-8 ({exc})", has_got=False) from None
    catalogue = Reader(str(path)).table(data, "", {"tools"})
    tools = catalogue.get("tools", {})
    if not isinstance(tools, Mapping) or not all(isinstance(t, Mapping) for t in tools.values()):
        raise ScenarioError(str(path), "tools", "a table of tool name = table", has_got=False)
    return dict(tools)
