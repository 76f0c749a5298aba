"""The `harness` command line: `list` and `run` (compare, explore, replay, report and sweep build on
these).

Owns argument parsing, exit codes and where output goes. Usage errors (unknown scenario or
scheduler, malformed scenario file) are one line on stderr and exit 2, never a traceback. It
writes files only under the `--out` directory the user chose. It never imports pandas or
matplotlib at start-up.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial, wraps
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console

from harness import __version__
from harness.agent.options import loop_option, with_loop
from harness.exitcodes import ExitCode
from harness.oracles.verdict import Verdict
from harness.realtime import (
    WallClockExceeded,
    wall_clock_watchdog,
    wall_limit_per_run,
    watched_build,
    watching_user_interrupts,
)
from harness.replay import ReproducerError
from harness.run import RunResult, run
from harness.scenario import Scenario, ScenarioError, UnknownScenarioError, find_scenario, scenario_names
from harness.schedulers import BUILTIN_SCHEDULERS, UnknownSchedulerError, get_scheduler
from harness.transcripts.command import import_command

F = TypeVar("F", bound=Callable[..., Any])

def _guarded(command: F) -> F:
    """Turn known user mistakes into one-line errors (exit 2) and anything else into exit 70."""

    @wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except (UnknownScenarioError, UnknownSchedulerError, ScenarioError, ReproducerError) as exc:
            if isinstance(exc.__context__, WallClockExceeded):  # "cannot build": its constructor spun
                click.echo(f"harness: hang: {exc.__context__}", err=True)
                sys.exit(ExitCode.LIVENESS_VIOLATION)
            click.echo(f"harness: {exc}", err=True)
            sys.exit(ExitCode.USAGE_ERROR)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except KeyboardInterrupt:  # the user's Ctrl-C (a scheduler's own is its scheduler-error, exit 4)
            click.echo("harness: interrupted", err=True)
            sys.exit(ExitCode.INTERRUPTED)
        except BrokenPipeError:  # the reader went away (`harness list scenarios | head -1`)
            _quiet_exit()
        except WallClockExceeded as exc:  # outside a run (oracles, reorder runs, a constructor): still a hang
            click.echo(f"harness: hang: {exc}", err=True)
            sys.exit(ExitCode.LIVENESS_VIOLATION)
        except Exception as exc:
            from harness.explore.engine import NondeterministicScheduler

            if isinstance(exc, NondeterministicScheduler):
                click.echo(f"harness: nondeterministic: {exc}", err=True)
                sys.exit(ExitCode.NONDETERMINISM)
            _internal(exc)

    return wrapper  # type: ignore[return-value]


def tools_option(command: F) -> F:
    return click.option("--tools", "tools_modules", multiple=True, metavar="MODULE",
                        help="A Python module (or installed catalogue) whose TOOLS the scenario may call; "
                             "repeatable.")(command)


def _seconds(value: float) -> float:
    """A real-time limit: finite, 0 (none) or between 1 ms and a day."""
    if not math.isfinite(value) or value < 0 or 0 < value < 0.001 or value > 86400:
        raise click.BadParameter(f"{value!r} is not a number of seconds between 0.001 and 86400 (0: no limit)")
    return value


def wall_timeout_option(command: F) -> F:
    """`--wall-timeout S`: real seconds each run (and the scheduler's construction) may take before the
    scheduler is declared hung: a Python loop that never yields is stopped, reported as a hang, exit 3."""
    return click.option("--wall-timeout", type=float, default=60.0, show_default=True,
                        callback=lambda c, p, v: _seconds(v),
                        help="Real seconds each run may take before the scheduler is declared hung (0: no limit)."
                        )(command)


#: More runs than this in one command is a typo, not a plan (cells are listed up front).
MAX_RUNS = 1_000_000


def _writable_dir(path: Path) -> str | None:
    """Why `path` cannot be (or become) a directory we write into, or None if it can."""
    if str(path) in ("", "."):
        return None
    probe = path
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        return f"{probe} is not a directory"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"{probe} is not writable"
    return None


def _directory_option(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """A directory the command writes into: named explicitly (never "" for the current directory),
    and writable, checked before any run so a long exploration does not end in a traceback."""
    if value is None:
        return None
    if str(value) in ("", "."):
        raise click.BadParameter("give a directory name (an empty path would write into the current directory)")
    problem = _writable_dir(value)
    if problem:
        raise click.BadParameter(f"{value}: {problem}")
    return value


def _file_option(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    if value is None:
        return None
    if str(value) in ("", "."):
        raise click.BadParameter("give a file name")
    if value.exists() and (not value.is_file() or not os.access(value, os.W_OK)):
        raise click.BadParameter(f"{value}: not a writable regular file")
    problem = _writable_dir(value.parent)
    if problem:
        raise click.BadParameter(f"{value}: {problem}")
    return value


def _sweep_file_option(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """A sweep file: new, empty, or one a sweep wrote (rows are appended to it, never to another file)."""
    value = _file_option(ctx, param, value)
    if value is not None and value.exists() and value.stat().st_size:
        with value.open("rb") as handle:
            first = handle.readline(65536)
        try:
            row = json.loads(first)
        except ValueError:
            row = None
        if not isinstance(row, dict) or not {"scenario", "scheduler", "seed"} <= set(row):
            raise click.BadParameter(f"{value}: exists and is not a sweep file (its first line is not a sweep row); "
                                     "choose a new file")
    return value


def _quiet_exit() -> None:
    """Stop quietly with exit 0 when stdout's reader has gone, as `head` and pagers expect; stdout
    is pointed at /dev/null first so the interpreter's last flush cannot fail on the closed pipe."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    sys.exit(ExitCode.PASS)


def _internal(exc: Exception) -> None:
    """A bug in the harness, not in the user's input: one line, exit 70."""
    click.echo(f"harness: internal error (a harness bug, please report it): {type(exc).__name__}: {exc}", err=True)
    sys.exit(ExitCode.HARNESS_BUG)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="harness")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Deterministic simulation and chaos testing for schedulers of LLM tool-call batches."""
    # A KeyboardInterrupt a scheduler raises is its scheduler-error; a real Ctrl-C still stops us.
    ctx.with_resource(watching_user_interrupts())


main.add_command(import_command)


@main.command("list")
@click.argument("what", type=click.Choice(["scenarios", "schedulers", "tools"]))
@tools_option
@_guarded
def list_command(what: str, tools_modules: tuple[str, ...]) -> None:
    """List the built-in scenarios, schedulers or mock tools (with --tools, a module's tools too; the
    catalogues installed packages ship are listed by name)."""
    if what == "scenarios":
        for name in scenario_names():
            scenario = find_scenario(name)
            summary = " ".join(scenario.description.split()).split(". ")[0].rstrip(".")
            click.echo(f"{name:28} {summary}")
    elif what == "schedulers":
        for name in sorted(BUILTIN_SCHEDULERS):
            entry = BUILTIN_SCHEDULERS[name]
            click.echo(f"{name:28} {entry.description}  [{entry.source}]")
    else:
        from harness.tools.catalogue import base_catalogue
        from harness.tools.modules import ToolsModuleError, entry_point_names

        try:
            catalogue = base_catalogue(tools_modules)
        except ToolsModuleError as exc:
            raise click.UsageError(str(exc)) from None
        for name, spec in catalogue.items():
            click.echo(f"{name:28} {spec.description}")
        for catalogue_name in entry_point_names():
            click.echo(f"(installed catalogue: {catalogue_name}; list it with --tools {catalogue_name})")


_EXECUTION_FLAGS: list[tuple[str, str, Any, str]] = [
    ("--timeout-ms", "timeout_ms", click.IntRange(min=1), "Abandon each call after this many virtual ms."),
    ("--retries", "retries", click.IntRange(min=0), "Extra attempts for failed calls of idempotent tools."),
    ("--backoff-ms", "backoff_ms", click.IntRange(min=0), "Backoff before retry n: this * 2**(n-1) ms."),
    ("--max-concurrency", "max_concurrency", click.IntRange(min=1), "Global cap on calls running at once."),
    ("--same-signature-limit", "same_signature_limit", click.IntRange(min=0),
     "Mark a tool unavailable after this many identical failures (seed 004)."),
    ("--poll-interval-ms", "poll_interval_ms", click.IntRange(min=0), "How often an interrupt is noticed."),
    ("--batch-deadline-ms", "batch_deadline_ms", click.IntRange(min=1),
     "Abandon calls still running then as `unknown` (hermes: 420 s)."),
    ("--on-failure", "on_failure", click.Choice(["isolate", "cancel_siblings"]), "What a failing call does."),
]


def execution_options(command: F) -> F:
    """Execution-policy flags shared by the commands that run schedulers; unset means "as the
    scenario says". They apply to plan-based policies (every built-in except serial and parallel)."""
    for flag, dest, kind, text in reversed(_EXECUTION_FLAGS):
        command = click.option(flag, dest, type=kind, default=None, help=text)(command)
    command = click.option("--idempotency-keys/--no-idempotency-keys", "idempotency_keys", default=None,
                           help="Send one idempotency key with every attempt of a call.")(command)
    command = click.option("--retry-non-idempotent", "retry_non_idempotent", is_flag=True, default=None,
                           help="Retry tools not declared idempotent too (dangerous).")(command)
    return command


def _find(scenario: str, tools_modules: tuple[str, ...]) -> tuple[Scenario, list[str]]:
    """The scenario with the `--tools` modules, and those flags for the reproduce line."""
    found = find_scenario(scenario, tools_modules=tools_modules)
    return found, [arg for module in tools_modules for arg in ("--tools", module)]


def _with_execution(scenario: Scenario, options: dict[str, Any]) -> tuple[Scenario, list[str]]:
    """The scenario with the given execution flags applied, and those flags for the reproduce line."""
    given = {k: v for k, v in options.items() if v is not None}
    if not given:
        return scenario, []
    extra: list[str] = []
    for flag, dest, _, _ in _EXECUTION_FLAGS:
        if dest in given:
            extra += [flag, str(given[dest])]
    if "idempotency_keys" in given:
        extra.append("--idempotency-keys" if given["idempotency_keys"] else "--no-idempotency-keys")
    if given.get("retry_non_idempotent"):
        extra.append("--retry-non-idempotent")
    return replace(scenario, execution=scenario.execution.merged(**given)), extra


def _names(option: str, valid: Callable[[], list[str]]) -> list[str]:
    return valid() if option == "all" else [name.strip() for name in option.split(",") if name.strip()]


@contextlib.contextmanager
def _progress(description: str) -> Iterator[Callable[[int, int], None]]:
    """A rich progress bar on a terminal; silent in pipes and CI logs."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    console = Console(stderr=True, markup=False, highlight=False)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=console, transient=True, disable=not console.is_terminal) as progress:
        task = progress.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        yield update


@main.command("compare")
@click.argument("scenario", required=False)
@click.option("--scenarios", "scenario_list", default=None,
              help="Comma-separated scenario names, or all (instead of SCENARIO).")
@click.option("--schedulers", "scheduler_list", default="serial,parallel", show_default=True,
              help="Comma-separated scheduler names (serial and optimal are always run as baselines).")
@click.option("--runs", type=click.IntRange(min=1, max=MAX_RUNS), default=100, show_default=True,
              help="Seeds per scheduler.")
@click.option("--seed-start", type=int, default=1, show_default=True)
@click.option("--processes", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None, callback=_directory_option,
              help="Write summary.json, results.csv, plots and index.html here.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@wall_timeout_option
@_guarded
def compare_command(scenario: str | None, scenario_list: str | None, scheduler_list: str, runs: int,
                    seed_start: int, processes: int, out: Path | None, fmt: str, wall_timeout: float) -> None:
    """Compare schedulers on the same seeds: makespan percentiles, speedup over serial, ratio to
    optimal, violations by label."""
    from harness.report import compare
    from harness.report.run_json import dumps
    from harness.schedulers import scheduler_names
    from harness.sweep import grid, sweep

    if (scenario is None) == (scenario_list is None):
        raise click.UsageError("give one SCENARIO or --scenarios a,b|all")
    scenarios = [scenario] if scenario else _names(scenario_list or "", scenario_names)
    if not scenarios:
        raise click.UsageError("--scenarios names no scenario; give a,b or all")
    for name in scenarios:
        find_scenario(name)
    schedulers = _names(scheduler_list, scheduler_names)
    _check_schedulers(schedulers, wall_timeout)
    seeds = list(range(seed_start, seed_start + runs))
    everyone = list(dict.fromkeys([*schedulers, *compare.BASELINES]))
    with _progress("compare") as progress:
        rows = sweep(grid(scenarios, everyone, seeds), processes=processes, on_progress=progress,
                     wall_timeout_s=wall_timeout)
    command = "harness " + " ".join(sys.argv[1:]) if sys.argv[1:] else "harness compare"
    if out is not None:
        summary = compare.write(out, rows, schedulers, command=command, seeds=seeds)
    else:
        summary = compare.summarise(rows, schedulers)
    if fmt == "json":
        click.echo(dumps(summary))
        return
    from rich.table import Table

    console = Console(highlight=False, markup=False, width=None if sys.stdout.isatty() else 120)
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


def _check_schedulers(names: list[str], wall_timeout: float) -> None:
    """Build each named scheduler once before any run: an unknown name is a usage error at once, and
    a constructor that spins is a hang (exit 3) instead of a harness that never answers."""
    for name in names:
        watched_build(partial(get_scheduler, name), wall_timeout, f"building the scheduler {name}")


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


@main.command("sweep")
@click.option("--scenarios", "scenario_list", default="all", show_default=True)
@click.option("--schedulers", "scheduler_list", default="serial,parallel", show_default=True)
@click.option("--runs", type=click.IntRange(min=1, max=MAX_RUNS), default=100, show_default=True,
              help="Seeds per cell.")
@click.option("--seed-start", type=int, default=1, show_default=True)
@click.option("--processes", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None, callback=_sweep_file_option,
              help="JSONL file of finished cells: written as they finish, read back to resume.")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              callback=_file_option,
              help="Also write the final table as CSV.")
@wall_timeout_option
@_guarded
def sweep_command(scenario_list: str, scheduler_list: str, runs: int, seed_start: int, processes: int,
                  out: Path | None, csv_path: Path | None, wall_timeout: float) -> None:
    """Run many (scenario, scheduler, seed) cells, optionally on a process pool; resumable."""
    from harness.schedulers import scheduler_names
    from harness.sweep import grid, sweep, to_frame

    scenarios = _names(scenario_list, scenario_names)
    if not scenarios:
        raise click.UsageError("--scenarios names no scenario; give a,b or all")
    for name in scenarios:
        find_scenario(name)
    schedulers = _names(scheduler_list, scheduler_names)
    _check_schedulers(schedulers, wall_timeout)
    cells = grid(scenarios, schedulers, range(seed_start, seed_start + runs))
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
    with _progress("sweep") as progress:
        rows = sweep(cells, processes=processes, out=out, on_progress=progress, wall_timeout_s=wall_timeout)
    frame = to_frame(rows)
    if csv_path is not None:
        csv_path.parent.mkdir(parents=True, exist_ok=True)
        frame.to_csv(csv_path, index=False)
    table = frame.groupby(["scenario", "scheduler"]).agg(
        runs=("seed", "count"), p50_ms=("makespan_ms", "median"), violations=("passed", lambda p: int((~p).sum())))
    click.echo(table.to_string())


@main.command("explore")
@click.argument("scenario")
@click.option("--scheduler", "scheduler_name", default="parallel", show_default=True)
@click.option("--strategy", type=click.Choice(["auto", "random", "pct", "exhaustive", "hypothesis"]), default="auto",
              show_default=True,
              help="auto mixes random latencies, PCT at depths 1-3 and swarm faults in one run budget.")
@click.option("--runs", type=click.IntRange(min=1, max=MAX_RUNS), default=100, show_default=True,
              help="Run budget (exhaustive: the bound on runs; hypothesis: examples).")
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--depth", type=click.IntRange(min=1, max=100), default=3, show_default=True, help="PCT bug depth d.")
@click.option("--swarm", is_flag=True, help="Switch a random subset of fault kinds on per run.")
@click.option("--swarm-kinds", default=None,
              help="Comma-separated fault kinds swarm runs may switch on (default: all with --swarm; those a "
                   "policy must survive with auto).")
@click.option("--fault-bound", type=click.IntRange(min=0), default=1, show_default=True,
              help="Exhaustive: at most this many injected faults per run, every choice of them enumerated.")
@click.option("--processes", type=click.IntRange(min=1), default=1, show_default=True,
              help="Worker processes for random, pct and auto runs (same result for any number).")
@click.option("--keep-going", is_flag=True, help="Do not stop at the first violation (one finding per label).")
@click.option("--label", "labels", multiple=True,
              help="Only violations with this label count (repeatable), e.g. --label duplicate-effect.")
@click.option("--save-dir", type=click.Path(file_okay=False, path_type=Path), default=Path(".harness/reproducers"),
              callback=_directory_option, show_default=True,
              help="Where the shrunk reproducer is written (default: under .harness/ in the current directory).")
@click.option("--no-save", is_flag=True, help="Do not write a reproducer.")
@click.option("--check-determinism", is_flag=True,
              help="Also replay the reproducer in a fresh process under another PYTHONHASHSEED before saving.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@wall_timeout_option
@loop_option
@execution_options
@tools_option
@_guarded
def explore_command(scenario: str, scheduler_name: str, strategy: str, runs: int, seed: int, depth: int,
                    swarm: bool, swarm_kinds: str | None, fault_bound: int, processes: int, keep_going: bool,
                    labels: tuple[str, ...], save_dir: Path, no_save: bool, check_determinism: bool, fmt: str,
                    wall_timeout: float, tools_modules: tuple[str, ...], **execution: Any) -> None:
    """Search for a violation: auto (the default), random latencies, PCT, bounded exhaustive search or
    Hypothesis. Stops at the first violation, shrinks it, checks that it replays and saves a reproducer.
    Every result says what it covered (scope)."""
    from harness.explore.engine import explore
    from harness.explore.swarm import KINDS
    from harness.replay import reproducer_of, save_verified, verify
    from harness.scenario.dump import NotSerializable

    loop_name = execution.pop("loop_name", None)
    found_scenario, tools_args = _find(scenario, tools_modules)
    loaded, extra = _with_execution(found_scenario, execution)
    loaded, extra = with_loop(loaded, loop_name, [*tools_args, *extra])
    _check_schedulers([scheduler_name], wall_timeout)
    from harness.oracles import LABELS

    unknown_labels = [label for label in labels if label not in LABELS]
    if unknown_labels:
        raise click.UsageError(f"unknown label {unknown_labels[0]!r}; valid: {', '.join(LABELS)}")
    kinds = None if swarm_kinds is None else tuple(k.strip() for k in swarm_kinds.split(",") if k.strip())
    unknown = [k for k in kinds or () if k not in KINDS]
    if unknown:
        raise click.UsageError(f"unknown swarm kind {unknown[0]!r}; valid: {', '.join(KINDS)}")
    with _progress(f"explore ({strategy})") as progress:
        exploration = explore(loaded, scheduler_name, strategy, runs=runs, seed=seed, depth=depth, swarm=swarm,
                              keep_going=keep_going, on_progress=progress, swarm_kinds=kinds,
                              fault_bound=fault_bound, processes=processes, labels=labels or None,
                              wall_timeout_s=wall_timeout)
    shrunk = exploration.shrunk
    path = None
    selfcheck = None
    unsaved = None
    reproducer = None
    if shrunk is not None:
        reproducer = reproducer_of(shrunk.result, scheduler_name, shrunk.label, shrunk.oracle,
                                   shrunk.found_by or strategy)
        try:
            with wall_limit_per_run(wall_timeout):  # the self-check replays it: a run like any other
                if no_save:
                    selfcheck = verify(reproducer, fresh_process=check_determinism)
                else:
                    path, selfcheck = save_verified(reproducer, save_dir, version=__version__,
                                                    fresh_process=check_determinism)
        except NotSerializable as exc:
            unsaved = str(exc)
    found = exploration.found
    flags = " ".join(extra)
    document = {
        "scenario": loaded.name, "target": scenario, "scheduler": scheduler_name, "strategy": strategy,
        "seed": seed, "unsaved": unsaved,
        "execution": flags or None,
        "found": found is not None, "label": found.label if found else None,
        "labels": [f.label for f in exploration.findings],
        "runs": exploration.runs, "runs_to_failure": exploration.runs_to_failure,
        "found_by": found.found_by if found else None,
        "witness": found.witness if found else None, "swarm": list(found.swarm) if found else None,
        "explanation": _explanation(found.label, found.witness, found.result, found.message) if found else None,
        "shrunk_calls": len(shrunk.result.scenario.calls) if shrunk else None,
        "shrunk_tape": list(shrunk.result.tape) if shrunk and shrunk.result.tape is not None else None,
        "fingerprint": shrunk.result.fingerprint if shrunk else None,
        "reproducer": str(path) if path else None,
        "replay": dataclasses.replace(reproducer, path=path).command if path and reproducer else None,
        "determinism": selfcheck.describe() if selfcheck else None,
        "nondeterministic": bool(selfcheck and not selfcheck.ok),
        "bound": exploration.bound, "exhausted": exploration.exhausted, "classes": exploration.classes,
        "proven": exploration.proven, "scope": exploration.scope,
    }
    if fmt == "json":
        from harness.report.run_json import dumps

        click.echo(dumps(document))
    else:
        _print_exploration(document, found is not None)
    if selfcheck is not None and not selfcheck.ok:
        sys.exit(ExitCode.NONDETERMINISM)
    sys.exit(_exit_for(found.result) if found is not None else ExitCode.PASS)


def _exit_for(result: RunResult) -> int:
    from harness.oracles import check, exit_code

    return int(exit_code(check(result)))


def _explanation(label: str, witness: dict[str, Any], result: RunResult, message: str) -> str:
    from harness.report.explain import explain_witness

    return explain_witness(label, witness, result, message)


def _print_exploration(doc: dict[str, Any], found: bool) -> None:
    flags = f" {doc['execution']}" if doc["execution"] else ""
    click.echo(f"harness explore {doc['target']} --scheduler {doc['scheduler']} --strategy {doc['strategy']} "
               f"--seed {doc['seed']}{flags}: {doc['runs']} runs")
    bound = doc["bound"]
    if bound is not None:
        threads = f", {bound['threads']} threads" if bound.get("threads") else ""
        click.echo(f"pct: n={bound['calls']} calls{threads} + time, horizon k={bound['horizon']} steps, "
                   f"depth d={bound['depth']}: "
                   f"a depth-{bound['depth']} bug is found by one run with probability >= {bound['per_run']:.4f}; "
                   f"all {doc['runs']} runs miss it with probability <= {bound['miss_probability']:.4f} "
                   "(for bugs within the scope below)")
        if bound["max_steps_seen"] > bound["horizon"]:
            click.echo(f"  caveat: runs reached {bound['max_steps_seen']} steps, beyond the horizon "
                       f"{bound['horizon']}: the bound covers bugs whose ordering points fall in the first "
                       f"{bound['horizon']} steps only")
    scope = doc["scope"] or {}
    for key in ("latencies", "timers", "faults"):
        if scope.get(key):
            click.echo(f"  {key}: {scope[key]}")
    if scope.get("swarm"):
        # Say which kinds some run really switched on: the configured set alone claims too much.
        seen = scope.get("swarm_seen")
        if seen is None:
            click.echo(f"  swarm kinds: {', '.join(scope['swarm'])}")
        else:
            click.echo(f"  swarm faults switched on in some run: {', '.join(seen) or 'none'} "
                       f"(of {', '.join(scope['swarm'])})")
    if scope.get("hung_calls"):
        click.echo(f"  hung (latency drawn beyond the time bound): {', '.join(scope['hung_calls'])}")
    if scope.get("limited_checks"):
        click.echo(f"  oracle checks limited on {scope['limited_checks']} runs: those runs prove nothing")
    if scope.get("labels"):
        click.echo(f"  only violations labelled: {', '.join(scope['labels'])}")
    if not found:
        if doc["proven"]:
            what = f"no {' / '.join(scope['labels'])} violation" if scope.get("labels") else "no violation"
            click.echo(f"{what} in {doc['classes']} classes: the bounded space is exhausted (proven for the "
                       "orders, timers and faults above; not for: " + "; ".join(scope.get("not_covered", [])) + ")")
        elif doc["exhausted"]:
            click.echo(f"no violation in {doc['classes']} classes, but nothing is proven: {scope.get('claim')}")
        elif doc["exhausted"] is False:
            click.echo(f"no violation in {doc['classes']} classes; the bound was reached before the space was "
                       "exhausted: nothing is proven (raise --runs)")
        else:
            click.echo("no violation found (a sample, not a proof)")
        return
    swarm = f" (swarm: {', '.join(doc['swarm'])})" if doc["swarm"] else ""
    by = f" by {doc['found_by']}" if doc["found_by"] else ""
    click.echo(f"FOUND {doc['label']} after {doc['runs_to_failure']} runs{by}{swarm}")
    if len(doc["labels"]) > 1:
        click.echo(f"labels found: {', '.join(doc['labels'])}")
    click.echo(f"witness: {doc['witness']}")
    if doc.get("explanation"):
        click.echo(f"why: {doc['explanation']}")
    click.echo(f"shrunk to {doc['shrunk_calls']} calls, order tape {doc['shrunk_tape']}")
    if doc["determinism"]:
        click.echo(f"self-check: {doc['determinism']}")
    if doc["reproducer"]:
        click.echo(f"reproducer: {doc['reproducer']}")
        click.echo(f"replay: {doc['replay']}")
    elif doc["nondeterministic"]:
        click.echo("no reproducer saved: it would not replay")
    elif doc["unsaved"]:
        click.echo(f"no reproducer saved: {doc['unsaved']}")


@main.command("replay")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None, callback=_directory_option,
              help="Write the run's report (Gantt, Perfetto trace, world diff) here.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--trust-module", "trust", multiple=True, metavar="MODULE",
              help="Let the reproducer import this module (or package): its module:attr scheduler or its tool "
                   "modules. Without it, a reproducer runs built-in schedulers and installed catalogues only.")
@click.option("--scheduler", "scheduler_name", default=None,
              help="Replay under this scheduler instead of the one the file names (built-in or module:attr).")
@wall_timeout_option
@_guarded
def replay_command(file: Path, out: Path | None, fmt: str, trust: tuple[str, ...],
                   scheduler_name: str | None, wall_timeout: float) -> None:
    """Replay a reproducer: the same fingerprint, or the first trace event that differs (exit 5).

    A reproducer is data: code it names is imported only with --trust-module (or --scheduler)."""
    from harness.oracles import check, exit_code
    from harness.replay import load, replay
    from harness.report.run_json import dumps, run_to_json

    if file.exists() and not file.is_file():
        raise click.UsageError(f"{file} is not a regular file")
    # One watchdog over building the scheduler and the run: a hang is exit 3, not a divergence (5).
    with wall_limit_per_run(wall_timeout), wall_clock_watchdog(wall_timeout, f"replaying {file}"):
        scheduler = watched_build(lambda: get_scheduler(scheduler_name), wall_timeout,
                                  f"building the scheduler {scheduler_name}") if scheduler_name is not None else None
        reproducer = load(file, trust=trust, own_scheduler=scheduler_name is None)
        outcome = replay(reproducer, scheduler)
    result = outcome.result
    verdicts = check(result)
    spec = scheduler_name or reproducer.scheduler
    document = run_to_json(result, version=__version__, verdicts=verdicts, scheduler_spec=spec)
    document["reproduce"] = f"harness replay {file}" + "".join(f" --trust-module {m}" for m in trust) + (
        f" --scheduler {scheduler_name}" if scheduler_name else "")
    document.update(replayed=outcome.identical, expected_label=reproducer.label, replay=outcome.describe())
    if fmt == "json":
        click.echo(dumps(document))
    else:
        labels = sorted({v.label for v in verdicts if not v.ok and v.label})
        click.echo(f"replay {file}: {reproducer.scenario.name} under {spec}, seed {reproducer.seed}"
                   + (f", tape {list(reproducer.tape)}" if reproducer.tape is not None else ""))
        click.echo(outcome.describe())
        click.echo(f"expected {reproducer.label}; verdicts now: {', '.join(labels) or 'all oracles hold'}")
    if out is not None:
        _write_run(out, result, document, verdicts)
    sys.exit(ExitCode.NONDETERMINISM if not outcome.identical else exit_code(verdicts))


@main.command("matrix")
@click.option("--scenarios", "scenario_list", default="all", show_default=True,
              help="Comma-separated scenario names, or all.")
@click.option("--schedulers", "scheduler_list", default="all", show_default=True,
              help="Comma-separated scheduler names, or all.")
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "json"]), default="table", show_default=True,
              help="table: fits the terminal (split by scheduler if need be); markdown: the README's table.")
@click.option("--markdown", "markdown", is_flag=True, help="Same as --format markdown.")
@wall_timeout_option
@_guarded
def matrix_command(scenario_list: str, scheduler_list: str, seed: int, fmt: str, markdown: bool,
                   wall_timeout: float) -> None:
    """Run every scenario under every scheduler once: verdict and makespan per cell."""
    from harness.report import matrix
    from harness.report.run_json import dumps
    from harness.schedulers import scheduler_names

    scenarios = scenario_names() if scenario_list == "all" else scenario_list.split(",")
    schedulers = scheduler_names() if scheduler_list == "all" else scheduler_list.split(",")
    _check_schedulers(schedulers, wall_timeout)  # fail fast, with the list of valid names
    with wall_limit_per_run(wall_timeout):
        cells = matrix.compute(scenarios, schedulers, seed)
    if fmt == "json":
        click.echo(dumps(matrix.to_json(cells, seed)))
    elif markdown or fmt == "markdown":
        click.echo(matrix.to_markdown(cells, scenarios, schedulers, seed), nl=False)
    else:
        # A pipe has no width; 120 columns keeps the tables readable in CI logs.
        console = Console(highlight=False, markup=False, width=None if sys.stdout.isatty() else 120)
        for table in matrix.to_tables(cells, scenarios, schedulers, seed, console.width):
            console.print(table)


@main.command("run")
@click.argument("scenario")
@click.option("--scheduler", "scheduler_name", default="serial", show_default=True,
              help="Built-in scheduler name (see `harness list schedulers`) or package.module:attribute.")
@click.option("--seed", type=int, default=1, show_default=True, help="Root seed of every random stream.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None, callback=_directory_option,
              help="Write run.json, trace.jsonl, gantt.png, trace.perfetto.json, world_diff.txt and "
                   "index.html into this directory (created if missing).")
@wall_timeout_option
@click.option("--reorder", type=click.IntRange(min=0), default=0, show_default=True,
              help="Also check reorder invariance over this many runs with jittered latencies.")
@loop_option
@execution_options
@tools_option
@_guarded
def run_command(scenario: str, scheduler_name: str, seed: int, fmt: str, out: Path | None,
                wall_timeout: float, reorder: int, tools_modules: tuple[str, ...], **execution: Any) -> None:
    """Run SCENARIO (a built-in name or a .toml path) once under one scheduler and seed."""
    from harness.oracles import check, exit_code
    from harness.report.run_json import dumps, run_to_json

    loop_name = execution.pop("loop_name", None)
    found_scenario, tools_args = _find(scenario, tools_modules)
    loaded, extra = _with_execution(found_scenario, execution)
    loaded, extra = with_loop(loaded, loop_name, [*tools_args, *extra])
    with wall_clock_watchdog(wall_timeout):
        scheduler = watched_build(partial(get_scheduler, scheduler_name), wall_timeout,  # a constructor can spin too
                                  f"building the scheduler {scheduler_name}")
        result = run(loaded, scheduler, seed)
        verdicts = check(result)
        if reorder:
            from harness.oracles import reorder as reorder_oracle

            verdicts.append(reorder_oracle.check(loaded, scheduler, range(seed, seed + reorder)))
    if reorder:
        extra = [*extra, "--reorder", str(reorder)]
    document = run_to_json(result, version=__version__, verdicts=verdicts, scheduler_spec=scheduler_name,
                           extra_args=extra)
    if fmt == "json":
        click.echo(dumps(document))
    else:
        from harness.report.run_text import render_run

        # A pipe has no width; 120 columns keeps values readable in CI logs.
        console = Console(highlight=False, markup=False, width=None if sys.stdout.isatty() else 120)
        render_run(result, console, version=__version__, verdicts=verdicts, scheduler_spec=scheduler_name,
                   extra_args=extra)
    if out is not None:
        _write_run(out, result, document, verdicts)
    sys.exit(exit_code(verdicts))


def _write_run(out: Path, result: RunResult, document: dict[str, Any], verdicts: list[Verdict]) -> None:
    """One run in depth: JSON, trace, Gantt chart (and its data), Perfetto trace, the world diff
    against the serial reference on the same seed, and an index page."""
    import json

    from harness.report import gantt, html, perfetto, plots, world_diff
    from harness.report.run_json import dumps
    from harness.sim.trace import to_jsonl

    out.mkdir(parents=True, exist_ok=True)
    (out / "run.json").write_text(dumps(document) + "\n")
    (out / "trace.jsonl").write_text(to_jsonl(result.trace))
    data = gantt.gantt_data(result, verdicts)
    (out / "gantt.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    plots.draw_gantt(data, out / "gantt.png")
    (out / "trace.perfetto.json").write_text(json.dumps(perfetto.chrome_trace(result, verdicts)) + "\n")
    reference = run(result.replayable, get_scheduler("serial"), result.seed, jitter=result.jitter)
    differences = world_diff.report(reference, result, verdicts)
    (out / "world_diff.txt").write_text(differences)
    files = ["run.json", "trace.jsonl", "gantt.png", "gantt.json", "trace.perfetto.json", "world_diff.txt"]
    html.write_run(out / "index.html", document, differences, files)
