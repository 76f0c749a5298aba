"""Plots, drawn with matplotlib's Agg backend from precomputed series (see `compare.plot_data` and
`gantt.gantt_data`), so what is drawn is exactly what tests check.

Owns figure layout and file names. Imports matplotlib when called, never at import time; never
computes statistics.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

from harness.atomic import replacing_bytes


def matplotlib_cache_dir() -> Path:
    """Where matplotlib keeps its font cache unless the user chose (`MPLCONFIGDIR`): the platform's
    user cache directory (`$XDG_CACHE_HOME`, else `~/.cache`) under harness/matplotlib, never a
    dot-directory matplotlib would otherwise create in the home directory on first use."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"  # XDG: a relative value is ignored
    return root / "harness" / "matplotlib"


def _pyplot() -> Any:
    if not os.environ.get("MPLCONFIGDIR"):  # set before the first import: matplotlib reads it then
        os.environ["MPLCONFIGDIR"] = str(matplotlib_cache_dir())
    import matplotlib

    matplotlib.use("Agg")  # files only: no display, no GUI toolkit
    import matplotlib.pyplot as plt

    return plt


_STYLES = ("-", "--", "-.", ":")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def draw_comparison(data: dict[str, Any], out: Path) -> list[str]:
    """ECDF per scenario, speedup bars, and a violations heatmap for several scenarios. Unsafe
    policies (any run violates) are drawn as such: red dashed ECDF curves and hatched red bars
    labelled "fast but wrong: N% violate"; the fastest safe policy's bar is outlined in green.
    Curves with the same data get distinct line styles and markers, drawn widest first, and their
    legend entries say which they coincide with."""
    plt = _pyplot()
    images: list[str] = []
    rates = data.get("violation_rate", {})
    for index, (scenario, series) in enumerate(sorted(data["ecdf"].items())):
        fig, ax = plt.subplots(figsize=(7, 4))
        twins = {name: group for group in data.get("identical", {}).get(scenario, []) for name in group}
        reds = iter(("red", "darkred", "tomato", "firebrick", "lightcoral", "maroon") * 4)
        for i, (scheduler, values) in enumerate(series.items()):
            n = len(values)
            rate = rates.get(scenario, {}).get(scheduler) or 0.0
            group = twins.get(scheduler, [scheduler])
            rank = group.index(scheduler)  # earlier members of a group of equal curves are drawn wider
            label = scheduler
            if rate > 0:
                label += f" (unsafe: {100 * rate:.0f}% violate)"
            if len(group) > 1:
                label += " = " + ", ".join(other for other in group if other != scheduler)
            ax.step(values, [(k + 1) / n for k in range(n)], where="post", label=label,
                    linestyle="--" if rate > 0 else _STYLES[i % len(_STYLES)],
                    linewidth=1.5 + 2.0 * (len(group) - 1 - rank), color=next(reds) if rate > 0 else None,
                    marker=_MARKERS[i % len(_MARKERS)], markevery=max(1, n // 8), markersize=5,
                    alpha=0.9, zorder=2 + rank)
        ax.set(title=f"makespan ECDF: {scenario}", xlabel="makespan (virtual ms)", ylabel="fraction of runs")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        # A scenario may be named by a path: the file name keeps only safe characters.
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in scenario).strip("._")[:60]
        name = f"ecdf-{index:02d}-{safe}.png"
        fig.tight_layout()
        _save(fig, out / name)
        plt.close(fig)
        images.append(name)

    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    scenarios = sorted(data["speedup"])
    schedulers = sorted({s for table in data["speedup"].values() for s in table})
    width = 0.8 / max(1, len(scenarios))
    top = max([v or 0.0 for table in data["speedup"].values() for v in table.values()] + [1.0])
    for i, scenario in enumerate(scenarios):
        values = [data["speedup"][scenario].get(s) or 0.0 for s in schedulers]
        unsafe = [(rates.get(scenario, {}).get(s) or 0.0) > 0 for s in schedulers]
        safe_values = [v for v, bad in zip(values, unsafe, strict=True) if not bad]
        best = max(safe_values) if safe_values else None
        xs = [x + i * width for x in range(len(schedulers))]
        bars = ax.bar(xs, values, width, label=scenario if len(scenarios) > 1 else None)
        for bar, scheduler, value, bad in zip(bars, schedulers, values, unsafe, strict=True):
            if bad:
                rate = rates[scenario][scheduler]
                bar.set(facecolor="#f4b6b6", edgecolor="red", hatch="xx", linewidth=1.2)
                ax.text(bar.get_x() + bar.get_width() / 2, value + top * 0.02,
                        f"fast but wrong:\n{100 * rate:.0f}% violate" if value > 1 else f"wrong:\n{100 * rate:.0f}%",
                        ha="center", va="bottom", fontsize=7, color="red")
            elif best is not None and value == best and value > 0:
                bar.set(edgecolor="green", linewidth=2.5)
                ax.text(bar.get_x() + bar.get_width() / 2, value + top * 0.02, "fastest safe", ha="center",
                        va="bottom", fontsize=7, color="green", fontweight="bold")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_ylim(0, top * 1.25)
    ax.set_xticks([x + width * (len(scenarios) - 1) / 2 for x in range(len(schedulers))], schedulers,
                  rotation=30, ha="right")
    ax.set(title="mean speedup over serial (paired by seed); hatched red: unsafe",
           ylabel="serial / policy makespan")
    if len(scenarios) > 1:
        ax.legend(fontsize=7)
    fig.tight_layout()
    _save(fig, out / "speedup.png")
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
        _save(fig, out / "heatmap.png")
        plt.close(fig)
        images.append("heatmap.png")
    return images


_OUTCOME_COLOURS = {"ok": "tab:green", "error": "tab:red", "timeout": "tab:orange", "cancelled": "tab:gray",
                    "unknown": "tab:purple", None: "tab:blue"}
_LINE_STYLES = {"interrupt": ("red", "--", 1.5), "crash": ("black", "-", 2.5), "timeout": ("tab:orange", ":", 1.5),
                "batch": ("gray", "-.", 1.0)}


def draw_gantt(data: dict[str, Any], path: Path) -> None:
    """Lanes of calls (see `gantt.gantt_data`): attempts as bars coloured by outcome, violating calls
    outlined in red, touches as small markers, each violation's racing touches as large red markers
    with a label and arrows in trace order, faults and grace periods shaded, interrupts, timeouts and
    crashes as marked vertical lines, an aggregate lane as a count of running calls."""
    plt = _pyplot()
    lanes = data["lanes"]
    rows = data.get("lane_rows") or [1] * len(lanes)
    fig, ax = plt.subplots(figsize=(11, min(40.0, 1.6 + 0.42 * len(lanes))))
    violating = set(data["violating"])
    aggregate = data.get("aggregate")
    many = len(data["bars"]) > 120

    def y_of(lane: int, row: int = 0) -> float:
        height = 0.7 / rows[lane]
        return float(lane - 0.35 + height * (row + 0.5))

    for bar in data["bars"]:
        lane = bar.get("lane", lanes.index(bar["call"]) if bar["call"] in lanes else 0)
        if aggregate is not None and lane == aggregate["lane"]:
            continue  # drawn as a count below
        height = 0.7 / rows[lane]
        bad = bar["call"] in violating
        ax.barh(y_of(lane, bar.get("row", 0)), bar["end"] - bar["start"], left=bar["start"], height=height * 0.9,
                color=_OUTCOME_COLOURS.get(bar["outcome"], "tab:blue"), alpha=0.35 if bar["detached"] else 0.8,
                hatch="//" if bar["fault"] else None, edgecolor="red" if bad else "black",
                linewidth=2.2 if bad else (0.2 if many else 0.5))
        if data.get("packed") and lanes[lane] != bar["call"] and not many:
            ax.text(bar["start"], y_of(lane, bar.get("row", 0)), f" {bar['call']}", va="center", fontsize=6,
                    clip_on=True)
    if aggregate is not None:
        steps = aggregate["steps"]
        peak = max(1, aggregate["peak"])
        lane = aggregate["lane"]
        xs = [s[0] for s in steps]
        ys = [lane + 0.35 - 0.7 * s[1] / peak for s in steps]
        ax.fill_between(xs, ys, [lane + 0.35] * len(xs), step="post", color="tab:blue", alpha=0.4)
        ax.text(xs[0] if xs else 0, lane - 0.38, f" up to {aggregate['peak']} running at once", fontsize=7,
                va="bottom")
    markers = {"read": "o", "write": "^", "truncate": "v", "append": "s", "remove": "x"}
    if len(data["touches"]) <= 600:
        for touch in data["touches"]:
            if touch.get("lane") is None:
                continue
            ax.plot(touch["t"], touch["lane"], markers.get(touch["op"], "."), color="black", markersize=3.5)
    by_violation: dict[int, list[dict[str, Any]]] = {}
    for touch in data.get("racing", []):
        by_violation.setdefault(touch["violation"], []).append(touch)
    for number, (_, found) in enumerate(sorted(by_violation.items())):
        for i, touch in enumerate(found):
            ax.plot(touch["t"], touch["lane"], markers.get(touch["op"], "o"), color="red", markersize=10,
                    markeredgecolor="black", zorder=5)
            ax.annotate(touch["label"], (touch["t"], touch["lane"]), xytext=(6, 9 + 9 * ((i + number) % 2)),
                        textcoords="offset points", fontsize=8, color="darkred", zorder=6,
                        bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8})
        for a, b in itertools.pairwise(found):
            ax.annotate("", xy=(b["t"], b["lane"]), xytext=(a["t"], a["lane"]), zorder=4,
                        arrowprops={"arrowstyle": "->", "color": "red", "lw": 1.2, "alpha": 0.7,
                                    "connectionstyle": "arc3,rad=0.15"})
    seen: set[str] = set()
    for region in data["shaded"]:
        label = region["kind"] if region["kind"] not in seen else None
        seen.add(region["kind"])
        ax.axvspan(region["start"], region["end"], color="gold" if region["kind"] == "grace" else "lightgray",
                   alpha=0.3, label=label)
    for line in data["lines"]:
        colour, style, width = _LINE_STYLES.get(line["kind"], ("gray", "--", 1.0))
        label = line["kind"] if line["kind"] not in seen else None
        seen.add(line["kind"])
        ax.axvline(line["t"], color=colour, linestyle=style, linewidth=width, label=label)
        if line["kind"] in ("interrupt", "crash", "timeout"):
            what = f"{line['call']} timed out" if line["kind"] == "timeout" else line["kind"]
            ax.text(line["t"], -0.6, f" {what} {line['t']} ms", color=colour, fontsize=8, va="bottom")
    ax.set_yticks(range(len(lanes)), lanes, fontsize=8 if len(lanes) <= 30 else 6)
    for tick, name in zip(ax.get_yticklabels(), lanes, strict=False):
        if name in violating:
            tick.set_color("red")
            tick.set_fontweight("bold")
    ax.set_ylim(len(lanes) - 0.5, -0.9)
    title = data["title"]
    if data.get("violations"):
        labels = sorted({v["label"] for v in data["violations"]})
        title += "\nviolations: " + ", ".join(labels) + (" (racing touches in red)" if data.get("racing") else "")
    ax.set(xlabel="virtual time (ms)", title=title)
    ax.margins(x=0.02)
    ax.grid(axis="x", alpha=0.3)
    if seen:
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)


def _save(fig: Any, path: Path) -> None:
    """The figure as a PNG written whole or not at all (harness.atomic)."""
    with replacing_bytes(path) as file:
        fig.savefig(file, dpi=100, format="png")
