"""Finding scenarios by name: the built-in `scenarios/` directory, or a path to a file.

Owns the search order, the error for an unknown name (which lists the valid ones) and the cache of
built-in scenarios, which is checked on every lookup: a cached value changed in place (frozen
dataclasses still yield to `object.__setattr__`) is read from its file again, so no run sees what an
earlier one did to it. It never parses a file itself (see `load`).
"""

from __future__ import annotations

from dataclasses import fields
from functools import lru_cache
from pathlib import Path
from typing import Any

from harness.scenario.load import load_scenario
from harness.scenario.spec import Scenario
from harness.scenario.trust import VETTED, TrustLike


class UnknownScenarioError(LookupError):
    def __init__(self, name: str, valid: list[str]) -> None:
        super().__init__(f"unknown scenario {name!r}; valid: {', '.join(valid)} (or a path to a .toml file)")
        self.name, self.valid = name, valid


class ScenarioFileNotFoundError(UnknownScenarioError):
    """A scenario named by its path (it contains `/` or ends with `.toml`) that is not a file: said
    as such, not as an unknown built-in name."""

    def __init__(self, path: str, valid: list[str]) -> None:
        problem = "a directory" if Path(path).is_dir() else "no such file"
        LookupError.__init__(self, f"{path}: (file): expected a scenario file (.toml), got {problem} (built-in "
                                   "scenarios are named without a path: `harness list scenarios`)")
        self.name, self.valid = path, valid


def builtin_dir() -> Path:
    """Where the built-in scenarios live: inside an installed wheel, or the source checkout."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "_builtin_scenarios", package.parent / "scenarios"):
        if candidate.is_dir():
            return candidate
    return package.parent / "scenarios"


def scenario_names() -> list[str]:
    return sorted(p.stem for p in builtin_dir().glob("*.toml"))


def find_scenario(name_or_path: str, *, tools_modules: tuple[str, ...] = (), trust: TrustLike | None = None
                  ) -> Scenario:
    """A built-in scenario by name, or a scenario file by path; `tools_modules` adds Python tool
    modules (`--tools`) to those the file names. A file imports only the modules `trust` (or
    `tools_modules`, or the project's pyproject.toml) names and reads `from_dir` only inside its own
    directory or `trust.dirs` (`harness.scenario.trust`); a built-in is the harness's own, trusted."""
    candidate = Path(name_or_path)
    if name_or_path.endswith(".toml") or "/" in name_or_path:
        if not candidate.is_file():
            raise ScenarioFileNotFoundError(name_or_path, scenario_names())
        return load_scenario(candidate, tools_modules=tools_modules, trust=trust)
    scenario, seal = _load_builtin(name_or_path, tools_modules)
    if _seal(scenario) != seal:  # changed in place since it was loaded: never hand that out again
        _load_builtin.cache_clear()
        scenario, _ = _load_builtin(name_or_path, tools_modules)
    return scenario


@lru_cache(maxsize=64)
def _load_builtin(name: str, tools_modules: tuple[str, ...] = ()) -> tuple[Scenario, tuple[Any, ...]]:
    path = builtin_dir() / f"{name}.toml"
    if not path.is_file():
        raise UnknownScenarioError(name, scenario_names())
    scenario = load_scenario(path, tools_modules=tools_modules, trust=VETTED)
    return scenario, _seal(scenario)


def _seal(scenario: Scenario) -> tuple[Any, ...]:
    """The values a run hands a scheduler and the oracles judge by, copied out: the batches and their
    calls, the execution policy, the caps and the limits (a few microseconds per lookup)."""
    return (scenario.name,
            tuple((batch.label, tuple((c.id, c.name, c.arguments, c.index) for c in batch.calls))
                  for batch in scenario.batches),
            tuple(getattr(scenario.execution, f.name) for f in fields(scenario.execution)),
            scenario.max_concurrency, tuple(scenario.tool_caps.items()),
            (scenario.limits.time_bound_ms, scenario.limits.event_budget), scenario.interrupt,
            scenario.world)
