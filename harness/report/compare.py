"""Comparing schedulers: statistics over a sweep's rows, per scenario and scheduler.

Owns the summary (makespan p50/p95/p99 and mean; speedup over `serial` and ratio to `optimal`, both
paired by seed, i.e. the mean of per-seed ratios; violations by label) and the files `harness
compare` writes: `summary.json`, `results.csv`, `plot_data.json` (exactly the series each plot
draws) and the plots and index page (via `plots` and `html`). Imports pandas when called, never at
import time. It never runs a simulation.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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
        out["scenarios"][str(scenario)] = table
    if len(out["scenarios"]) == 1:
        out["schedulers"] = next(iter(out["scenarios"].values()))
    return out


def _paired_mean(by_seed: Any, numerator: str, denominator: str) -> float | None:
    """Mean over seeds of numerator/denominator makespans (None if either is missing)."""
    if numerator not in by_seed or denominator not in by_seed:
        return None
    ratios = (by_seed[numerator] / by_seed[denominator].where(by_seed[denominator] > 0)).dropna()
    return round(float(ratios.mean()), 4) if len(ratios) else None


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
    data: dict[str, Any] = {"ecdf": ecdf, "speedup": speedup}
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

    out.mkdir(parents=True, exist_ok=True)
    summary = summarise(rows, schedulers)
    summary["seeds"] = [min(seeds), max(seeds)] if seeds else []
    summary["runs_per_cell"] = len(seeds)
    summary["command"] = command
    pandas.DataFrame(list(rows), columns=list(COLUMNS)).to_csv(out / "results.csv", index=False)
    data = plot_data(rows, summary, schedulers)
    images = plots.draw_comparison(data, out)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    (out / "plot_data.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    html.write_comparison(out / "index.html", summary, schedulers, images,
                          files=["summary.json", "results.csv", "plot_data.json"])
    return summary
