"""`harness compare`: schedulers on the same seeds, one table per scenario.

Owns the command's options and its text table (makespan percentiles, speedup over serial, ratio to
optimal, violations by label; a loop scenario's task figures). The summary, plots and pages come
from harness.report.compare; the runs from harness.sweep. `--traces` hands the command to
`harness.cli.traces.replay_turns` (production's recorded turns instead of a scenario). It writes only
under `--out`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from harness.cli.console import report_console
from harness.cli.guard import guarded
from harness.cli.options import (
    MAX_RUNS,
    check_schedulers,
    cluster_for,
    dask_option,
    directory_option,
    names,
    processes_option,
    progress_bar,
    trust_of,
    trust_options,
    wall_timeout_option,
)
from harness.scenario import find_scenario, scenario_names


@click.command("compare")
@click.argument("scenario", required=False)
@click.option("--scenarios", "scenario_list", default=None,
              help="Comma-separated scenario names, or all (instead of SCENARIO).")
@click.option("--schedulers", "scheduler_list", default="serial,parallel", show_default=True,
              help="Comma-separated scheduler names (serial and optimal are always run as baselines).")
@click.option("--runs", type=click.IntRange(min=1, max=MAX_RUNS), default=100, show_default=True,
              help="Seeds per scheduler.")
@click.option("--seed-start", type=int, default=1, show_default=True)
@processes_option("the runs")
@dask_option
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None, callback=directory_option,
              help="Write summary.json, results.csv, plots and index.html here.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--traces", "traces", multiple=True, type=click.Path(path_type=Path),
              help="Instead of a scenario: replay the recorded turns of these trace exports (OTLP JSON, openai-agents "
                   "or LangSmith; files or directories) with learned latencies, as `harness traces whatif` (runs in "
                   "this process, or on --dask).")
@click.option("--production", default=None, help="With --traces: the scheduler production ran (the fidelity line).")
@click.option("--no-guess", "no_guess", is_flag=True,
              help="With --traces: guess nothing of what a tool touches (as `harness traces whatif --no-guess`).")
@wall_timeout_option
@trust_options
@guarded
def compare_command(scenario: str | None, scenario_list: str | None, scheduler_list: str, runs: int,
                    seed_start: int, processes: int | None, dask_address: str | None, out: Path | None, fmt: str,
                    traces: tuple[Path, ...], production: str | None, no_guess: bool, wall_timeout: float,
                    import_timeout: float, trust_modules: tuple[str, ...], allow_dirs: tuple[Path, ...]) -> None:
    """Compare schedulers on the same seeds: makespan percentiles, speedup over serial, ratio to
    optimal, violations by label."""
    if traces:  # production's recorded turns instead of a scenario (harness.cli.traces)
        if scenario is not None or scenario_list is not None:
            raise click.UsageError("give SCENARIO, --scenarios or --traces, not two of them")
        from harness.cli.traces import replay_turns
        from harness.policies import scheduler_names

        replay_turns(traces, names(scheduler_list, scheduler_names), runs, seed_start, production, out, fmt,
                     dask_address=dask_address, processes=processes, guess=not no_guess)
        return
    if production is not None:
        raise click.UsageError("--production goes with --traces")
    if no_guess:
        raise click.UsageError("--no-guess goes with --traces")
    from harness.policies import scheduler_names
    from harness.report import compare
    from harness.report.run_json import dumps
    from harness.sweep import grid, sweep

    if (scenario is None) == (scenario_list is None):
        raise click.UsageError("give one SCENARIO or --scenarios a,b|all")
    scenarios = [scenario] if scenario else names(scenario_list or "", scenario_names)
    if not scenarios:
        raise click.UsageError("--scenarios names no scenario; give a,b or all")
    trust, _ = trust_of(trust_modules, allow_dirs)
    for name in scenarios:
        find_scenario(name, trust=trust)
    schedulers = names(scheduler_list, scheduler_names)
    check_schedulers(schedulers, import_timeout)
    seeds = list(range(seed_start, seed_start + runs))
    everyone = list(dict.fromkeys([*schedulers, *compare.BASELINES]))
    with cluster_for(dask_address, processes) as cluster, progress_bar("compare") as progress:
        rows = sweep(grid(scenarios, everyone, seeds), processes=processes, on_progress=progress,
                     wall_timeout_s=wall_timeout, import_timeout_s=import_timeout, cluster=cluster, trust=trust)
    command = "harness " + " ".join(sys.argv[1:]) if sys.argv[1:] else "harness compare"
    if out is not None:
        summary = compare.write(out, rows, schedulers, command=command, seeds=seeds)
    else:
        summary = compare.summarise(rows, schedulers)
    if fmt == "json":
        click.echo(dumps(summary))
        return
    from rich.table import Table

    console = report_console()
    for scenario_name, table in summary["scenarios"].items():
        shown = Table(title=f"{scenario_name}: {runs} runs per scheduler, seeds {seeds[0]}-{seeds[-1]}",
                      title_justify="left")
        for column in ("scheduler", "p50 ms", "p95 ms", "p99 ms", "speedup vs serial", "ratio to optimal",
                       "violations"):
            shown.add_column(column, justify="left" if column in ("scheduler", "violations") else "right")
        for name in schedulers:
            s = table[name]
            violations = ", ".join(f"{label} {n}" for label, n in s["violations"].items()) or "none"
            shown.add_row(name, f"{s['p50_ms']:.0f}", f"{s['p95_ms']:.0f}", f"{s['p99_ms']:.0f}",
                          _ratio(s["speedup_vs_serial"]), _ratio(s["ratio_to_optimal"]), violations)
        console.print(shown)
        tasks = {name: table[name]["task"] for name in schedulers if "task" in table[name]}
        if tasks:  # a loop scenario: the task's end-to-end figures, model think time included
            task_table = Table(title=f"{scenario_name}: the task, end to end", title_justify="left")
            for column in ("scheduler", "answered", "to answer p50 ms", "p95 ms", "p99 ms", "rounds", "tool calls"):
                task_table.add_column(column, justify="left" if column == "scheduler" else "right")
            for name, task in tasks.items():
                task_table.add_row(name, f"{task['answered_rate']:.0%}", _ms(task["time_to_answer_p50_ms"]),
                                   _ms(task["time_to_answer_p95_ms"]), _ms(task["time_to_answer_p99_ms"]),
                                   f"{task['rounds_mean']:.1f}", f"{task['tool_calls_mean']:.1f}")
            console.print(task_table)
    if out is not None:
        console.print(f"wrote {out}/index.html")



def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
