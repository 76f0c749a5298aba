"""The README's benchmark table shows `bench_traces`' figures: its row reads the keys the benchmark
writes (measured here on a small export, so a renamed key fails), and `--no-run` leaves out a
benchmark without figures."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("scipy")

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def modules(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import bench_traces
    import report

    yield bench_traces, report
    for name in ("bench_traces", "report", "_figures"):
        sys.modules.pop(name, None)


def test_the_traces_rows_read_what_the_benchmark_measures(tmp_path: Path, modules: tuple[Any, Any]) -> None:
    bench_traces, report = modules
    from harness.traces.sample import generate

    rows = []
    for conversations in (3, 30):
        path = tmp_path / f"export-{conversations}.jsonl"
        data = generate(conversations=conversations)
        path.write_bytes(data)
        rows.append(bench_traces.measure(path, data.count(b'"spanId"')))
    small, large = rows
    figures = {"small": small, "large": large, "peak_growth_per_span_ratio": 1.0}
    (rate, memory) = report._traces_rows(figures)
    assert rate[0].startswith(f"`harness traces import` of a {large['spans']:,}-span OTLP JSON lines export")
    assert rate[1].startswith(f"{large['spans_per_s']:,} spans/s") and rate[2:] == ("(not a target)", "-")
    assert f"{small['spans']:,} -> {large['spans']:,} spans" in memory[0]
    assert f"{large['bytes_per_tool_span']:,} bytes per tool span" in memory[1]


def test_the_table_has_the_traces_rows_only_when_their_figures_exist(modules: tuple[Any, Any],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _, report = modules
    assert "bench_traces" in report.BENCHMARKS
    figures = {"small": {"spans": 10, "peak_mb": 1.0}, "peak_growth_per_span_ratio": 1.02, "python": "3.11",
               "large": {"spans": 100, "turns": 30, "spans_per_s": 5000, "seconds": 0.02, "file_mb": 0.1,
                         "peak_mb": 9.8, "bytes_per_tool_span": 900}}
    monkeypatch.setattr(report, "figures", lambda name: figures if name == "bench_traces" else None)
    table = report.table()
    assert "| `harness traces import` of a 100-span OTLP JSON lines export" in table
    assert "| 1.02x (1.0 -> 9.8 MB, 900 bytes per tool span) |" in table and "- `bench_traces`: Python 3.11" in table
    monkeypatch.setattr(report, "figures", lambda name: None)
    assert "traces import" not in report.table()
