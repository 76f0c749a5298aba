"""The docs' benchmark table shows the bridges' figures (issue 24): each row reads the keys its benchmark
writes, measured here in a very short run of the benchmark itself, so a renamed key fails."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SHORT = ["--rounds", "1", "--seconds", "0.01"]


@pytest.fixture
def report(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import report

    yield report
    for name in ("bench_bridges", "bench_asyncio_ceiling", "bench_run", "report", "_figures"):
        sys.modules.pop(name, None)


def measured(module: Any, argv: list[str], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The figures `module.main()` emits, captured instead of written to benchmarks/results/."""
    emitted: dict[str, Any] = {}
    monkeypatch.setattr(module, "emit", lambda name, figures: emitted.update(figures))
    monkeypatch.setattr(sys, "argv", [module.__name__, *argv])
    module.main()
    return emitted


def test_the_bridges_rows_read_what_bench_bridges_measures(report: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import bench_bridges

    figures = measured(bench_bridges, [*SHORT, "--no-check", "--profile-seconds", "0", "--only"], monkeypatch)
    gather, pool = report._bridges_rows(figures)
    assert gather[0].startswith("plain `asyncio.gather` executor through `from_asyncio` vs the built-in `parallel`")
    assert gather[1].startswith(f"{figures['asyncio_gather_over_parallel_ratio']:.3f}x (") and gather[2] == ">= 0.7x"
    assert pool[1].startswith(f"{figures['threads_pool_over_parallel_ratio']:.3f}x (") and pool[2] == ">= 0.5x"
    assert float(pool[3]) == pytest.approx(figures["threads_pool_over_parallel_ratio"] / 0.5, abs=0.006)
    # A recipe's row and the check's, from what the benchmark writes when its runtime is installed.
    figures["recipes"]["openai-agents"] = {"bridged_over_floor_ratio": 0.9, "ratio_target": 0.667,
                                           "us_per_run": {"bridged": 900.0, "floor": 810.0}}
    figures["check_scheduler_openai_agents"] = {"profile": "ci", "wall_s": 16.9, "target_s": 60, "cpus": 2}
    recipe, _, _, check = report._bridges_rows(figures)
    assert recipe[0].startswith("openai-agents through its bridge") and recipe[1:] == (
        "0.90x (900 us vs 810 us)", ">= 0.667x", "1.35")
    assert check == ("`check_scheduler` of the openai-agents recipe, `ci` profile (wall, 2 CPUs)", "16.9 s", "< 60 s",
                     "3.55")


def test_the_ceiling_row_reads_what_bench_asyncio_ceiling_measures(report: Any,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import bench_asyncio_ceiling

    figures = measured(bench_asyncio_ceiling, SHORT, monkeypatch)
    (row,) = report._asyncio_ceiling_rows(figures)
    assert 0 < figures["ceiling_ratio"] < 1 and row[1] == f"{figures['ceiling_ratio']:.3f}x"
    assert f"no bridge glue: {figures['asyncio_floor_us']:.0f} us a run" in row[0]
    assert row[2:] == ("(not a target)", "-")
    assert {"bench_bridges", "bench_asyncio_ceiling"} <= set(report.BENCHMARKS)
