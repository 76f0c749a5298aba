"""What an exploration covered, in words a user can check: the `scope` of every exploration and the
wording of its claim.

Owns the scope dictionaries of planned explorations (random, pct, auto) and of exhaustive search,
and the claim ("proven: ...", or why nothing is proven). It never runs anything: the engine counts,
this module says what the counts mean.
"""

from __future__ import annotations

from typing import Any

from harness.run import RunResult
from harness.scenario.spec import Scenario

#: What order-first runs assume of latencies, in every scope that includes them.
ORDER_FIRST_LATENCIES = ("calls' steps in any order among themselves; against timers, within each latency "
                         "model's range")


def planned_scope(*, random_runs: int, pct_runs: int, seeds: list[int], timers: list[str],
                  scenario: Scenario, swarm: tuple[str, ...], swarm_seen: list[str], depths: list[int],
                  horizon: int, max_steps: int, mix: list[str] | None, limited: int) -> dict[str, Any]:
    """The scope of random, pct and auto explorations (none of them claims a proof)."""
    scope: dict[str, Any] = {
        "runs": random_runs + pct_runs,
        "seeds": seeds,
        "latencies": _latencies(random_runs, pct_runs),
        "timers": ("at their drawn times" if not pct_runs else
                   "ordered against call steps by PCT; chosen to fire before a waiting step: "
                   f"{', '.join(timers) or 'none'}" + (" (and at their drawn times in random runs)" if random_runs
                                                        else "")),
        "faults": faults(scenario, "drawn per run from each run's seed"),
        "swarm": sorted(swarm),
        "swarm_seen": swarm_seen,
        "limited_checks": limited,
    }
    if pct_runs:
        beyond = ("" if max_steps <= horizon else
                  f"; runs reached {_count(max_steps, 'step')}, beyond the horizon {horizon}: change points fall "
                  f"in the first {_count(horizon, 'step')} only")
        scope["pct"] = {"depths": depths, "horizon": horizon, "max_steps_seen": max_steps,
                        "covers": "bugs that need at most d ordering constraints between call steps and timers, "
                                  "under the seed's fault draws" + beyond}
    if mix is not None:
        scope["mix"] = mix
    return scope


def exhaustive_scope(*, runs: int, bound: int, seed: int, scenario: Scenario, timers: list[str],
                     decision_points: list[str], fault_bound: int, classes: int, exhausted: bool, found: bool,
                     limited: int, hung: list[str], labels: tuple[str, ...] | None) -> dict[str, Any]:
    """The scope of an exhaustive search, with its claim."""
    shown = ", ".join(decision_points[:8]) + (", ..." if len(decision_points) > 8 else "")
    return {
        "runs": runs,
        "seeds": [seed],
        "latencies": "every order of call steps up to swapping steps with disjoint footprints (footprints learnt "
                     f"in model order); {ORDER_FIRST_LATENCIES}",
        "timers": "every order of each pending timer against the call steps (timers among themselves in deadline "
                  f"order); chosen to fire before a waiting step: {', '.join(timers) or 'none'}",
        "hung_calls": hung,
        "limited_checks": limited,
        "faults": (faults(scenario, f"every choice of at most {fault_bound} injected per run over "
                                    f"{_count(len(decision_points), 'attempt')} that may fail ({shown}); other "
                                    "draws from "
                                    f"seed {seed}")
                   if decision_points else faults(scenario, f"drawn from seed {seed} (none is a choice)")),
        "fault_bound": fault_bound,
        "swarm": [],
        "bound": {"runs": bound, "classes": classes, "exhausted": exhausted},
        "claim": claim(exhausted, found, limited, labels),
        "not_covered": ["scheduler decisions that read absolute virtual times (e.g. rate-limit windows)",
                        *([f"calls hung by seed {seed}'s latency draw stay hung ({', '.join(hung)}); other draws "
                           "are not hangs"] if hung else []),
                        "timers whose order only a slower step before they were set could swap",
                        "swarm faults (use --strategy auto or --swarm)"],
    }


def claim(exhausted: bool, found: bool, limited: int, labels: tuple[str, ...] | None) -> str:
    """What an exhaustive search may say: proven only when nothing was found, the space was
    exhausted and no oracle limited its check."""
    if found:
        return "violation found"
    if not exhausted:
        return "none: the run bound was reached first"
    if limited:
        return f"none: an oracle limited its check on {_count(limited, 'run')}"
    what = f"no {' / '.join(labels)} violation" if labels else "no violation"
    return f"proven: {what} in any of the classes above"


def hung_calls(result: RunResult) -> set[str]:
    """Calls still running when a hung run stopped (a latency drawn beyond the time bound keeps a
    call hung in order-first runs too)."""
    if result.status.value != "hang":
        return set()
    ended = {e["call"] for e in result.trace if e["ev"] == "end"}
    return {e["call"] for e in result.trace if e["ev"] == "start"} - ended


def fault_sources(scenario: Scenario) -> list[str]:
    """The fault sources the scenario itself has (failure tables and its fault plan)."""
    sources = []
    if scenario.tool_failures or scenario.call_failures:
        sources.append("call failures")
    plan = scenario.faults
    for present, name in ((plan.duplicate_delivery, "duplicate delivery"), (plan.torn_writes, "torn writes"),
                          (plan.rate_limits, "rate limits"), (plan.crash_at_ms is not None, "a crash (a timer)"),
                          (plan.mcp, "MCP server faults (at their set times)")):
        if present:
            sources.append(name)
    return sources


def faults(scenario: Scenario, how: str) -> str:
    """Which fault sources the scenario has, and how the runs met them."""
    sources = fault_sources(scenario)
    return f"{', '.join(sources)}: {how}" if sources else "none in the scenario"


def _latencies(random_runs: int, pct_runs: int) -> str:
    parts = []
    if random_runs:
        parts.append(f"{_count(random_runs, 'run')} with latencies drawn from the scenario's distributions")
    if pct_runs:
        parts.append(f"{_count(pct_runs, 'run')} order-first ({ORDER_FIRST_LATENCIES})")
    return "; ".join(parts)


def _count(n: int, noun: str) -> str:
    """`1 run`, `2 runs` (what harness.report.plural.count says, for the nouns here)."""
    return f"{n} {noun}" + ("" if n == 1 else "s")
