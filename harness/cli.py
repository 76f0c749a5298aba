"""The `harness` command line: `list` and `run` (compare, explore, replay, report and sweep build on
these).

Owns argument parsing, exit codes and where output goes. Usage errors (unknown scenario or
scheduler, malformed scenario file) are one line on stderr and exit 2, never a traceback. It
writes files only under the `--out` directory the user chose. It never imports pandas or
matplotlib at start-up.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console

from harness import __version__
from harness.exitcodes import ExitCode
from harness.run import RunResult, WallClockExceeded, run
from harness.scenario import ScenarioError, UnknownScenarioError, find_scenario, scenario_names
from harness.schedulers import BUILTIN_SCHEDULERS, UnknownSchedulerError, get_scheduler

F = TypeVar("F", bound=Callable[..., Any])

def _guarded(command: F) -> F:
    """Turn known user mistakes into one-line errors (exit 2) and anything else into exit 70."""

    @wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except (UnknownScenarioError, UnknownSchedulerError, ScenarioError) as exc:
            click.echo(f"harness: {exc}", err=True)
            sys.exit(ExitCode.USAGE_ERROR)
        except (click.exceptions.Exit, click.ClickException, SystemExit, KeyboardInterrupt):
            raise
        except Exception as exc:  # a bug in the harness, not in the user's input
            click.echo(f"harness: internal error (a harness bug, please report it): "
                       f"{type(exc).__name__}: {exc}", err=True)
            sys.exit(ExitCode.HARNESS_BUG)

    return wrapper  # type: ignore[return-value]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="harness")
def main() -> None:
    """Deterministic simulation and chaos testing for schedulers of LLM tool-call batches."""


@main.command("list")
@click.argument("what", type=click.Choice(["scenarios", "schedulers", "tools"]))
@_guarded
def list_command(what: str) -> None:
    """List the built-in scenarios, schedulers or mock tools."""
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
        from harness.tools import BUILTIN

        for name, spec in BUILTIN.items():
            click.echo(f"{name:28} {spec.description}")


@main.command("run")
@click.argument("scenario")
@click.option("--scheduler", "scheduler_name", default="serial", show_default=True,
              help="Built-in scheduler name (see `harness list schedulers`) or package.module:attribute.")
@click.option("--seed", type=int, default=1, show_default=True, help="Root seed of every random stream.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Directory to write run.json and trace.jsonl into (created if missing).")
@click.option("--wall-timeout", type=float, default=60.0, show_default=True,
              help="Real seconds a run may take before the scheduler is declared hung (0: no limit).")
@_guarded
def run_command(scenario: str, scheduler_name: str, seed: int, fmt: str, out: Path | None,
                wall_timeout: float) -> None:
    """Run SCENARIO (a built-in name or a .toml path) once under one scheduler and seed."""
    from harness.oracles import check, exit_code
    from harness.report.run_json import dumps, run_to_json

    loaded = find_scenario(scenario)
    scheduler = get_scheduler(scheduler_name)
    with wall_clock_watchdog(wall_timeout):
        result = run(loaded, scheduler, seed)
    verdicts = check(result)
    document = run_to_json(result, version=__version__, verdicts=verdicts, scheduler_spec=scheduler_name)
    if fmt == "json":
        click.echo(dumps(document))
    else:
        from harness.report.run_text import render_run

        # A pipe has no width; 120 columns keeps values readable in CI logs.
        console = Console(highlight=False, width=None if sys.stdout.isatty() else 120)
        render_run(result, console, version=__version__, verdicts=verdicts, scheduler_spec=scheduler_name)
    if out is not None:
        _write_run(out, result, dumps(document))
    sys.exit(exit_code(verdicts))


@contextlib.contextmanager
def wall_clock_watchdog(seconds: float) -> Iterator[None]:
    """Interrupt code under test that spins without yielding to the simulation.

    Virtual-time loops are stopped by the kernel's bounds; only a Python loop that never yields can
    outrun them, and only a real timer can stop it. Unix main thread only; elsewhere a no-op.
    """
    if seconds <= 0 or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise WallClockExceeded(f"the run took more than {seconds:g} s of real time (a scheduler that never yields?)")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _write_run(out: Path, result: RunResult, document: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "run.json").write_text(document + "\n")
    from harness.sim.trace import canonical_json

    (out / "trace.jsonl").write_text("".join(canonical_json(e) + "\n" for e in result.trace))
