"""Trace import: spans per second and memory of `harness traces import` on a 100,000-span export.

Writes a synthetic `.jsonl` export of about `--spans` spans (harness.traces.sample's generator with
more conversations), then imports it (read, group into turns, learn the models) in this process and
reports the rate (spans/s over every span in the file, tool, model and agent spans alike) and the peak
of Python allocations during the import (tracemalloc), next to the same for a tenth of the spans: a
`.jsonl` file streams one line at a time, so the peak grows with the kept tool-call records (about
`bytes_per_tool_span` each), not with the file's text. Prints one JSON object and writes
benchmarks/results/bench_traces.json.

Usage: python benchmarks/bench_traces.py [--spans N]
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
import tracemalloc
from pathlib import Path

from _figures import emit

from harness import __version__
from harness.traces import import_traces, learn
from harness.traces.sample import generate

SPANS_PER_CONVERSATION = 14.2  # measured on the generator: 90,408 spans / 6,366 conversations


def measure(path: Path, spans: int) -> dict[str, float]:
    """The time of one import (without tracemalloc, which slows allocation several-fold), then the peak of
    a second one (with it)."""
    start = time.perf_counter()
    imported = import_traces([path])
    learn(imported.turns)
    seconds = time.perf_counter() - start
    del imported
    tracemalloc.start()
    imported = import_traces([path])
    learn(imported.turns)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"spans": spans, "tool_spans": imported.tool_spans, "turns": len(imported.turns),
            "file_mb": round(path.stat().st_size / 2**20, 1), "seconds": round(seconds, 2),
            "spans_per_s": round(spans / seconds), "peak_mb": round(peak / 2**20, 1),
            "bytes_per_tool_span": round(peak / imported.tool_spans)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=100_000)
    args = parser.parse_args()
    import scipy.stats  # noqa: F401  (imported once before measuring: its import is no part of an import's cost)

    rows = []
    with tempfile.TemporaryDirectory() as directory:
        for target in (args.spans // 10, args.spans):
            data = generate(conversations=max(1, round(target / SPANS_PER_CONVERSATION)))
            path = Path(directory) / f"export-{target}.jsonl"
            path.write_bytes(data)
            spans = data.count(b'"spanId"')
            del data
            rows.append(measure(path, spans))
    small, large = rows
    emit("bench_traces", {
        "benchmark": "traces import: read, group into turns and learn from an OTLP JSON lines export",
        "harness_version": __version__,
        "python": platform.python_version(),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "small": small,
        "large": large,
        "peak_growth_per_span_ratio": round((large["peak_mb"] / large["spans"]) / (small["peak_mb"] / small["spans"]),
                                            2),
    })


if __name__ == "__main__":
    main()
