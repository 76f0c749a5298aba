"""Comparing schedulers: statistics over a sweep's rows, per scenario and scheduler.

Owns the summary (makespan p50/p95/p99 and mean; speedup over `serial` and ratio to `optimal`, both
paired by seed, i.e. the mean of per-seed ratios; violations by label), the verdict table at the
top of the index page (a policy is safe only when none of its runs violates; an unsafe one is
"fast but wrong", and only safe policies compete for the best speedup) and the files `harness
compare` writes: `summary.json`, `results.csv`, `plot_data.json` (exactly the series each plot
draws, with which policies are unsafe and which ECDF curves coincide) and the plots and index page
(via `plots` and `html`). Imports pandas when called, never at
import time. It never runs a simulation.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.atomic import make_dir, replacing, write_text

BASELINES = ("serial", "optimal")


def summarise(rows: Sequence[dict[str, Any]], schedulers: Sequence[str]) -> dict[str, Any]:
    """Per scenario, per requested scheduler: the figures of one comparison."""
    import pandas

    frame = pandas.DataFrame(list(rows))
    out: dict[str, Any] = {"scenarios": {}}
    for scenario, of_scenario in frame.groupby("scenario", sort=True):
        by_seed = of_scenario.pivot_table(index="seed", columns="scheduler", values="makespan_ms", aggfunc="first")
        table: dict[str, Any] = {}
        for scheduler in schedulers:
            runs = of_scenario[of_scenario["scheduler"] == scheduler]
            if runs.empty:
                continue
            makespan = runs["makespan_ms"].astype(float)
            violations: dict[str, int] = {}
            for labels in runs["labels"]:
                for label in filter(None, str(labels).split(";")):
                    violations[label] = violations.get(label, 0) + 1
            table[scheduler] = {
                "runs": len(runs),
                "p50_ms": float(makespan.quantile(0.50)),
                "p95_ms": float(makespan.quantile(0.95)),
                "p99_ms": float(makespan.quantile(0.99)),
                "mean_ms": float(makespan.mean()),
                "speedup_vs_serial": _paired_mean(by_seed, "serial", scheduler),
                "ratio_to_optimal": _paired_mean(by_seed, scheduler, "optimal"),
                "passed_runs": int(runs["passed"].sum()),
                "violation_rate": float(1 - runs["passed"].mean()),
                "violations": dict(sorted(violations.items())),
            }
            if "task" in runs and runs["task"].notna().any():
                table[scheduler]["task"] = _task_figures(runs)
        out["scenarios"][str(scenario)] = table
    if len(out["scenarios"]) == 1:
        out["schedulers"] = next(iter(out["scenarios"].values()))
    return out


def _task_figures(runs: Any) -> dict[str, Any]:
    """A loop scenario's task-level figures: how often the agent reached its final answer, the time to
    that answer (model think time included: a loop run's makespan is its last decision), the rounds
    used and the tool calls made."""
    answered = runs[runs["task"] == "final_answer"]
    times = answered["makespan_ms"].astype(float)
    return {
        "answered_rate": float(len(answered) / len(runs)),
        "time_to_answer_p50_ms": float(times.quantile(0.50)) if len(times) else None,
        "time_to_answer_p95_ms": float(times.quantile(0.95)) if len(times) else None,
        "time_to_answer_p99_ms": float(times.quantile(0.99)) if len(times) else None,
        "rounds_mean": float(runs["rounds"].astype(float).mean()),
        "tool_calls_mean": float(runs["tool_calls"].astype(float).mean()),
        "endings": {str(k): int(v) for k, v in sorted(runs["task"].value_counts().items())},
    }


def _paired_mean(by_seed: Any, numerator: str, denominator: str) -> float | None:
    """Mean over seeds of numerator/denominator makespans (None if either is missing)."""
    if numerator not in by_seed or denominator not in by_seed:
        return None
    ratios = (by_seed[numerator] / by_seed[denominator].where(by_seed[denominator] > 0)).dropna()
    return round(float(ratios.mean()), 4) if len(ratios) else None


def verdict_table(summary: dict[str, Any], schedulers: Sequence[str]) -> list[dict[str, Any]]:
    """One row per scenario and policy: p50/p95, speedup, share of runs with a violation, and the
    verdict in words. `best` marks the highest speedup among the safe policies of a scenario only."""
    rows: list[dict[str, Any]] = []
    for scenario, table in summary["scenarios"].items():
        of_scenario = []
        for scheduler in schedulers:
            stats = table.get(scheduler)
            if stats is None:
                continue
            rate = float(stats["violation_rate"])
            safe = stats["passed_runs"] == stats["runs"]
            speedup = stats["speedup_vs_serial"]
            labels = sorted(stats["violations"], key=lambda label: (-stats["violations"][label], label))
            if safe:
                verdict = "safe: no run violates"
            else:
                share = f"{_percent(rate)} of runs violate" + (f" ({', '.join(labels[:3])})" if labels else "")
                verdict = ("fast but wrong: " if speedup is not None and speedup > 1.0 else "wrong: ") + share
            of_scenario.append({"scenario": scenario, "scheduler": scheduler, "runs": stats["runs"],
                                "p50_ms": stats["p50_ms"], "p95_ms": stats["p95_ms"], "speedup": speedup,
                                "violation_rate": rate, "violations_pct": _percent(rate), "safe": safe,
                                "labels": labels, "verdict": verdict, "best": False})
        safe_speedups = [r["speedup"] for r in of_scenario if r["safe"] and r["speedup"] is not None]
        if safe_speedups:
            best = max(safe_speedups)
            for row in of_scenario:
                if row["safe"] and row["speedup"] == best:
                    row["best"] = True
                    row["verdict"] = "safe and fastest: no run violates"
        rows.extend(of_scenario)
    return rows


def _percent(rate: float) -> str:
    """A share of runs as a percentage that never rounds a violation away (0.2% is not '0%')."""
    pct = 100 * rate
    if pct == 0 or pct == 100 or pct >= 1:
        return f"{pct:.0f}%"
    return f"{pct:.1f}%" if pct >= 0.1 else "<0.1%"


def identical_series(series: dict[str, list[float]]) -> list[list[str]]:
    """Groups (of two or more) of policies whose ECDF data are exactly the same, in series order."""
    groups: dict[tuple[float, ...], list[str]] = {}
    for scheduler, values in series.items():
        groups.setdefault(tuple(values), []).append(scheduler)
    return [group for group in groups.values() if len(group) > 1]


def plot_data(rows: Sequence[dict[str, Any]], summary: dict[str, Any], schedulers: Sequence[str]) -> dict[str, Any]:
    """The series each plot draws, so tests (and users) can check the data rather than pixels."""
    ecdf: dict[str, dict[str, list[float]]] = {}
    for scenario in summary["scenarios"]:
        ecdf[scenario] = {}
        for scheduler in schedulers:
            values = sorted(r["makespan_ms"] for r in rows if r["scenario"] == scenario and r["scheduler"] == scheduler)
            if values:
                ecdf[scenario][scheduler] = values
    speedup = {scenario: {s: stats["speedup_vs_serial"] for s, stats in table.items()}
               for scenario, table in summary["scenarios"].items()}
    data: dict[str, Any] = {
        "ecdf": ecdf, "speedup": speedup,
        # What the plots draw as unsafe (hatched, red, "fast but wrong") and which curves coincide.
        "violation_rate": {scenario: {s: stats["violation_rate"] for s, stats in table.items()}
                           for scenario, table in summary["scenarios"].items()},
        "identical": {scenario: identical_series(series) for scenario, series in ecdf.items()},
    }
    if len(summary["scenarios"]) > 1:
        data["heatmap"] = {
            "scenarios": list(summary["scenarios"]),
            "schedulers": list(schedulers),
            "violation_rate": [[summary["scenarios"][sc].get(s, {}).get("violation_rate") for s in schedulers]
                               for sc in summary["scenarios"]],
            "runs_with_violation": [[_violating_runs(summary["scenarios"][sc].get(s)) for s in schedulers]
                                    for sc in summary["scenarios"]],
        }
    return data


def _violating_runs(stats: dict[str, Any] | None) -> int | None:
    return None if stats is None else int(stats["runs"] - stats["passed_runs"])


def write(out: Path, rows: Sequence[dict[str, Any]], schedulers: Sequence[str], *, command: str,
          seeds: Sequence[int]) -> dict[str, Any]:
    """Write every comparison file into `out`; returns the summary."""
    import pandas

    from harness.report import html, plots
    from harness.sweep import COLUMNS

    make_dir(out)  # every file is written whole or not at all (harness.atomic)
    summary = summarise(rows, schedulers)
    summary["seeds"] = [min(seeds), max(seeds)] if seeds else []
    summary["runs_per_cell"] = len(seeds)
    summary["command"] = command
    with replacing(out / "results.csv") as file:
        pandas.DataFrame(list(rows), columns=list(COLUMNS)).to_csv(file, index=False)
    data = plot_data(rows, summary, schedulers)
    images = plots.draw_comparison(data, out)
    write_text(out / "summary.json", json.dumps(summary, indent=2, sort_keys=True) + "\n")
    write_text(out / "plot_data.json", json.dumps(data, indent=2, sort_keys=True) + "\n")
    html.write_comparison(out / "index.html", summary, schedulers, images,
                          files=["summary.json", "results.csv", "plot_data.json"],
                          verdicts=verdict_table(summary, schedulers))
    return summary
