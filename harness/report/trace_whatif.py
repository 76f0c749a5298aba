"""The what-if on recorded turns as text, JSON and plots (`harness traces whatif`).

Owns the table (per policy: turn runs, p50/p95/p99 turn makespan, saving against the recorded turns,
the share of turn runs with a violation and its labels, the tool that bounds the slowest turn runs),
the recorded row beside it, the critical paths of each policy's slowest turn runs, the fidelity line,
and the figures: the turn-makespan ECDF per policy over the recorded one, each policy's saving against
its hazard share, and the Gantt chart of each policy's worst turn run (`harness.report.gantt`'s, from
the run `harness.traces.whatif.worst_run` gives). It never runs anything (harness.traces.whatif) and
imports matplotlib only when drawing.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.report.plots import _pyplot, _save
from harness.traces.whatif import DRIFT_ALPHA, FIDELITY_ALPHA, Fidelity, WhatIf

if TYPE_CHECKING:
    from harness.run import RunResult

_QUANTILES = (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))


def whatif_data(what: WhatIf, fidelity: Fidelity | None) -> dict[str, Any]:
    recorded = sorted(what.recorded_ms)
    return {
        "turns": len(recorded), "seeds": [what.seeds[0], what.seeds[-1]] if what.seeds else [],
        "recorded_ms": {name: round(_quantile(recorded, q), 1) for name, q in _QUANTILES},
        "policies": [{
            "scheduler": o.scheduler, "turn_runs": o.runs,
            "makespan_ms": {name: o.quantile(q) for name, q in _QUANTILES},
            "saving_vs_recorded": round(what.saving(o), 4),
            "hazard_share": round(o.hazard_runs / o.runs, 4) if o.runs else 0.0,
            "labels": dict(o.labels), "slowest_bounded_by": dict(o.bounding),
            "slowest_critical_paths": dict(o.critical),
            "slowest_critical_time_share": {tool: round(share, 4) for tool, share in o.critical_time},
            "worst": {"turn": o.worst[0], "seed": o.worst[1], "makespan_ms": o.worst[2]},
        } for o in what.policies],
        "fidelity": None if fidelity is None else {
            "scheduler": fidelity.scheduler, "ks_statistic": round(fidelity.ks, 4),
            "ks_p_value": round(fidelity.p_value, 4), "alpha": FIDELITY_ALPHA, "reproduces": fidelity.reproduces,
            "quantile_errors": {name: round(e, 4) for name, e in fidelity.errors},
            "drifting_tools": {tool: round(d, 4) for tool, d in fidelity.drifting},
        },
    }


def whatif_text(what: WhatIf, fidelity: Fidelity | None, sources: str) -> str:
    recorded = sorted(what.recorded_ms)
    header = ["policy", "turn runs", "p50 ms", "p95 ms", "p99 ms", "saving vs recorded", "hazard share", "labels",
              "slowest 5% bounded by"]
    rows = [header, ["recorded", str(len(recorded)), *(f"{_quantile(recorded, q):.0f}" for _, q in _QUANTILES),
                     "-", "-", "", ""]]
    for o in what.policies:
        rows.append([o.scheduler, str(o.runs), *(f"{o.quantile(q):.0f}" for _, q in _QUANTILES),
                     f"{what.saving(o):+.1%}", f"{o.hazard_runs / o.runs:.1%}" if o.runs else "-",
                     ", ".join(f"{label} ({n})" for label, n in o.labels) or "none",
                     ", ".join(f"{tool} ({n})" for tool, n in o.bounding[:2])])
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    numeric = {1, 2, 3, 4, 5, 6}
    lines = [f"what-if: {len(recorded)} recorded turns of {sources}, each replayed with {len(what.seeds)} seeds "
             "(latencies drawn from the learned models)"]
    lines += ["  ".join(c.rjust(widths[i]) if i in numeric else c.ljust(widths[i]) for i, c in enumerate(r)).rstrip()
              for r in rows]
    lines.append("saving: 1 - replayed time / recorded time over all turns (negative: slower than production)")
    for o in what.policies:
        turn, seed, ms = o.worst
        lines.append(f"worst turn under {o.scheduler}: turn-{turn} (seed {seed}), {ms} ms")
    slow = max(1, math.ceil(len(what.policies[0].makespans_ms) * 0.05)) if what.policies else 0
    for o in what.policies:
        shares = ", ".join(f"{tool} {share:.0%}" for tool, share in o.critical_time)
        path, n = o.critical[0] if o.critical else ("-", 0)
        lines.append(f"critical path of the slowest 5% under {o.scheduler}: its time by tool {shares}; most common "
                     f"path {path} ({n} of {slow})")
    if fidelity is not None:
        lines.append(fidelity_line(fidelity))
    return "\n".join(lines) + "\n"


def fidelity_line(f: Fidelity) -> str:
    verdict = "reproduces the recorded makespans" if f.reproduces else "does NOT reproduce the recorded makespans"
    errors = ", ".join(f"{name} {e:+.1%}" for name, e in f.errors)
    drift = ("drifting tools (call durations, KS p < " + f"{DRIFT_ALPHA}): "
             + ", ".join(f"{tool} (D={d:.3f})" for tool, d in f.drifting)) if f.drifting else \
        f"no tool's call durations drift (KS p < {DRIFT_ALPHA})"
    return (f"fidelity of {f.scheduler} (the policy production used): {verdict} (two-sample KS D = {f.ks:.3f}, "
            f"p = {f.p_value:.3f}; tolerance p >= {FIDELITY_ALPHA}); quantile errors {errors}; {drift}")


def draw_whatif(what: WhatIf, out: Path) -> list[Path]:
    """Write `whatif-ecdf.png` and `whatif-saving-hazard.png` into `out`; return their paths."""
    plt = _pyplot()
    out.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7, 4))
    recorded = sorted(what.recorded_ms)
    ax.step(recorded, [(i + 1) / len(recorded) for i in range(len(recorded))], where="post", color="black",
            linewidth=2, label="recorded (production)")
    for o in what.policies:
        n = len(o.makespans_ms)
        ax.step(o.makespans_ms, [(i + 1) / n for i in range(n)], where="post", label=o.scheduler)
    ax.set_xlabel("turn makespan (ms)")
    ax.set_ylabel("share of turns")
    ax.set_title("Recorded turns replayed under each policy")
    ax.legend(fontsize=8)
    fig.tight_layout()
    ecdf = out / "whatif-ecdf.png"
    _save(fig, ecdf)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 4))
    for o in what.policies:
        share = o.hazard_runs / o.runs if o.runs else 0.0
        ax.scatter([share * 100], [what.saving(o) * 100])
        ax.annotate(o.scheduler, (share * 100, what.saving(o) * 100), fontsize=8, xytext=(4, 4),
                    textcoords="offset points")
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.set_xlabel("turn runs with a violation (%)")
    ax.set_ylabel("saving against production (%)")
    ax.set_title("Saving versus hazard")
    fig.tight_layout()
    scatter = out / "whatif-saving-hazard.png"
    _save(fig, scatter)
    plt.close(fig)
    return [ecdf, scatter]


def draw_worst_turns(worst: list[tuple[str, int, int, RunResult]], out: Path) -> list[Path]:
    """Write the Gantt chart of each policy's worst turn run, `(scheduler, turn, seed, run)`, into `out` as
    `whatif-worst-SCHEDULER.png` (a `module:attribute` name with `:` and `.` as `-`); return their paths."""
    from harness.oracles import check
    from harness.report.gantt import gantt_data
    from harness.report.plots import draw_gantt

    paths = []
    for scheduler, turn, seed, result in worst:
        data = gantt_data(result, check(result))
        data["title"] = f"worst turn under {scheduler}: turn-{turn}, seed {seed}"
        path = out / f"whatif-worst-{''.join(c if c.isalnum() or c in '_-' else '-' for c in scheduler)}.png"
        draw_gantt(data, path)
        paths.append(path)
    return paths


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    return values[min(len(values) - 1, max(0, math.ceil(q * len(values)) - 1))]
