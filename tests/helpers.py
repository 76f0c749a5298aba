"""Builders shared by tests: a scenario from a few lines of data, run under a named scheduler."""

from __future__ import annotations

from typing import Any

from harness import Scenario, get_scheduler, run
from harness.model import Batch
from harness.run import RunResult
from harness.scenario import scenario_from_data
from harness.scenario.spec import Scenario as _Scenario
from harness.world import World


def scenario(calls: list[tuple[str, str, Any]], *, files: dict[str, str] | None = None, cwd: str = "/repo",
             tools: dict[str, Any] | None = None, extra_batches: list[list[tuple[str, str, Any]]] | None = None,
             world_extra: dict[str, Any] | None = None, **top: Any) -> Scenario:
    """A scenario from `(id, tool, arguments)` triples (arguments: dict or raw string); `world_extra`
    adds world keys (symlinks, hardlinks, case_sensitive...)."""
    def batch(rows: list[tuple[str, str, Any]]) -> dict[str, Any]:
        return {"calls": [{"id": i, "name": n, "arguments": a} for i, n, a in rows]}

    data: dict[str, Any] = {
        "name": top.pop("name", "test"),
        "world": {"cwd": cwd, "files": files or {}, **(world_extra or {})},
        "tools": tools or {},
        "batches": [batch(calls)] + [batch(rows) for rows in extra_batches or []],
        **top,
    }
    return scenario_from_data(data, "<test>")


def scenario_for_batch(batch: Batch, files: dict[str, str], cwd: str = "/repo") -> _Scenario:
    world = World(cwd=cwd)
    world.populate(files=sorted(files.items()))
    return _Scenario(name="generated", batches=(batch,), world=world.state())


def run_named(sc: Scenario, scheduler: str, seed: int = 1) -> RunResult:
    return run(sc, get_scheduler(scheduler), seed)
