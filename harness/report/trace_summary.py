"""The learned models as text and JSON (`harness traces summary`).

Owns the table of tools (calls, attempts, latency samples, empirical p50/p95/p99, the fit with its
sample count and KS distance or why there is none, error, timeout and repeat rates), a line per tool
whose latency is more than one log-normal (the mixture tried when it failed its KS test, the split by
an argument class, with the BICs that picked them; a class is named by its number, never its value),
and the workload lines (calls per turn, tool mixes, recorded makespans, how often calls really overlapped). It never
computes a statistic (harness.traces.learn) and never writes files.
"""

from __future__ import annotations

import math
from typing import Any

from harness.traces.fits import KS_ALPHA, MAX_CLASSES
from harness.traces.learn import MIN_SAMPLES, Learned, ToolModel


def summary_data(learned: Learned) -> dict[str, Any]:
    """Everything the text shows, as JSON-ready values (times in ms, rounded to 0.1 ms)."""
    w = learned.workload
    return {
        "tools": [_tool_data(m) for m in learned.tools],
        "workload": {
            "turns": w.turns,
            "batch_sizes": {str(size): n for size, n in w.batch_sizes},
            "tool_mixes": dict(w.tool_mixes),
            "makespan_ms": {name: _r(_quantile(w.makespans_ms, q)) for name, q in _QUANTILES},
            "overlapping_turns": w.overlapping_turns,
        },
    }


_QUANTILES = (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))


def _tool_data(m: ToolModel) -> dict[str, Any]:
    fit = m.fit
    return {
        "tool": m.tool, "calls": m.calls, "attempts": m.attempts, "samples": len(m.latencies_ms),
        "latency_ms": {name: _r(m.quantile(q)) for name, q in _QUANTILES},
        "fit": None if fit is None else {"family": "lognormal", "median_ms": _r(fit.median_ms),
                                         "sigma": round(fit.sigma, 4), "samples": fit.samples,
                                         "ks_statistic": round(fit.ks, 4), "ks_p_value": round(fit.p_value, 4)},
        "no_fit": m.why_no_fit or None,
        "latency_model": m.latency_model,
        "mixture": None if m.mixture is None else {
            "weight": round(m.mixture.weight, 4), "median_ms": _r(m.mixture.median_ms),
            "sigma": round(m.mixture.sigma, 4), "median2_ms": _r(m.mixture.median2_ms),
            "sigma2": round(m.mixture.sigma2, 4), "ks_statistic": round(m.mixture.ks, 4),
            "ks_p_value": round(m.mixture.p_value, 4), "bic": round(m.mixture.bic, 1),
            "single_bic": round(m.mixture.single_bic, 1), "chosen": m.mixture.chosen},
        "split": None if m.split is None else {
            "argument": m.split.argument, "by": "size" if m.split.cuts else "value", "cuts": list(m.split.cuts),
            "bic": round(m.split.bic, 1), "whole_bic": round(m.split.whole_bic, 1),
            "classes": [{"class": i, "calls": c.calls, "samples": c.samples, "median_ms": _r(c.median_ms),
                         "sigma": round(c.sigma, 4)} for i, c in enumerate(m.split.classes, 1)]},
        "error_rate": round(m.error_rate, 4), "timeout_rate": round(m.timeout_rate, 4),
        "retried_calls": m.retried_calls,
        "repeated_arguments": None if not m.calls_with_arguments else
        {"calls": m.repeated_arguments, "of": m.calls_with_arguments},
    }


def summary_text(learned: Learned, sources: str) -> str:
    """The table of tools and the workload lines."""
    header = ["tool", "calls", "attempts", "samples", "p50 ms", "p95 ms", "p99 ms", "log-normal fit", "KS D",
              "KS p", "errors", "timeouts", "same args"]
    rows = [header]
    for m in learned.tools:
        fit = m.fit
        rows.append([
            m.tool, str(m.calls), str(m.attempts), str(len(m.latencies_ms)),
            *(_ms(m.quantile(q)) for _, q in _QUANTILES),
            f"median {fit.median_ms:.0f} ms, sigma {fit.sigma:.2f}" if fit else m.why_no_fit or "-",
            f"{fit.ks:.3f}" if fit else "-", f"{fit.p_value:.2f}" if fit else "-",
            f"{m.error_rate:.1%}", f"{m.timeout_rate:.1%}",
            f"{m.repeated_arguments}/{m.calls_with_arguments}" if m.calls_with_arguments else "not recorded",
        ])
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    numeric = {1, 2, 3, 4, 5, 6, 8, 9, 10, 11}
    lines = ["  ".join(cell.rjust(widths[i]) if i in numeric else cell.ljust(widths[i])
                       for i, cell in enumerate(row)).rstrip() for row in rows]
    lines += _beyond(learned)
    w = learned.workload
    sizes = ", ".join(f"{size}: {n}" for size, n in w.batch_sizes)
    mixes = ", ".join(f"{mix} ({n})" for mix, n in w.tool_mixes[:5])
    share = w.overlapping_turns / w.turns if w.turns else 0.0
    spans = ", ".join(f"{name} {_ms(_quantile(w.makespans_ms, q))}" for name, q in _QUANTILES)
    return "\n".join([
        f"traces: {sources}",
        *lines,
        "",
        "Latency samples are attempts that ended ok or with an error (a timed-out attempt's duration is the "
        "runtime's timeout); KS p is optimistic (the fit is to the same sample).",
        f"turns: {w.turns}; calls per turn: {sizes}",
        f"recorded makespan (ms): {spans}",
        f"turns whose calls overlapped in time: {w.overlapping_turns} of {w.turns} ({share:.0%})",
        f"most common tool mixes: {mixes}",
    ]) + "\n"


def _beyond(learned: Learned) -> list[str]:
    """A line per tool whose latency is more than its one log-normal, and the criterion once."""
    lines = []
    for m in learned.tools:
        if m.mixture is not None:
            x = m.mixture
            lines.append(
                f"{m.tool}: the log-normal fails its KS test (p {m.fit.p_value if m.fit else 0:.3f} < {KS_ALPHA}); "
                f"two-component mixture {x.weight:.2f} x median {x.median_ms:.0f} ms, sigma {x.sigma:.2f} + "
                f"{1 - x.weight:.2f} x median {x.median2_ms:.0f} ms, sigma {x.sigma2:.2f}: KS D {x.ks:.3f}, p "
                f"{x.p_value:.2f}; BIC {x.bic:.1f} against the log-normal's {x.single_bic:.1f}: "
                f"{'the mixture' if x.chosen else 'the log-normal'}")
        if m.split is not None:
            split = m.split
            classes = "; ".join(f"class {i}{f' ({c.value})' if split.cuts else ''}: {c.calls} calls, {c.samples} "
                                f"samples, median {c.median_ms:.0f} ms, sigma {c.sigma:.2f}"
                                for i, c in enumerate(split.classes, 1))
            by = "the size of its argument" if split.cuts else "its argument"
            lines.append(f"{m.tool} split by {by} `{split.argument}` ({classes}): BIC {split.bic:.1f} against "
                         f"{split.whole_bic:.1f} for the best whole fit: the split")
    if not lines:
        return []
    return ["", *lines,
            f"Beyond one log-normal: a two-component mixture is tried when the log-normal fails its KS test (p < "
            f"{KS_ALPHA}, no timed-out attempt), a split by an argument of 2 to {MAX_CLASSES} values or by an "
            f"argument's size in 2 to {MAX_CLASSES} buckets at its quantiles when each "
            f"class has >= {MIN_SAMPLES} samples; each is picked only when its BIC (k ln n - 2 ln L) is lower, the "
            "lowest winning."]


def _quantile(values: tuple[float, ...], q: float) -> float:
    if not values:
        return math.nan
    return values[min(len(values) - 1, max(0, math.ceil(q * len(values)) - 1))]


def _ms(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.0f}"


def _r(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 1)
