"""The learned latency models drawn: per tool, the ECDF of its recorded latencies with the fitted
log-normal's CDF over it, and the model the scenario uses where it is another (a two-component mixture,
or a split by an argument's class drawn as the classes' CDFs weighted by their samples)
(`harness traces summary --plot`).

Owns that figure's layout: one panel per tool on a log time axis, titled with the sample count and
the KS distance, or saying that there were too few samples for a fit (the ECDF alone is drawn then).
matplotlib is imported when called (harness.report.plots' Agg setup); it never computes a fit.
"""

from __future__ import annotations

import math
from pathlib import Path

from harness.report.plots import _pyplot, _save
from harness.traces.learn import Learned


def draw_fits(learned: Learned, path: Path) -> None:
    """Write the PNG of every tool's ECDF and fit to `path` (whole or not at all)."""
    plt = _pyplot()
    from matplotlib import ticker
    tools = [m for m in learned.tools if m.latencies_ms]
    columns = min(3, max(1, len(tools)))
    rows = max(1, math.ceil(len(tools) / columns))
    fig, axes = plt.subplots(rows, columns, figsize=(4.5 * columns, 3.4 * rows), squeeze=False)
    for ax in axes.flat[len(tools):]:
        ax.set_visible(False)
    if not tools:
        axes[0][0].set_visible(True)
        axes[0][0].text(0.5, 0.5, "no latency samples", ha="center", va="center")
    for ax, model in zip(axes.flat, tools, strict=False):
        values = [max(v, 1e-3) for v in model.latencies_ms]
        n = len(values)
        ax.step(values, [(i + 1) / n for i in range(n)], where="post", color="black", label=f"recorded (n={n})")
        fit = model.fit
        if fit is not None:
            low, high = math.log(values[0]), math.log(values[-1])
            xs = [math.exp(low + (high - low) * i / 200) for i in range(201)]
            ax.plot(xs, [_cdf(x, fit.median_ms, fit.sigma) for x in xs], color="tab:blue", linestyle="--",
                    label=f"log-normal: median {fit.median_ms:.0f} ms, sigma {fit.sigma:.2f}")
            # The model the scenario was written with, where it is not the single log-normal.
            mixture, split = model.mixture, model.split
            if split is not None:
                total = sum(c.samples for c in split.classes) or 1
                ax.plot(xs, [sum(c.samples * _cdf(x, c.median_ms, c.sigma) for c in split.classes) / total
                             for x in xs], color="tab:red",
                        label=f"chosen: split by {'the size of ' if split.cuts else ''}{split.argument} "
                              f"({len(split.classes)} classes)")
            elif mixture is not None and mixture.chosen:
                ax.plot(xs, [mixture.weight * _cdf(x, mixture.median_ms, mixture.sigma)
                             + (1 - mixture.weight) * _cdf(x, mixture.median2_ms, mixture.sigma2) for x in xs],
                        color="tab:red", label=f"chosen: mixture ({mixture.weight:.0%} at "
                                               f"{mixture.median_ms:.0f} ms, the rest at {mixture.median2_ms:.0f} ms)")
            ax.set_title(f"{model.tool}  (n={n}, KS D={fit.ks:.3f})", fontsize=10)
        else:
            ax.set_title(f"{model.tool}  (n={n}: too few for a fit)", fontsize=10)
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(ticker.NullFormatter())  # minor labels of a short log range collide
        ax.set_xlabel("latency (ms)")
        ax.set_ylabel("share of attempts")
        ax.set_ylim(0, 1.02)
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle("Tool latencies learned from traces: ECDF and fitted log-normal")
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)


def _cdf(x: float, median_ms: float, sigma: float) -> float:
    """A log-normal's CDF at `x` ms (a step at the median when sigma is 0)."""
    if sigma <= 0:
        return float(x >= median_ms)
    return 0.5 * (1 + math.erf((math.log(x) - math.log(median_ms)) / (sigma * math.sqrt(2))))
