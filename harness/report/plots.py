"""Plots, drawn with matplotlib's Agg backend from precomputed series (see `compare.plot_data` and
`gantt.gantt_data`), so what is drawn is exactly what tests check.

Owns figure layout and file names. Imports matplotlib when called, never at import time; never
computes statistics.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only: no display, no GUI toolkit
    import matplotlib.pyplot as plt

    return plt


def draw_comparison(data: dict[str, Any], out: Path) -> list[str]:
    """ECDF per scenario, speedup bars, and a violations heatmap for several scenarios."""
    plt = _pyplot()
    images: list[str] = []
    for index, (scenario, series) in enumerate(sorted(data["ecdf"].items())):
        fig, ax = plt.subplots(figsize=(7, 4))
        for scheduler, values in series.items():
            n = len(values)
            ax.step(values, [(i + 1) / n for i in range(n)], where="post", label=scheduler)
        ax.set(title=f"makespan ECDF: {scenario}", xlabel="makespan (virtual ms)", ylabel="fraction of runs")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        # A scenario may be named by a path: the file name keeps only safe characters.
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in scenario).strip("._")[:60]
        name = f"ecdf-{index:02d}-{safe}.png"
        fig.tight_layout()
        fig.savefig(out / name, dpi=100)
        plt.close(fig)
        images.append(name)

    fig, ax = plt.subplots(figsize=(7, 4))
    scenarios = sorted(data["speedup"])
    schedulers = sorted({s for table in data["speedup"].values() for s in table})
    width = 0.8 / max(1, len(scenarios))
    for i, scenario in enumerate(scenarios):
        values = [data["speedup"][scenario].get(s) or 0.0 for s in schedulers]
        ax.bar([x + i * width for x in range(len(schedulers))], values, width, label=scenario)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([x + width * (len(scenarios) - 1) / 2 for x in range(len(schedulers))], schedulers,
                  rotation=30, ha="right")
    ax.set(title="mean speedup over serial (paired by seed)", ylabel="serial / policy makespan")
    if len(scenarios) > 1:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "speedup.png", dpi=100)
    plt.close(fig)
    images.append("speedup.png")

    if "heatmap" in data:
        heat = data["heatmap"]
        rates = [[v if v is not None else float("nan") for v in row] for row in heat["violation_rate"]]
        fig, ax = plt.subplots(figsize=(3.5 + 1.1 * len(heat["schedulers"]), 1.5 + 0.4 * len(heat["scenarios"])))
        shown = ax.imshow(rates, cmap="Reds", vmin=0, vmax=1, aspect="auto")
        ax.set_xticks(range(len(heat["schedulers"])), heat["schedulers"], rotation=30, ha="right")
        ax.set_yticks(range(len(heat["scenarios"])), heat["scenarios"])
        for y, row in enumerate(heat["runs_with_violation"]):
            for x, count in enumerate(row):
                dark = rates[y][x] == rates[y][x] and rates[y][x] > 0.5  # NaN-safe
                ax.text(x, y, "-" if count is None else str(count), ha="center", va="center", fontsize=7,
                        color="white" if dark else "black")
        fig.colorbar(shown, ax=ax, label="share of runs with a violation")
        ax.set_title("runs with a violation, scenario x policy")
        fig.tight_layout()
        fig.savefig(out / "heatmap.png", dpi=100)
        plt.close(fig)
        images.append("heatmap.png")
    return images


def draw_gantt(data: dict[str, Any], path: Path) -> None:
    """One lane per call: attempts as bars, touches as markers, faults and interrupts shaded,
    violating calls outlined in red."""
    plt = _pyplot()
    lanes = data["lanes"]
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.45 * len(lanes)))
    colours = {"ok": "tab:green", "error": "tab:red", "timeout": "tab:orange", "cancelled": "tab:gray",
               "unknown": "tab:purple", None: "tab:blue"}
    for bar in data["bars"]:
        y = lanes.index(bar["call"])
        ax.barh(y, bar["end"] - bar["start"], left=bar["start"], height=0.6,
                color=colours.get(bar["outcome"], "tab:blue"), alpha=0.35 if bar["detached"] else 0.8,
                hatch="//" if bar["fault"] else None,
                edgecolor="red" if bar["call"] in data["violating"] else "black",
                linewidth=2 if bar["call"] in data["violating"] else 0.5)
    markers = {"read": "o", "write": "^", "truncate": "v", "append": "s", "remove": "x"}
    for touch in data["touches"]:
        ax.plot(touch["t"], lanes.index(touch["call"]), markers.get(touch["op"], "."), color="black", markersize=4)
    for region in data["shaded"]:
        ax.axvspan(region["start"], region["end"], color="gold" if region["kind"] == "grace" else "lightgray",
                   alpha=0.3, label=region["kind"])
    for line in data["lines"]:
        ax.axvline(line["t"], color="red" if line["kind"] in ("interrupt", "crash") else "gray", linestyle="--",
                   linewidth=2 if line["kind"] == "crash" else 1)
    ax.set_yticks(range(len(lanes)), lanes)
    ax.invert_yaxis()
    ax.set(xlabel="virtual time (ms)", title=data["title"])
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
