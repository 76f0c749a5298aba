"""Sweep resume: how long a half-done sweep takes to start its first new cell.

Writes a sweep file holding half of a 20,000-cell grid (rows as `sweep` writes them, without running
them), then resumes the whole grid and times the moment the first new row arrives (target: under
1 s, issue 15's F9), against the time one cell takes to run, measured in the same process. Prints one
JSON object and writes benchmarks/results/bench_sweep_resume.json.

Usage: python benchmarks/bench_sweep_resume.py [--cells N]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
import time
from pathlib import Path

from _figures import emit

from harness import __version__
from harness.sweep import grid, run_cell, sweep


class _FirstRow(Exception):
    """Stops the resumed sweep once its first new row is in."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=20_000)
    args = parser.parse_args()
    schedulers = ["serial", "parallel"]
    cells = grid(["config-clobber"], schedulers, range(1, args.cells // len(schedulers) + 1))
    template = run_cell(cells[0])
    start = time.perf_counter()
    run_cell(cells[1])
    one_cell = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as directory:
        out = Path(directory) / "rows.jsonl"
        half = sorted(cells)[: len(cells) // 2]
        out.write_text("".join(json.dumps({**template, "scheduler": c.scheduler, "seed": c.seed}) + "\n"
                               for c in half))
        progress: list[tuple[int, float]] = []
        start = time.perf_counter()

        def on_progress(done: int, total: int) -> None:
            progress.append((done, time.perf_counter() - start))
            if len(progress) > 1:
                raise _FirstRow

        with contextlib.suppress(_FirstRow):
            sweep(cells, out=out, chunk_size=1, on_progress=on_progress)
    first_new = progress[-1][1]
    figures = {
        "benchmark": "sweep resume: time to the first new cell of a half-done sweep",
        "harness_version": __version__,
        "cells": len(cells),
        "already_done": len(half),
        "seconds_to_first_new_cell": round(first_new, 3),
        "seconds_per_cell": round(one_cell, 4),
        "resume_overhead_in_cells": round((first_new - one_cell) / one_cell, 1),
        "target_seconds": 1.0,
        "target_met": first_new < 1.0,
    }
    emit("bench_sweep_resume", figures)


if __name__ == "__main__":
    main()
