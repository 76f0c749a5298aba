"""Small readers of a finished run shared by the runtime recipe tests."""

from __future__ import annotations

from typing import Any

from harness import find_scenario, run
from harness.oracles import check
from harness.run import RunResult
from harness.schedulers import Scheduler


def tried(scenario: str, scheduler: Scheduler, seed: int = 1) -> tuple[RunResult, dict[str, dict[str, Any]]]:
    """Run `scenario` under `scheduler`; the run and its failing verdicts' witnesses by label."""
    result = run(find_scenario(scenario), scheduler, seed=seed)
    return result, {v.label: dict(v.witness) for v in check(result) if not v.ok and v.label}


def reported(result: RunResult) -> list[tuple[str, str]]:
    """(call id, outcome) of every result, in the order the runtime reported them."""
    return [(r.call_id, r.outcome.value) for r in result.results]


def named(result: RunResult, label: str) -> set[str]:
    """The calls that the violations labelled `label` name (each witness's `call`; a verdict may hold
    several violations of one label, one per call)."""
    return {str(x.witness["call"]) for v in check(result) for x in v.violations
            if x.label == label and "call" in x.witness}
