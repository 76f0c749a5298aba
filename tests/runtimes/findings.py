"""Small readers of a finished run shared by the runtime recipe tests."""

from __future__ import annotations

from typing import Any

from harness import find_scenario, run
from harness.oracles import check
from harness.run import RunResult
from harness.scheduling import Scheduler


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


def holds(result: RunResult) -> list[tuple[str, int, int]]:
    """Each hold of the event loop by a blocking call (the report's `blocking` lines): what, from, how long."""
    return [(e["what"], e["since"], e["held_ms"]) for e in result.trace if e["ev"] == "blocked"]


def starts(result: RunResult) -> dict[str, int]:
    """When each call started (its first attempt), by call id."""
    return {str(e["call"]): int(e["t"]) for e in reversed(result.trace) if e["ev"] == "start"}


#: sync-tool-on-loop, logs and metrics sync, deploys async: a runtime calling sync tools on its loop.
ON_LOOP = {"makespan": 9000, "starts": {"call-logs": 0, "call-metrics": 3000, "call-deploys": 7000},
           "holds": [("the sync tool query_service_logs (call-logs)", 0, 3000),
                     ("the sync tool query_service_metrics (call-metrics)", 3000, 4000)]}
#: ... and one handing them to a thread: the parallel makespan, nothing holds the loop.
OFFLOADED = {"makespan": 4000, "starts": {"call-logs": 0, "call-metrics": 0, "call-deploys": 0}, "holds": []}


def sync_tools_run(result: RunResult) -> dict[str, Any]:
    """What `sync-tool-on-loop` shows of a run: makespan, when each call started, the loop's holds."""
    return {"makespan": result.makespan_ms, "starts": starts(result), "holds": holds(result)}
