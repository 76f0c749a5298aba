"""The `harness traces import|summary|whatif` commands (registered in `harness.cli`).

Owns the commands' options and where their output goes. `import` writes the scenario learned from the
traces (`harness.traces.library`) to `--out` or stdout and one line about what it read on stderr;
`summary` prints the per-tool models and the workload (`--format text|json`) and, with `--plot PNG`,
draws each tool's ECDF and fit; `whatif` replays the recorded turns under each scheduler
(`harness.traces.whatif`; with `--dask`, on a cluster) and prints the table and the fidelity line
(with `--out`: the JSON, the plots and the Gantt chart of each policy's worst turn run). FILE
arguments are trace exports (OTLP JSON, openai-agents, LangSmith: `harness.traces.formats`) or
directories of them; `--sample` reads the built-in synthetic sample instead. A large export shows a
progress bar on a terminal only (stderr stays clean in pipes and tests). A malformed trace is one
line on stderr, exit 2. Before the scenario is written it is loaded back with the scenario loader (a
scenario that does not load is a harness bug, exit 70); `--out` is written whole or not at all, and
only over a file `harness traces import` wrote unless `--force`. Only `whatif` runs schedules.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from harness.atomic import OutputError, write_text
from harness.cli.options import cluster_for, dask_option, progress_bar
from harness.exitcodes import ExitCode

if TYPE_CHECKING:
    from harness.traces import Imported, Learned

#: The first line of every scenario `traces import` writes: a later import may replace such a file.
MARK = "# Learned by `harness traces import`"
_FILES = click.argument("files", nargs=-1, type=click.Path(path_type=Path))
_SAMPLE = click.option("--sample", is_flag=True,
                       help="Read the built-in synthetic sample export (made by harness.traces.sample) instead of "
                            "FILES.")


@click.group("traces")
def traces_group() -> None:
    """Learn from production traces: per-tool latency fits, a scenario, what-if replays of turns.

    FILES are trace exports (`.json`: one document, or one per line as the collector's file exporter
    writes; `.jsonl`: one per line) or directories of them, each in one of three formats, detected per
    file: OTLP JSON (tool calls are the GenAI semantic conventions' `execute_tool` spans), openai-agents'
    exported spans (`function` spans) or LangSmith runs (`tool` runs). A turn is the tool calls one model
    call emitted."""


#: `traces import`, `traces whatif` and `compare --traces`: the guesses of what a tool touches, or none.
NO_GUESS = click.option("--no-guess", "no_guess", is_flag=True,
                        help="Guess nothing of what a tool touches or claims from its and its arguments' names: "
                             "every tool only waits and claims the most conservative metadata (no hazards).")


@traces_group.command("import")
@_FILES
@_SAMPLE
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the scenario TOML here (default: stdout).")
@click.option("--name", default=None, help="The scenario's name (default: the first file's stem).")
@click.option("--keep-arguments", is_flag=True,
              help="Keep the calls' recorded arguments, call ids, trace ids and timestamps (traces may hold "
                   "secrets: off by default, calls then send {}).")
@NO_GUESS
@click.option("--force", is_flag=True, help="Overwrite --out even if `harness traces import` did not write it.")
def import_command(files: tuple[Path, ...], sample: bool, out: Path | None, name: str | None, keep_arguments: bool,
                   no_guess: bool, force: bool) -> None:
    """Turn traces into a scenario: learned tool latencies, one batch per recorded turn."""
    from harness.traces import scenario_text

    paths = _paths(files, sample)
    if out is not None and not force:
        _ours(out)
    imported, learned = _read(paths)
    scenario_name = name if name is not None else ("sample" if sample else Path(imported.files[0]).stem)
    text = scenario_text(learned, imported.turns, name=scenario_name, files=imported.files,
                         keep_arguments=keep_arguments, guess=not no_guess)
    _check_loads(text, str(out) if out is not None else "<traces import>")
    overlapping = learned.workload.overlapping_turns
    click.echo(f"harness: read {imported.tool_spans} tool spans and {imported.model_spans} model spans from "
               f"{len(imported.files)} file{'' if len(imported.files) == 1 else 's'}: {len(imported.turns)} turns, "
               f"{imported.calls} calls ({imported.retries} retries); calls overlapped in time in {overlapping} turns",
               err=True)
    if out is None:
        click.echo(text, nl=False)
        return
    _written(lambda: write_text(out, text), out)


def _written(write: Callable[[], object], path: Path) -> None:
    """Write a file the user asked for, and say so; a file that cannot be written is one line and the
    I/O exit code."""
    try:
        write()
    except OutputError as exc:
        click.echo(f"harness: {exc}", err=True)
        sys.exit(ExitCode.IO_ERROR)
    click.echo(f"harness: wrote {path}", err=True)


@traces_group.command("summary")
@_FILES
@_SAMPLE
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write a PNG of each tool's latency ECDF with its fitted log-normal here.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def summary_command(files: tuple[Path, ...], sample: bool, plot: Path | None, fmt: str) -> None:
    """Print what the traces say per tool (empirical latency, log-normal fit with sample count and KS
    distance, error and timeout rates) and about the turns (sizes, tool mixes, recorded makespans)."""
    from harness.report.trace_summary import summary_data, summary_text

    paths = _paths(files, sample)
    imported, learned = _read(paths)
    sources = "the built-in synthetic sample" if sample else ", ".join(imported.files)
    if fmt == "json":
        click.echo(json.dumps({"files": list(imported.files), **summary_data(learned)}, indent=2))
    else:
        click.echo(summary_text(learned, sources), nl=False)
    if plot is not None:
        from harness.report.trace_fits import draw_fits

        _written(lambda: draw_fits(learned, plot), plot)


@traces_group.command("whatif")
@_FILES
@_SAMPLE
@click.option("--schedulers", "scheduler_list", default="serial,parallel,resource_keys", show_default=True,
              help="Comma-separated scheduler names to replay the recorded turns under.")
@click.option("--runs", type=click.IntRange(min=1, max=1000), default=20, show_default=True,
              help="Seeds per recorded turn and scheduler.")
@click.option("--seed-start", type=int, default=1, show_default=True)
@click.option("--production", default=None,
              help="The scheduler production ran: its replay is checked against the recorded makespans (the "
                   "fidelity line). Default with --sample: dag (every call at once, through the runtime that applies "
                   "the timeout); otherwise no check unless given.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write whatif.json and the plots (makespan ECDF per policy, saving versus hazard, the Gantt chart "
                   "of each policy's worst turn run) here.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@NO_GUESS
@dask_option
def whatif_command(files: tuple[Path, ...], sample: bool, scheduler_list: str, runs: int, seed_start: int,
                   production: str | None, out: Path | None, fmt: str, no_guess: bool,
                   dask_address: str | None) -> None:
    """Replay the recorded turns under each scheduler with latencies from the learned models: turn
    makespan p50/p95/p99, saving against production, share of turns with a hazard and its labels."""
    schedulers = [n.strip() for n in scheduler_list.split(",") if n.strip()]
    if production is None and sample:
        production = "dag"
    replay_turns(_paths(files, sample), schedulers, runs, seed_start, production, out, fmt,
                 sources="the built-in synthetic sample" if sample else None, dask_address=dask_address,
                 guess=not no_guess)


def replay_turns(paths: tuple[Path, ...], scheduler_names: list[str], runs: int, seed_start: int,
                 production: str | None, out: Path | None, fmt: str, *, sources: str | None = None,
                 dask_address: str | None = None, processes: int | None = None, guess: bool = True) -> None:
    """The what-if of `traces whatif` and `compare --traces`: print it, and write it under `out`. The
    schedulers run in this process (a `module:attribute` scheduler too: no isolated child), or with
    `dask_address` on that Dask cluster's workers (`processes`: the workers of `--dask local`), with
    the same figures; `guess` false: what the tools touch is not guessed (`--no-guess`)."""
    import tomllib

    from harness.policies import UnknownSchedulerError, get_scheduler
    from harness.report.trace_whatif import draw_whatif, draw_worst_turns, whatif_data, whatif_text
    from harness.scenario import scenario_from_data
    from harness.traces import scenario_text
    from harness.traces.whatif import fidelity, what_if, worst_run

    schedulers = list(dict.fromkeys(scheduler_names))
    if production is not None and production not in schedulers:
        schedulers.append(production)
    for name in schedulers:
        try:
            get_scheduler(name)
        except UnknownSchedulerError as exc:
            _usage(str(exc))
    imported, learned = _read(paths)
    text = scenario_text(learned, imported.turns, name="whatif", files=imported.files, guess=guess)
    scenario = scenario_from_data(tomllib.loads(text), "<traces whatif>")
    seeds = range(seed_start, seed_start + runs)
    with cluster_for(dask_address, processes) as cluster, progress_bar("replaying turns") as update:
        what = what_if(scenario, imported.turns, schedulers, seeds, update, cluster)
    check = None
    if production is not None:
        check = fidelity(what, production, imported.turns, scenario)
    data = whatif_data(what, check)
    if fmt == "json":
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(whatif_text(what, check, sources or ", ".join(imported.files)), nl=False)
    if out is not None:
        try:
            out.mkdir(parents=True, exist_ok=True)
            write_text(out / "whatif.json", json.dumps(data, indent=2) + "\n")
            images = draw_whatif(what, out)
            worst = [(o.scheduler, o.worst[0], o.worst[1], worst_run(scenario, what, o.scheduler))
                     for o in what.policies]
            images += draw_worst_turns(worst, out)
        except (OutputError, OSError) as exc:
            click.echo(f"harness: {exc}", err=True)
            sys.exit(ExitCode.IO_ERROR)
        click.echo(f"harness: wrote {out / 'whatif.json'}, " + ", ".join(str(i) for i in images), err=True)


def _paths(files: tuple[Path, ...], sample: bool) -> tuple[Path, ...]:
    from harness.traces import SAMPLE

    if sample and files:
        _usage("give FILES or --sample, not both")
    if sample:
        return (SAMPLE,)
    if not files:
        _usage("expected FILES (OTLP JSON exports or directories of them), or --sample for the built-in sample")
    return files


def _read(paths: tuple[Path, ...]) -> tuple[Imported, Learned]:
    from harness.traces import TraceError, import_traces, learn, trace_files

    try:
        total = sum(p.stat().st_size for p in trace_files(paths))
        with progress_bar("reading spans") as update:
            done = 0

            def step(size: int) -> None:
                nonlocal done
                done += size
                update(done, total)

            advance: Callable[[int], None] = step
            imported = import_traces(paths, advance)
    except TraceError as exc:
        _usage(str(exc))
    if not imported.turns:
        _usage(f"{', '.join(imported.files)}: expected tool calls (OTLP execute_tool spans, openai-agents function "
               f"spans or LangSmith tool runs), found none beside {imported.model_spans} model calls")
    try:
        learned = learn(imported.turns)
    except ImportError:
        _usage("the latency fits need scipy: pip install 'harness[traces]'")
    return imported, learned


def _ours(out: Path) -> None:
    """`--out` may replace nothing but a scenario `traces import` wrote (its first line says so)."""
    try:
        with out.open("rb") as handle:
            first = handle.read(len(MARK))
    except FileNotFoundError:
        return
    except IsADirectoryError:
        _usage(f"--out {out}: expected a file path, got a directory")
    except OSError as exc:
        click.echo(f"harness: {out}: cannot read it to check it: {exc.strerror or exc}", err=True)
        sys.exit(ExitCode.IO_ERROR)
    if first != MARK.encode():
        _usage(f"--out {out}: the file exists and `harness traces import` did not write it; refusing to overwrite "
               "it (give --force to overwrite it, or another --out)")


def _check_loads(text: str, file: str) -> None:
    """The scenario must load; if it does not, the importer is wrong (exit 70)."""
    import tomllib

    from harness.scenario import ScenarioError, scenario_from_data

    try:
        scenario_from_data(tomllib.loads(text), file)
    except (ScenarioError, tomllib.TOMLDecodeError) as exc:
        click.echo(f"harness: internal error (a harness bug, please report it): the learned scenario does not "
                   f"load: {exc}", err=True)
        sys.exit(ExitCode.HARNESS_BUG)


def _usage(message: str) -> NoReturn:
    click.echo(f"harness: {message}", err=True)
    sys.exit(ExitCode.USAGE_ERROR)
