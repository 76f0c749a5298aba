"""The learned latency models drawn: per tool, the ECDF of its recorded latencies with the fitted
log-normal's CDF over it (`harness traces summary --plot`).

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
            ys = [0.5 * (1 + math.erf((math.log(x) - math.log(fit.median_ms)) / (fit.sigma * math.sqrt(2))))
                  if fit.sigma > 0 else float(x >= fit.median_ms) for x in xs]
            ax.plot(xs, ys, color="tab:blue", linestyle="--",
                    label=f"log-normal: median {fit.median_ms:.0f} ms, sigma {fit.sigma:.2f}")
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
