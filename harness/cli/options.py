"""The option groups and validators the `harness` commands share.

Owns `--tools`, `--trust-module` and `--allow-dir` (what a scenario file may import and read:
harness.scenario.trust), `--wall-timeout`, `--import-timeout`, `--processes` and `--dask` (and
connecting to the cluster), the execution-policy flags (and their reproduce-line form), the checks
on directories and files a command will write into (made before any run, so a long run does not end
in a traceback), name lists (`a,b` or `all`), the progress bar and building the named schedulers up
front. It never runs a scenario and never prints results.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from rich.console import Console

from harness.policies.registry import build_scheduler
from harness.scenario import Scenario, find_scenario
from harness.scenario.trust import Trust
from harness.sim.machine import Machine
from harness.sim.realtime import DEFAULT_IMPORT_TIMEOUT_S

if TYPE_CHECKING:
    from harness.distribute.cluster import Cluster

F = TypeVar("F", bound=Callable[..., Any])


def tools_option(command: F) -> F:
    return click.option("--tools", "tools_modules", multiple=True, metavar="MODULE",
                        help="A Python module (or installed catalogue) whose TOOLS the scenario may call; "
                             "repeatable.")(command)


def trust_options(command: F) -> F:
    """`--trust-module MODULE` and `--allow-dir DIR` (both repeatable): the code a scenario file may
    import and the directories beyond its own its `from_dir` may read (harness.scenario.trust)."""
    command = click.option("--allow-dir", "allow_dirs", multiple=True, metavar="DIR",
                           type=click.Path(file_okay=False, path_type=Path),
                           help="Let a scenario file's [world] from_dir read this directory too (by default only "
                                "its own directory, after symlinks); repeatable.")(command)
    return click.option("--trust-module", "trust_modules", multiple=True, metavar="MODULE",
                        help="Let a scenario file import this module (or package): its tools_module, model or "
                             "loop. Without it a file imports nothing (also: --tools, or trusted-modules under "
                             "[tool.harness] in pyproject.toml); repeatable.")(command)


def trust_of(trust_modules: tuple[str, ...], allow_dirs: tuple[Path, ...]) -> tuple[Trust, list[str]]:
    """The `Trust` the flags give, and those flags for a reproduce line."""
    args = [*(arg for module in trust_modules for arg in ("--trust-module", module)),
            *(arg for directory in allow_dirs for arg in ("--allow-dir", str(directory)))]
    return Trust(tuple(trust_modules), tuple(os.path.abspath(d) for d in allow_dirs)), args


def _seconds(value: float) -> float:
    """A real-time limit: finite, 0 (none) or between 1 ms and a day."""
    if not math.isfinite(value) or value < 0 or 0 < value < 0.001 or value > 86400:
        raise click.BadParameter(f"{value!r} is not a number of seconds between 0.001 and 86400 (0: no limit)")
    return value


def wall_timeout_option(command: F) -> F:
    """`--wall-timeout S`: real seconds each run may take before the scheduler is declared hung: a
    Python loop that never yields is stopped, reported as a hang, exit 3. And `--import-timeout S`:
    real seconds importing and building a `module:attr` scheduler may take, before any run's budget
    starts (a real runtime's import takes minutes on a loaded machine); exceeding it is exit 3 too,
    reported as the slow import it is."""
    command = click.option("--import-timeout", type=float, default=DEFAULT_IMPORT_TIMEOUT_S, show_default=True,
                           callback=lambda c, p, v: _seconds(v),
                           help="Real seconds importing and building the scheduler may take, before any run "
                                "starts; not part of --wall-timeout (0: no limit).")(command)
    return click.option("--wall-timeout", type=float, default=60.0, show_default=True,
                        callback=lambda c, p, v: _seconds(v),
                        help="Real seconds each run may take before the scheduler is declared hung (0: no limit). "
                             "Importing the scheduler is not counted (see --import-timeout)."
                        )(command)


def processes_option(what: str) -> Callable[[F], F]:
    """`--processes N`: local worker processes (default: every core, but one for small jobs)."""
    from harness.distribute.workers import AUTO_POOL_MIN_RUNS

    def decorate(command: F) -> F:
        return click.option(
            "--processes", type=click.IntRange(min=1), default=None, show_default="all cores",
            help=f"Worker processes for {what} (same results for any number). By default every core, but only "
                 f"this process for fewer than {AUTO_POOL_MIN_RUNS:,} runs (a pool's start-up would cost more "
                 "than it saves). With --dask local: the number of local Dask workers.")(command)

    return decorate


def dask_option(command: F) -> F:
    """`--dask ADDRESS`: run on a Dask distributed cluster (needs the `[dask]` extra)."""
    return click.option("--dask", "dask_address", metavar="ADDRESS", default=None,
                        help="Run on a Dask cluster: a `dask scheduler`'s address (tcp://host:8786), or `local` to "
                             "start a LocalCluster. Same results as a local run. Needs: pip install 'harness[dask]'."
                        )(command)


@contextlib.contextmanager
def cluster_for(address: str | None, processes: int | None) -> Iterator[Cluster | None]:
    """The Dask cluster `--dask` names for the length of the command (None without `--dask`); a
    missing extra or an unreachable scheduler is a usage error, before any run."""
    if address is None:
        yield None
        return
    from harness.distribute.cluster import DaskUnavailable, connect

    if processes is not None and address != "local":
        raise click.UsageError("--processes chooses the workers of --dask local only (a cluster has its own)")
    try:
        opened = connect(address, processes)
        cluster = opened.__enter__()
    except DaskUnavailable as exc:
        raise click.UsageError(str(exc)) from None
    with contextlib.ExitStack() as stack:
        stack.push(opened)
        yield cluster


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


def directory_option(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
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


def file_option(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
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


def sweep_file_option(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """A sweep file: new, empty, or one a sweep wrote (rows are appended to it, never to another file)."""
    value = file_option(ctx, param, value)
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



EXECUTION_FLAGS: list[tuple[str, str, Any, str]] = [
    ("--timeout-ms", "timeout_ms", click.IntRange(min=1), "Abandon each call after this many virtual ms."),
    ("--max-total-timeout-ms", "max_total_timeout_ms", click.IntRange(min=1),
     "With --reset-timeout-on-progress: abandon a call this long after it started, whatever its progress "
     "(MCP maxTotalTimeout)."),
    ("--retries", "retries", click.IntRange(min=0), "Extra attempts for failed calls of idempotent tools."),
    ("--backoff-ms", "backoff_ms", click.IntRange(min=0), "Backoff before retry n: this * 2**(n-1) ms."),
    ("--max-concurrency", "max_concurrency", click.IntRange(min=1), "Global cap on calls running at once."),
    ("--same-signature-limit", "same_signature_limit", click.IntRange(min=0),
     "Mark a tool unavailable after this many identical failures (seed 004)."),
    ("--poll-interval-ms", "poll_interval_ms", click.IntRange(min=0), "How often an interrupt is noticed."),
    ("--batch-deadline-ms", "batch_deadline_ms", click.IntRange(min=1),
     "Abandon calls still running then as `unknown` (hermes: 420 s)."),
    ("--on-failure", "on_failure", click.Choice(["isolate", "cancel_siblings"]), "What a failing call does."),
    ("--checkpoints", "checkpoints", click.Choice(["none", "hermes", "wait"]),
     "Snapshot the tree before writes and destructive commands: as hermes (siblings go on while it copies) "
     "or with them waiting for the copy."),
]


def execution_options(command: F) -> F:
    """Execution-policy flags shared by the commands that run schedulers; unset means "as the
    scenario says". They apply to plan-based policies (every built-in except serial and parallel)."""
    for flag, dest, kind, text in reversed(EXECUTION_FLAGS):
        command = click.option(flag, dest, type=kind, default=None, help=text)(command)
    command = click.option("--idempotency-keys/--no-idempotency-keys", "idempotency_keys", default=None,
                           help="Send one idempotency key with every attempt of a call.")(command)
    command = click.option("--retry-non-idempotent", "retry_non_idempotent", is_flag=True, default=None,
                           help="Retry tools not declared idempotent too (dangerous).")(command)
    command = click.option("--reset-timeout-on-progress", "reset_timeout_on_progress", is_flag=True, default=None,
                           help="Restart --timeout-ms at each progress notification of a call (MCP "
                                "resetTimeoutOnProgress).")(command)
    command = click.option("--escalate-timeouts/--no-escalate-timeouts", "escalate_timeouts", default=None,
                           help="Hand a timed-out call of a tool not declared idempotent to the scripted user "
                                "instead of retrying it.")(command)
    command = click.option("--cpus", "cpus", type=click.IntRange(min=1), default=None,
                           help="CPUs of the simulated machine: what os.cpu_count() returns to bridged code "
                                "(overrides the scenario's [machine] cpus; default 8).")(command)
    return command


def find_with_tools(scenario: str, tools_modules: tuple[str, ...], trust_modules: tuple[str, ...] = (),
                    allow_dirs: tuple[Path, ...] = ()) -> tuple[Scenario, list[str]]:
    """The scenario with the `--tools` modules, loaded under `--trust-module` and `--allow-dir`, and
    those flags for the reproduce line."""
    trust, trust_args = trust_of(trust_modules, allow_dirs)
    found = find_scenario(scenario, tools_modules=tools_modules, trust=trust)
    return found, [*(arg for module in tools_modules for arg in ("--tools", module)), *trust_args]


def with_execution(scenario: Scenario, options: dict[str, Any]) -> tuple[Scenario, list[str]]:
    """The scenario with the given execution flags applied, and those flags for the reproduce line."""
    given = {k: v for k, v in options.items() if v is not None}
    extra: list[str] = []
    cpus = given.pop("cpus", None)
    if cpus is not None:  # the simulated machine, not the execution policy (see harness.sim.machine)
        scenario = replace(scenario, machine=Machine(cpus))
        extra += ["--cpus", str(cpus)]
    if not given:
        return scenario, extra
    for flag, dest, _, _ in EXECUTION_FLAGS:
        if dest in given:
            extra += [flag, str(given[dest])]
    if "idempotency_keys" in given:
        extra.append("--idempotency-keys" if given["idempotency_keys"] else "--no-idempotency-keys")
    if given.get("retry_non_idempotent"):
        extra.append("--retry-non-idempotent")
    if given.get("reset_timeout_on_progress"):
        extra.append("--reset-timeout-on-progress")
    if "escalate_timeouts" in given:
        extra.append("--escalate-timeouts" if given["escalate_timeouts"] else "--no-escalate-timeouts")
    try:
        execution = scenario.execution.merged(**given)
    except ValueError as exc:  # a combination the scenario's policy does not allow (a total limit without a timeout)
        raise click.UsageError(f"{exc} (scenario {scenario.name})") from None
    return replace(scenario, execution=execution), extra


def names(option: str, valid: Callable[[], list[str]]) -> list[str]:
    return valid() if option == "all" else [name.strip() for name in option.split(",") if name.strip()]


@contextlib.contextmanager
def progress_bar(description: str) -> Iterator[Callable[[int, int], None]]:
    """A rich progress bar on a terminal; silent in pipes and CI logs."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    console = Console(stderr=True, markup=False, highlight=False)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=console, transient=True, disable=not console.is_terminal) as progress:
        task = progress.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        yield update



def check_schedulers(names: list[str], import_timeout: float) -> None:
    """Import and build each named scheduler once before any run (under `--import-timeout`, never a
    run's `--wall-timeout`): an unknown name is a usage error at once, and an import or constructor
    that never finishes is reported as such (exit 3) instead of a harness that never answers."""
    for name in names:
        build_scheduler(name, import_timeout)
