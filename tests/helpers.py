"""Builders shared by tests: a scenario from a few lines of data, run under a named scheduler; the
`harness` command in a fresh process, and a printed command line run exactly as printed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

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


def harness_process(*args: str, cwd: Path, pythonpath: Path | None) -> subprocess.CompletedProcess[str]:
    """`harness ARGS` in a fresh interpreter started in `cwd`, with PYTHONPATH `pythonpath` only (a user's
    package that is not installed), as a user's shell would run it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    command = [sys.executable, "-c", "from harness.cli import main; main()", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)


def as_printed(line: str, where: Path) -> subprocess.CompletedProcess[str]:
    """A command line exactly as the harness printed it, in a fresh shell started in `where` (no
    PYTHONPATH but what the line sets)."""
    return subprocess.run(["bash", "-c", line], cwd=where, capture_output=True, text=True, timeout=300, check=False,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})


def fake_host(monkeypatch: pytest.MonkeyPatch, cpus: int) -> None:
    """The host has `cpus` CPUs: the real functions beneath the bridge's patches say so."""
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)
    if hasattr(os, "process_cpu_count"):
        monkeypatch.setattr(os, "process_cpu_count", lambda: cpus)
    if hasattr(os, "sched_getaffinity"):
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)))
