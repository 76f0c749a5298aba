"""`harness sweep`: many (scenario, scheduler, seed) cells, resumable from a JSONL file.

Owns the command's options and its summary table. The cells run in harness.sweep; it writes only
the `--out` JSONL and the `--csv` file.
"""

from __future__ import annotations

from pathlib import Path

import click

from harness.atomic import make_dir, replacing
from harness.cli.guard import guarded
from harness.cli.isolated import isolate_option, isolating, usage_error
from harness.cli.options import (
    MAX_RUNS,
    check_schedulers,
    cluster_for,
    dask_option,
    file_option,
    names,
    processes_option,
    progress_bar,
    sweep_file_option,
    trust_of,
    trust_options,
    wall_timeout_option,
)
from harness.isolation import IsolationError
from harness.scenario import find_scenario, scenario_names


@click.command("sweep")
@click.option("--scenarios", "scenario_list", default="all", show_default=True)
@click.option("--schedulers", "scheduler_list", default="serial,parallel", show_default=True)
@click.option("--runs", type=click.IntRange(min=1, max=MAX_RUNS), default=100, show_default=True,
              help="Seeds per cell.")
@click.option("--seed-start", type=int, default=1, show_default=True)
@processes_option("the cells")
@dask_option
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None, callback=sweep_file_option,
              help="JSONL file of finished cells: written as they finish, read back to resume.")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              callback=file_option,
              help="Also write the final table as CSV.")
@wall_timeout_option
@trust_options
@isolate_option(default=None)
@guarded
def sweep_command(scenario_list: str, scheduler_list: str, runs: int, seed_start: int, processes: int | None,
                  dask_address: str | None, out: Path | None, csv_path: Path | None, wall_timeout: float,
                  import_timeout: float, trust_modules: tuple[str, ...], allow_dirs: tuple[Path, ...],
                  isolate: bool | None) -> None:
    """Run many (scenario, scheduler, seed) cells on every core or a Dask cluster; resumable."""
    from harness.policies import scheduler_names
    from harness.sweep import grid, sweep, to_frame

    scenarios = names(scenario_list, scenario_names)
    if not scenarios:
        raise click.UsageError("--scenarios names no scenario; give a,b or all")
    trust, _ = trust_of(trust_modules, allow_dirs)
    for name in scenarios:
        find_scenario(name, trust=trust)
    schedulers = names(scheduler_list, scheduler_names)
    isolate = isolating(isolate, schedulers)
    if not isolate:  # isolated, the user's code is imported in the children only (which say what failed)
        check_schedulers(schedulers, import_timeout)
    cells = grid(scenarios, schedulers, range(seed_start, seed_start + runs))
    if out is not None:
        make_dir(out.parent)
    try:
        with cluster_for(dask_address, processes) as cluster, progress_bar("sweep") as progress:
            rows = sweep(cells, processes=processes, out=out, on_progress=progress, wall_timeout_s=wall_timeout,
                         import_timeout_s=import_timeout, cluster=cluster, trust=trust, isolate=isolate)
    except IsolationError as exc:  # a scheduler its child could not import or build
        usage_error(exc)
    frame = to_frame(rows)
    if csv_path is not None:
        make_dir(csv_path.parent)
        with replacing(csv_path) as file:  # whole or not at all: an old table stays if the disk is full
            frame.to_csv(file, index=False)
    table = frame.groupby(["scenario", "scheduler"]).agg(
        runs=("seed", "count"), p50_ms=("makespan_ms", "median"), violations=("passed", lambda p: int((~p).sum())))
    click.echo("\n".join(line.rstrip() for line in table.to_string().splitlines()))  # no padded header
