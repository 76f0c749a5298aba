"""What a file may make the harness import or read: the one trust rule for scenario files,
reproducers and imported transcripts.

A file is data. The code it names (`tools_module`, `model = "pkg:fn"` or `[model] python`, `loop =
"pkg:attr"`, the same in each `[[agents]]`, a reproducer's `module:attr` scheduler) is imported only
when the user named that module, or a package holding it: on the command line (`--trust-module M`,
`--tools M`), in the Python call (`trust=[...]`, or the module object) or in the project's
configuration (`trusted-modules = [...]` under `[tool.harness]` in the pyproject.toml of the current
directory or, failing that, the nearest directory above it). Installed tool catalogues (entry points
of the `harness.tools` group) are trusted by being installed, and the harness's built-in scenarios
by being the harness's own. `[world] from_dir` reads only inside the scenario file's directory,
resolved after symlinks, or inside a directory the user allowed (`--allow-dir`, `Trust(dirs=...)`).

Owns `Trust`, which modules scenario data names and at which field (`named_code`), the refusal
(`UntrustedCode`: a `ScenarioError` naming the file, the field, the module and the flag to add), the
pyproject list and the check of a from_dir root. It never imports a module and never reads a tree
(`harness.scenario.tree` does).
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any, TypeAlias

from harness.scenario.model_load import code_modules
from harness.scenario.reader import ScenarioError

#: The configuration key, under `[tool.harness]` of pyproject.toml.
PYPROJECT_KEY = "trusted-modules"


@dataclass(frozen=True)
class Trust:
    """What the user vouched for: the modules (and packages) a file may import, and the directories
    beyond its own that its `from_dir` may read. `everything`: the harness's own data (a built-in
    scenario, a copy of a scenario already loaded)."""

    modules: tuple[str, ...] = ()
    dirs: tuple[str, ...] = ()
    everything: bool = field(default=False, repr=False)

    @classmethod
    def of(cls, value: TrustLike | None) -> Trust:
        """`value` as a `Trust`: one already, or module names and module objects (a single name or
        module stands for itself, never for its letters)."""
        if value is None:
            return cls()
        if isinstance(value, Trust):
            return value
        items: Iterable[Any] = [value] if isinstance(value, str | ModuleType) else value
        names = []
        for item in items:
            name = item.__name__ if isinstance(item, ModuleType) else item
            if not isinstance(name, str) or not name.strip():
                raise TypeError(f"trust= takes module names or modules, got {item!r:.60}")
            names.append(name.strip())
        return cls(tuple(dict.fromkeys(names)))

    def adding(self, modules: Iterable[str] = (), dirs: Iterable[str | Path] = ()) -> Trust:
        """This trust and `modules` and `dirs` too."""
        return Trust(tuple(dict.fromkeys([*self.modules, *modules])),
                     tuple(dict.fromkeys([*self.dirs, *(str(d) for d in dirs)])), self.everything)

    def allows(self, module: str) -> bool:
        """Whether `module` may be imported: named (it or a package holding it) by the caller or by
        the project's pyproject.toml (read only when the caller did not name it)."""
        return self.everything or _within(module, self.modules) or _within(module, project_modules())

    def allows_tree(self, root: Path, base: Path) -> bool:
        """Whether a from_dir tree at `root` may be read: inside `base` (the scenario file's
        directory) or an allowed directory, all resolved after symlinks."""
        if self.everything:
            return True
        try:
            real = root.resolve()
            roots = [base.resolve(), *(Path(d).expanduser().resolve() for d in self.dirs)]
        except (OSError, ValueError, RuntimeError):  # a NUL byte, a symlink loop: nothing to vouch for
            return False
        return any(real == allowed or real.is_relative_to(allowed) for allowed in roots)


#: What `trust=` accepts wherever a file is loaded.
TrustLike: TypeAlias = Trust | str | ModuleType | Iterable[str | ModuleType]

#: The harness's own data: its built-in scenarios, a scenario already loaded and copied.
VETTED = Trust(everything=True)


def _within(module: str, names: Iterable[str]) -> bool:
    return any(module == name or module.startswith(name + ".") for name in names)


class UntrustedCode(ScenarioError):
    """A file names code the user did not trust: the message names the file, the field, the module
    and what to add."""

    def __init__(self, file: str, field: str, module: str, *, kind: str = "scenario file", verb: str = "run",
                 alternative: str = "") -> None:
        ValueError.__init__(self, f"{file}: {field}: expected a module you trust, got {module!r} (code outside the "
                                  f"harness; a {kind} is data and imports nothing by itself): {verb} it with "
                                  f"--trust-module {module}{alternative} if you trust that code (in Python: "
                                  f"trust=[{module!r}]; for a project: {PYPROJECT_KEY} under [tool.harness] in its "
                                  "pyproject.toml)")
        self.file, self.field, self.expected, self.module = file, field, "code you trust", module


def named_code(data: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """(field, module) of every module scenario `data` would import: its tool modules (but installed
    catalogues, named by entry point) and the Python models and loop policies of its `[model]`,
    `loop` and `[[agents]]`. A malformed value is skipped: the loader names it."""
    found: list[tuple[str, str]] = []
    tools = data.get("tools_module", [])
    listed = [tools] if isinstance(tools, str) else tools if isinstance(tools, list) else []
    if listed:
        from harness.tools.modules import entry_point_modules

        installed = entry_point_modules()
        for i, name in enumerate(listed):
            if isinstance(name, str) and name.strip() and name not in installed:
                found.append((f"{prefix}tools_module" + (f"[{i}]" if isinstance(tools, list) else ""), name.strip()))
    return found + [(prefix + where, module) for where, module in code_modules(data)]


def check_code(data: Mapping[str, Any], file: str, trust: Trust, *, prefix: str = "", kind: str = "scenario file",
               verb: str = "run") -> None:
    """Refuse (`UntrustedCode`) the first module `data` names that `trust` does not allow."""
    if trust.everything:
        return
    for where, module in named_code(data, prefix):
        if not trust.allows(module):
            raise UntrustedCode(file, where, module, kind=kind, verb=verb)


def project_file(start: Path | None = None) -> Path | None:
    """The project's pyproject.toml: in `start` (default: the current directory) or the nearest
    directory above it that has one."""
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def project_modules(start: Path | None = None) -> tuple[str, ...]:
    """`trusted-modules` under `[tool.harness]` of the project's pyproject.toml (`project_file`); ()
    when there is none. A malformed list is a `ScenarioError` naming the file and the key."""
    try:
        path = project_file(start)
        if path is None:
            return ()
        stat = path.stat()
    except OSError:
        return ()
    return _read_project(str(path), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=8)
def _read_project(path: str, mtime_ns: int, size: int) -> tuple[str, ...]:
    """The list, read once per version of the file (the key carries its modification time and size)."""
    where = f"tool.harness.{PYPROJECT_KEY}"
    try:
        data = tomllib.loads(Path(path).read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ScenarioError(path, where, "a readable pyproject.toml (it lists the modules scenario files may "
                            f"import), got {type(exc).__name__}", has_got=False) from None
    tool = data.get("tool", {})
    table = tool.get("harness", {}) if isinstance(tool, Mapping) else {}
    value = table.get(PYPROJECT_KEY, []) if isinstance(table, Mapping) else []
    if not isinstance(value, list) or not all(isinstance(m, str) and m.strip() for m in value):
        raise ScenarioError(path, where, 'a list of module or package names, e.g. ["acme", "tests.tools"]', value)
    return tuple(m.strip() for m in value)
