"""The benchmark table of docs/development.md: run the benchmarks, then rewrite the table between its markers.

Owns which figures the table shows and how they are spelled. The table is generated, never edited
by hand: `python benchmarks/report.py` runs every benchmark below and rewrites it;
`--no-run` rebuilds it from the figures already in benchmarks/results/ (a benchmark with no figures
yet is left out). Each row says what was measured, the figure, its target and the ratio that decides
(>= 1 meets the target).

Usage: python benchmarks/report.py [--no-run] [--quick]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PAGE = HERE.parent / "docs" / "development.md"
BEGIN, END = "<!-- benchmarks:start -->", "<!-- benchmarks:end -->"

Row = tuple[str, str, str, str]  # figure, measured, target, ratio (>= 1 meets it)


def _run_rows(f: dict[str, Any]) -> list[Row]:
    return [
        ("8-call `run()` vs raw SimPy serial+parallel pair",
         f"{f['run_ratio']:.3f}x ({f['run_us']:.0f} us vs {f['raw_pair_us']:.0f} us)",
         f">= {f['run_ratio_target']}x", f"{f['run_ratio'] / f['run_ratio_target']:.2f}"),
        *([("8-call `run()` and its fingerprint vs the lean program giving the same fingerprint "
            "(`benchmarks/lean_reference.py`: dict world, SimPy, orjson)",
            f"{f['run_over_lean']:.2f}x ({f['fingerprinted_run_us']:.0f} us vs {f['lean_us']:.0f} us; "
            f"the lean program is {f['lean_over_raw_pair']:.1f}x the raw pair)",
            f"<= {f['run_over_lean_target']}x", f"{f['run_over_lean_target'] / f['run_over_lean']:.2f}")]
          if "lean_us" in f else []),
        ("checked run (run + every oracle + fingerprint) vs the pair",
         f"{f['checked_run_ratio']:.3f}x ({f['checked_run_us']:.0f} us)", f">= {f['checked_run_ratio_target']}x",
         f"{f['checked_run_ratio'] / f['checked_run_ratio_target']:.2f}"),
    ]


def _startup_rows(f: dict[str, Any]) -> list[Row]:
    return [
        ("`import harness`", f"{f['import_harness_ms']:.1f} ms", f"<= {f['import_harness_target_ms']:.0f} ms",
         f"{f['import_harness_ratio']:.2f}"),
        ("`from harness import run, find_scenario, get_scheduler`", f"{f['import_api_ms']:.0f} ms",
         f"<= {f['import_harness_target_ms']:.0f} ms (not a target)", f"{f['import_api_ratio']:.2f}"),
        (f"`{f['help_command']}` (wall, `python -c pass` = {f['bare_python_ms']:.0f} ms)", f"{f['help_ms']:.0f} ms",
         f"<= {f['help_target_ms']:.0f} ms", f"{f['help_ratio']:.2f}"),
        *([("`from harness.testing import check_scheduler` (wall) vs `python -c pass`",
            f"{f['check_import_over_bare_python']:.1f}x ({f['check_import_ms']:.0f} ms)",
            f"<= {f['check_import_target_ratio']:g}x",
            f"{f['check_import_target_ratio'] / f['check_import_over_bare_python']:.2f}")]
          if "check_import_ms" in f else []),
    ]


def _explore_rows(f: dict[str, Any]) -> list[Row]:
    return [
        ("random exploration of config-clobber (serial, every run checked), per core",
         f"{f['random_runs_per_s']:.0f} runs/s (pct {f['pct_runs_per_s']:.0f}, auto {f['auto_runs_per_s']:.0f})",
         f">= {f['random_target']:.0f} runs/s", f"{f['random_ratio']:.2f}"),
        ("`check_scheduler`'s Hypothesis part (generated batches, PCT order)",
         f"{f['hypothesis_examples_per_s']:.0f} examples/s", f">= {f['hypothesis_target']:.0f} examples/s",
         f"{f['hypothesis_ratio']:.2f}"),
        *([("Hypothesis alone on that strategy (no run): the ceiling of the row above",
            f"{f['hypothesis_engine_examples_per_s']:.0f} examples/s", "(not a target)",
            f"{f['hypothesis_engine_examples_per_s'] / f['hypothesis_target']:.2f}")]
          if "hypothesis_engine_examples_per_s" in f else []),
        *([("random exploration vs the raw SimPy pair (bench_run's), rates in the same rounds",
            f"{f['random_over_raw_pair']:.3f}x (raw pair {f['raw_pair_per_s']:.0f}/s)",
            f">= {f['random_over_raw_pair_target']}x",
            f"{f['random_over_raw_pair'] / f['random_over_raw_pair_target']:.2f}"),
           ("the Hypothesis part's CPU per example vs Hypothesis alone on the same strategy"
            + (" under the search's collector settings (run plainly: "
               f"{f['hypothesis_over_engine_plain']:.2f}x)" if "hypothesis_over_engine_plain" in f else ""),
            f"{f['hypothesis_over_engine']:.2f}x", f"<= {f['hypothesis_over_engine_target']}x",
            f"{f['hypothesis_over_engine_target'] / f['hypothesis_over_engine']:.2f}")]
          if "random_over_raw_pair" in f else []),
        *([("the Hypothesis part vs the raw SimPy pair, rates in the same rounds (the examples/s target "
            "without the machine)", f"{f['hypothesis_over_raw_pair']:.4f}x",
            f">= {f['hypothesis_over_raw_pair_target']}x",
            f"{f['hypothesis_over_raw_pair'] / f['hypothesis_over_raw_pair_target']:.2f}")]
          if "hypothesis_over_raw_pair" in f else []),
    ]


def _sweep_scale_rows(f: dict[str, Any]) -> list[Row]:
    n, seconds = f["cores"], f["seconds_median"]
    # What two pure-Python loops gained side by side then: 2.0 on two idle cores, less with neighbours.
    measured = f.get("machine_ceiling_2_processes")
    ceiling = f"; the machine's own ceiling then: {' and '.join(f'{c:.2f}' for c in measured)}x" if measured else ""
    rows = [(f"sweep of {f['cells']:,} cells, 1 -> {n} processes (pool start-up included{ceiling})",
             f"{f['process_speedup']:.2f}x ({seconds['1_process']:.1f} s -> {seconds[f'{n}_processes']:.1f} s)",
             f">= {f['process_speedup_target']}x", f"{f['process_ratio']:.2f}")]
    if "dask_speedup" in f:
        rows.append((f"sweep of {f['cells']:,} cells on Dask, 1 -> 2 workers (LocalCluster start-up "
                     f"{f['dask_startup_s_median']:.1f} s not included)",
                     f"{f['dask_speedup']:.2f}x "
                     f"({seconds['dask_1_worker']:.1f} s -> {seconds['dask_2_workers']:.1f} s)"
                     + (f"; from the workers' CPU time, with a core each: {f['dask_speedup_cpu_estimate']:.2f}x"
                        if "dask_speedup_cpu_estimate" in f else ""),
                     f">= {f['dask_speedup_target']}x", f"{f['dask_ratio']:.2f}"))
    return rows


_SCALE_SERIES = {"serial_hung": "one batch under serial, hung half way",
                 "parallel_hung": "one batch under parallel, hung with every call running"}


def _scale_rows(f: dict[str, Any]) -> list[Row]:
    rows = []
    target = f["ratio_target"]
    for name, points in f["series"].items():
        first = 80 if name == "batches_of_8" else 100
        base = next(p for p in points if p["calls"] == first)
        top = points[-1]
        shown = _SCALE_SERIES.get(name, f"one batch under {name}")
        what = (f"{top['calls'] // 8:,} batches of 8 calls (resource_keys), per call, vs 10 batches"
                if name == "batches_of_8" else f"{shown}, per call, 100 -> {top['calls']:,} calls")
        worst = f["worst_growth_ratio"][name]
        memory = f", memory {top['peak_ratio']:.2f}x" if "peak_ratio" in top else ""
        # Run and oracles together: CPython's collector cleans one run's garbage in whichever phase
        # of the next allocates enough, so the split between the two moves more than their sum.
        checked = (top["run_us"] + top["oracles_us"]) / (base["run_us"] + base["oracles_us"])
        rows.append((what, f"run {top['run_ratio']:.2f}x ({base['run_us']:.0f} -> {top['run_us']:.0f} us), "
                           f"oracles {top['oracles_ratio']:.2f}x, both {checked:.2f}x{memory}", f"<= {target:g}x",
                     f"{target / worst:.2f}"))
    return rows


def _report_text_rows(f: dict[str, Any]) -> list[Row]:
    at = next(p for p in f["points"] if p["calls"] == f["target_calls"])
    flat = ", ".join(f"{p['text_us_per_call']:.0f}" for p in f["points"])
    return [(f"`harness run --format text` of a {f['target_calls']:,}-call run vs run + oracles "
             f"(us per call at {', '.join(str(p['calls']) for p in f['points'])}: {flat})",
             f"{at['text_over_run']:.2f}x ({at['text_ms']:.0f} ms vs {at['run_ms']:.0f} ms)",
             f"<= {f['target_text_over_run']:g}x", f"{f['target_ratio']:.2f}")]


def _traces_rows(f: dict[str, Any]) -> list[Row]:
    small, large = f["small"], f["large"]
    return [
        (f"`harness traces import` of a {large['spans']:,}-span OTLP JSON lines export (read, group into "
         f"{large['turns']:,} turns, learn the fits; one timed import, in process)",
         f"{large['spans_per_s']:,} spans/s ({large['seconds']:.1f} s, {large['file_mb']:.0f} MB)", "(not a target)",
         "-"),
        (f"its peak of Python allocations (tracemalloc, a second import) per span, {small['spans']:,} -> "
         f"{large['spans']:,} spans",
         f"{f['peak_growth_per_span_ratio']:.2f}x ({small['peak_mb']:.1f} -> {large['peak_mb']:.1f} MB, "
         f"{large['bytes_per_tool_span']:,} bytes per tool span)", "(not a target: bounded per span)", "-"),
    ]


def _peers_rows(f: dict[str, Any]) -> list[Row]:
    if "skipped" in f:
        return []
    ratio, target = f["parallel_over_detangle"], f["parallel_over_detangle_target"]
    return [
        (f"random exploration of the 8-call batch vs detangle {f['detangle_version']} on the same asyncio "
         "tasks, runs per CPU-second (every run checked)",
         f"parallel {ratio:.2f}x ({f['parallel_runs_per_s']:.0f} vs "
         f"{f['detangle_runs_per_s']:.0f} runs/s); `gather` through `from_asyncio` "
         f"{f['gather_bridged_over_detangle']:.2f}x", f">= {target:g}x", f"{ratio / target:.2f}"),
    ]


def _bridges_rows(f: dict[str, Any]) -> list[Row]:
    rows = []
    for name, entry in f["recipes"].items():
        if "skipped" in entry:
            continue
        us, ratio, target = entry["us_per_run"], entry["bridged_over_floor_ratio"], entry["ratio_target"]
        rows.append((f"{name} through its bridge vs the same runtime on its own floor (its executor, instant "
                     "tools, no harness), runs per CPU-second",
                     f"{ratio:.2f}x ({us['bridged']:.0f} us vs {us['floor']:.0f} us)", f">= {target:g}x",
                     f"{ratio / target:.2f}"))
    gather, pool = f["asyncio_gather_over_parallel_ratio"], f["threads_pool_over_parallel_ratio"]
    rows += [
        ("plain `asyncio.gather` executor through `from_asyncio` vs the built-in `parallel`, runs per CPU-second",
         f"{gather:.3f}x ({1e6 / f['asyncio_gather_runs_per_s']:.0f} us vs {1e6 / f['parallel_runs_per_s']:.0f} us)",
         f">= {f['asyncio_target_ratio']:g}x", f"{gather / f['asyncio_target_ratio']:.2f}"),
        ("plain `ThreadPoolExecutor` executor through `from_threads` vs the built-in `parallel`",
         f"{pool:.3f}x ({1e6 / f['threads_pool_runs_per_s']:.0f} us)", f">= {f['threads_target_ratio']:g}x",
         f"{pool / f['threads_target_ratio']:.2f}"),
    ]
    check = f.get("check_scheduler_openai_agents")
    if check is not None:
        rows.append((f"`check_scheduler` of the openai-agents recipe, `{check['profile']}` profile (wall, "
                     f"{check['cpus']} CPUs)", f"{check['wall_s']:.1f} s", f"< {check['target_s']:g} s",
                     f"{check['target_s'] / check['wall_s']:.2f}"))
    return rows


def _asyncio_ceiling_rows(f: dict[str, Any]) -> list[Row]:
    return [("the `gather` row's ceiling: `parallel`'s run beside the executor's own asyncio work (no bridge "
             f"glue: {f['asyncio_floor_us']:.0f} us a run; the bridge adds {f['bridge_glue_us']:.0f} us more)",
             f"{f['ceiling_ratio']:.3f}x", "(not a target)", "-")]


#: name -> (script arguments for a full run, for a quick one, rows from its figures)
BENCHMARKS: dict[str, tuple[list[str], list[str], Callable[[dict[str, Any]], list[Row]]]] = {
    "bench_run": (["--rounds", "5"], ["--rounds", "3", "--seconds", "0.2"], _run_rows),
    "bench_scale": ([], ["--max-n", "10000", "--calls", "5000"], _scale_rows),
    "bench_startup": (["--runs", "11"], ["--runs", "5"], _startup_rows),
    "bench_report_text": (["--rounds", "5"], ["--rounds", "1", "--max-n", "1000"], _report_text_rows),
    "bench_explore": (["--rounds", "3"], ["--rounds", "1", "--runs", "1000", "--examples", "200"], _explore_rows),
    "bench_sweep_scale": (["--rounds", "3"], ["--rounds", "1", "--cells", "1000"], _sweep_scale_rows),
    "bench_traces": ([], ["--spans", "20000"], _traces_rows),
    "bench_peers": ([], ["--runs", "500", "--rounds", "1"], _peers_rows),
    "bench_bridges": (["--rounds", "7", "--profile-seconds", "0"],
                      ["--rounds", "3", "--profile-seconds", "0", "--no-check"], _bridges_rows),
    "bench_asyncio_ceiling": (["--rounds", "5"], ["--rounds", "3"], _asyncio_ceiling_rows),
}


def figures(name: str) -> dict[str, Any] | None:
    path = HERE / "results" / f"{name}.json"
    if not path.is_file():
        return None
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def table() -> str:
    lines = ["| figure | measured | target | ratio (>= 1 meets it) |", "| --- | --- | --- | --- |"]
    notes = []
    for name, (_, _, rows) in BENCHMARKS.items():
        found = figures(name)
        if found is None:
            continue
        lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows(found)]
        libraries = ", ".join(f"{lib} {v}" for lib, v in found.get("libraries", {}).items())
        notes.append(f"- `{name}`: Python {found.get('python', '?')}, load average {found.get('load_average_1m', '?')}"
                     + (f"; {libraries}" if libraries else ""))
    lines += ["", "Generated by `python benchmarks/report.py`; do not edit. Measured with", *notes]
    return "\n".join(lines)


def rewrite(page: Path, body: str) -> None:
    text = page.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    page.write_text(text[:start] + "\n" + body + "\n" + text[end:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-run", action="store_true", help="use the figures already in benchmarks/results/")
    parser.add_argument("--quick", action="store_true", help="shorter measurements (noisier)")
    args = parser.parse_args()
    if not args.no_run:
        for name, (full, quick, _) in BENCHMARKS.items():
            subprocess.run([sys.executable, str(HERE / f"{name}.py"), *(quick if args.quick else full)],
                           check=True, cwd=HERE.parent, stdout=subprocess.DEVNULL)
    body = table()
    rewrite(PAGE, body)
    print(body)


if __name__ == "__main__":
    main()
