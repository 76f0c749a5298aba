"""A run as one JSON object: the machine-readable face of `harness run --format json`.

Owns the field names users script against. It never prints and never re-runs anything.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from harness.diagnosis.origins import Origins
from harness.oracles.verdict import Verdict, Violation, exit_code
from harness.report.explain import explain
from harness.report.hang import waits_json
from harness.report.story import story
from harness.run import RunResult
from harness.scenario.library import builtin_dir
from harness.sim.trace import canonical_json
from harness.transcripts import fidelity


def run_to_json(result: RunResult, *, version: str, verdicts: Sequence[Verdict] = (),
                scheduler_spec: str | None = None, extra_args: Sequence[str] = (),
                origins: Origins | None = None) -> dict[str, Any]:
    scenario = result.scenario
    failed = [v for v in verdicts if not v.ok]
    return {
        "scenario": scenario.name,
        "scheduler": result.scheduler,
        "seed": result.seed,
        "harness_version": version,
        "status": result.status.value,
        "error": result.error,
        "makespan_ms": result.makespan_ms,
        # Blocking calls that held a bridged runtime's event loop (nothing else on it ran meanwhile).
        "blocking": loop_holds(result.trace),
        "fingerprint": result.fingerprint,
        "trace_sha256": result.trace_sha256,
        "world_digest": result.final.digest(),
        "batches": [
            {"index": b.index, "label": b.batch.label, "start_ms": b.start_ms, "end_ms": b.end_ms,
             "status": b.status.value, "reported": [r.call_id for r in b.results],
             # A hung batch: what each unfinished call waited on (harness.report.hang), else null.
             "waits": waits_json(b)}
            for b in result.batches
        ],
        "results": [r.to_json() for r in result.results],
        "final_files": result.final_files(),
        "verdicts": [verdict_json(v, result, origins) for v in verdicts],
        "passed": not failed,
        "exit_code": int(exit_code(verdicts)),
        "execution": _execution_json(result),
        "reproduce": reproduce_command(result, scheduler_spec, extra_args),
        # A loop run: how the task ended (status, answer, rounds, tool calls, invalid decisions).
        "agent": result.agent.to_json() if result.agent is not None else None,
        # Several agents: how each one's task ended, by name ("agent" above sums them up).
        "agents": {name: outcome.to_json() for name, outcome in result.agents.items()} or None,
        # Production results the scenario carries (an imported transcript): which calls check theirs as
        # expectations, which return them as fixed values, and where the serial reference disagrees.
        "fidelity": production.to_json() if (production := fidelity.of(scenario)) is not None else None,
    }


def loop_holds(trace: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The `blocked` events of a run's trace (`harness.bridges.asyncio.blocking`): which
    blocking call held the event loop, from when and for how long; `returned` is false for one that
    never returned (the run hung in it)."""
    return [{"what": e["what"], "at_ms": e["since"], "held_ms": e["held_ms"], "returned": e.get("returned", True)}
            for e in trace if e["ev"] == "blocked"]


def verdict_json(verdict: Verdict, result: RunResult | None = None, origins: Origins | None = None) -> dict[str, Any]:
    """A verdict's JSON with an `explanation` in words on each violation (and on the verdict: its
    first violation's) and, with the run, its interleaving `story` (harness.report.story; null for a
    violation that names no call) and its `likelihood` (harness.report.likelihood)."""
    document = verdict.to_json()
    document["violations"] = [{**v.to_json(), "explanation": explain(v, result), **_story(v, result, origins),
                               **_likelihood(v, result)}
                              for v in verdict.violations]
    document["explanation"] = document["violations"][0]["explanation"] if verdict.violations else None
    return document


def _story(violation: Violation, result: RunResult | None, origins: Origins | None) -> dict[str, Any]:
    if result is None:
        return {}
    told = story(violation, result, origins)
    return {"story": told.to_json() if told is not None else None}


def _likelihood(violation: Violation, result: RunResult | None) -> dict[str, Any]:
    """How likely the witness is under the scenario's draws (harness.report.likelihood); with the run only."""
    if result is None:
        return {}
    from harness.report.likelihood import likelihood_of

    return {"likelihood": likelihood_of(result, violation).to_json()}


def _execution_json(result: RunResult) -> dict[str, Any]:
    policy = result.scenario.execution
    return {f.name: getattr(policy, f.name) if f.name != "tool_caps" else dict(policy.tool_caps)
            for f in fields(policy)}


def reproduce_command(result: RunResult, scheduler: str | None = None, extra_args: Sequence[str] = ()) -> str:
    """The command that re-runs `result`; `scheduler` is how the user named it (e.g. module:attr),
    `extra_args` the execution flags given on the command line."""
    scenario = result.scenario
    # Built-in only when it is the built-in directory's file: a user's file named as its stem must be
    # named by its path, or the command finds no such scenario.
    builtin = scenario.path is None or (
        Path(scenario.path).resolve() == (builtin_dir() / f"{scenario.name}.toml").resolve())
    # A file by its absolute path, and every argument shell-quoted: the command works as printed
    # from any directory.
    target = scenario.name if builtin or scenario.path is None else os.path.abspath(scenario.path)
    extra = "".join(f" {shlex.quote(arg)}" for arg in extra_args)
    spec = scheduler or result.scheduler
    from harness.reproducers.replay import modules_named, search_path_prefix  # a report only: not on `import harness`

    prefix = search_path_prefix(modules_named(spec, scenario.tools_modules))
    return (f"{prefix}harness run {shlex.quote(target)} --scheduler {shlex.quote(spec)} --seed {result.seed}"
            f"{extra}")


def dumps(document: dict[str, Any]) -> str:
    return canonical_json(document)
