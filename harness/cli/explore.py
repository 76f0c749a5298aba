"""`harness explore`: search for a violation, shrink it, save a verified reproducer.

Owns the command's options, the exploration document (text and JSON) and the exit code of what was
found. The search lives in harness.explore; reproducers in harness.reproducers. It writes only the
reproducer under `--save-dir`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from harness import __version__
from harness.cli.guard import guarded
from harness.cli.isolated import isolate_option, isolated_scheduler, isolating, report_refused
from harness.cli.loop import loop_option, with_loop
from harness.cli.options import (
    MAX_RUNS,
    check_schedulers,
    cluster_for,
    dask_option,
    directory_option,
    execution_options,
    find_with_tools,
    processes_option,
    progress_bar,
    tools_option,
    trust_options,
    wall_timeout_option,
    with_execution,
)
from harness.diagnosis.origins import Origins, recording
from harness.exitcodes import ExitCode
from harness.report.plural import count
from harness.run import RunResult
from harness.sim.realtime import wall_limit_per_run

if TYPE_CHECKING:
    from harness.explore.findings import Finding
    from harness.isolation.remote import IsolatedScheduler
    from harness.scenario.spec import Scenario


@click.command("explore")
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
@processes_option("random, pct and auto runs")
@dask_option
@click.option("--keep-going", is_flag=True, help="Do not stop at the first violation (one finding per label).")
@click.option("--label", "labels", multiple=True,
              help="Only violations with this label count (repeatable), e.g. --label duplicate-effect.")
@click.option("--save-dir", type=click.Path(file_okay=False, path_type=Path), default=Path(".harness/reproducers"),
              callback=directory_option, show_default=True,
              help="Where the shrunk reproducer is written (default: under .harness/ in the current directory).")
@click.option("--no-save", is_flag=True, help="Do not write a reproducer.")
@click.option("--check-determinism", is_flag=True,
              help="Also replay the reproducer in a fresh process under another PYTHONHASHSEED before saving.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@wall_timeout_option
@loop_option
@execution_options
@tools_option
@trust_options
@isolate_option(default=None)
@guarded
def explore_command(scenario: str, scheduler_name: str, strategy: str, runs: int, seed: int, depth: int,
                    swarm: bool, swarm_kinds: str | None, fault_bound: int, processes: int | None,
                    dask_address: str | None, keep_going: bool,
                    labels: tuple[str, ...], save_dir: Path, no_save: bool, check_determinism: bool, fmt: str,
                    wall_timeout: float, import_timeout: float, tools_modules: tuple[str, ...],
                    trust_modules: tuple[str, ...], allow_dirs: tuple[Path, ...], isolate: bool | None,
                    **execution: Any) -> None:
    """Search for a violation: auto (the default), random latencies, PCT, bounded exhaustive search or
    Hypothesis. Stops at the first violation, shrinks it, checks that it replays and saves a reproducer.
    Every result says what it covered (scope)."""
    from harness.explore.engine import explore
    from harness.explore.swarm import KINDS
    from harness.reproducers.file import embedded_line, reproducer_of
    from harness.reproducers.replay import save_verified, verify
    from harness.scenario.dump import NotSerializable

    loop_name = execution.pop("loop_name", None)
    found_scenario, tools_args = find_with_tools(scenario, tools_modules, trust_modules, allow_dirs)
    loaded, extra = with_execution(found_scenario, execution)
    loaded, extra = with_loop(loaded, loop_name, [*tools_args, *extra])
    from harness.oracles import LABELS

    unknown_labels = [label for label in labels if label not in LABELS]
    if unknown_labels:
        raise click.UsageError(f"unknown label {unknown_labels[0]!r}; valid: {', '.join(LABELS)}")
    if dask_address is not None and strategy in ("exhaustive", "hypothesis"):
        raise click.UsageError(f"--dask runs random, pct and auto explorations; {strategy} runs in this process")
    kinds = None if swarm_kinds is None else tuple(k.strip() for k in swarm_kinds.split(",") if k.strip())
    unknown = [k for k in kinds or () if k not in KINDS]
    if unknown:
        raise click.UsageError(f"unknown swarm kind {unknown[0]!r}; valid: {', '.join(KINDS)}")
    # Isolated, the scheduler is imported and built in a supervised child only: every run of the search,
    # of the shrinking and of the self-check goes there, and is judged here.
    isolated = isolated_scheduler(scheduler_name, import_timeout) if isolating(isolate, [scheduler_name]) else None
    if isolated is None:
        check_schedulers([scheduler_name], import_timeout)
    else:
        click.get_current_context().call_on_close(functools.partial(_close, isolated))
    with cluster_for(dask_address, processes) as cluster, progress_bar(f"explore ({strategy})") as progress:
        exploration = explore(loaded, isolated or scheduler_name, strategy, runs=runs, seed=seed, depth=depth,
                              swarm=swarm, keep_going=keep_going, on_progress=progress, swarm_kinds=kinds,
                              fault_bound=fault_bound, processes=processes, labels=labels or None,
                              wall_timeout_s=wall_timeout, import_timeout_s=import_timeout, cluster=cluster)
    shrunk = exploration.shrunk
    path = None
    selfcheck = None
    origins: Origins | None = None
    unsaved = None
    reproducer = None
    if shrunk is not None:
        reproducer = reproducer_of(shrunk.result, scheduler_name, shrunk.label, shrunk.oracle,
                                   shrunk.found_by or strategy, policy=isolated)
        # Isolated, the self-check runs in a fresh child, as in process it builds the scheduler afresh by
        # name: a scheduler that keeps state between runs does not replay there, and is not saved.
        checking = isolated_scheduler(scheduler_name, import_timeout) if isolated is not None else None
        try:
            # The self-check replays it (a run like any other), recording the user's source lines for the story.
            with wall_limit_per_run(wall_timeout), recording() as origins:
                if no_save:
                    selfcheck = verify(reproducer, fresh_process=check_determinism, scheduler=checking)
                else:
                    path, selfcheck = save_verified(reproducer, save_dir, version=__version__,
                                                    fresh_process=check_determinism, scheduler=checking)
        except NotSerializable as exc:
            unsaved = str(exc)
        finally:
            if checking is not None:
                _close(checking)
    found = exploration.found
    # What the user reads (why, story, replay) is all of one run: the shrunk one when there is one.
    shown = shrunk or found
    flags = " ".join(extra)
    document = {
        "scenario": loaded.name, "target": scenario, "scheduler": scheduler_name, "strategy": strategy,
        "seed": seed, "unsaved": unsaved,
        "execution": flags or None,
        "found": found is not None, "label": found.label if found else None,
        "labels": [f.label for f in exploration.findings],
        "runs": exploration.runs, "runs_to_failure": exploration.runs_to_failure,
        "found_by": found.found_by if found else None,
        "witness": shown.witness if shown else None, "swarm": list(found.swarm) if found else None,
        "explanation": _explanation(shown.label, shown.witness, shown.result, shown.message) if shown else None,
        # A swarm run changed the scenario: the needs count under the user's own distributions.
        "likelihood": _likelihood(shown, loaded if shown.swarm else None) if shown else None,
        "story": _story(shrunk.result, shrunk.label, origins if selfcheck is not None and selfcheck.ok else None)
        if shrunk else None,
        "hang": _hang(shrunk.result) if shrunk else None,
        "shrunk_calls": len(shrunk.result.scenario.calls) if shrunk else None,
        "shrunk_tape": list(shrunk.result.tape) if shrunk and shrunk.result.tape is not None else None,
        "fingerprint": shrunk.result.fingerprint if shrunk else None,
        "reproducer": str(path) if path else None,
        "replay": dataclasses.replace(reproducer, path=path).command if path and reproducer else None,
        # The real files a from_dir copied into it, said where it is saved (whoever shares it should know).
        "embedded": embedded_line(reproducer.embedded) if path and reproducer and reproducer.embedded else None,
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


def _close(isolated: IsolatedScheduler) -> None:
    """End the isolated session, and say what its child's code tried and was refused."""
    report_refused(tuple(isolated.refused))
    isolated.close()


def _exit_for(result: RunResult) -> int:
    from harness.oracles import check, exit_code

    return int(exit_code(check(result)))


def _explanation(label: str, witness: dict[str, Any], result: RunResult, message: str) -> str:
    from harness.report.explain import explain_witness

    return explain_witness(label, witness, result, message)


def _likelihood(finding: Finding, scenario: Scenario | None) -> dict[str, Any]:
    """How likely the finding's witness is under the scenario's draws (harness.report.likelihood)."""
    from harness.report.likelihood import likelihood_of

    return likelihood_of(finding.result, finding, scenario=scenario).to_json()


def _story(result: RunResult, label: str, origins: Origins | None) -> dict[str, Any] | None:
    """The interleaving story of the shrunk run's violation (harness.report.story), as JSON."""
    from harness.oracles import check
    from harness.report.story import story

    for verdict in check(result):
        for violation in verdict.violations:
            if violation.label == label:
                told = story(violation, result, origins)
                return told.to_json() if told is not None else None
    return None


def _hang(result: RunResult) -> list[str] | None:
    """What each unfinished call of the shrunk run waited on, if it hung (harness.report.hang)."""
    from harness.report.hang import hang_lines

    return hang_lines(result) or None


def _print_exploration(doc: dict[str, Any], found: bool) -> None:
    flags = f" {doc['execution']}" if doc["execution"] else ""
    click.echo(f"harness explore {doc['target']} --scheduler {doc['scheduler']} --strategy {doc['strategy']} "
               f"--seed {doc['seed']}{flags}: {count(doc['runs'], 'run')}"
               + (f" ({doc['runs_to_failure']} to the first failure, then Hypothesis shrinking it)"
                  if doc["strategy"] == "hypothesis" and found and doc["runs_to_failure"] != doc["runs"] else ""))
    bound = doc["bound"]
    if bound is not None:
        threads = f", {count(bound['threads'], 'thread')}" if bound.get("threads") else ""
        every = "the one run misses" if doc["runs"] == 1 else f"all {doc['runs']} runs miss"
        click.echo(f"pct: n={count(bound['calls'], 'call')}{threads} + time, "
                   f"horizon k={count(bound['horizon'], 'step')}, "
                   f"depth d={bound['depth']}: "
                   f"a depth-{bound['depth']} bug is found by one run with probability >= {bound['per_run']:.4f}; "
                   f"{every} it with probability <= {bound['miss_probability']:.4f} "
                   "(for bugs within the scope below)")
        if bound["max_steps_seen"] > bound["horizon"]:
            click.echo(f"  caveat: runs reached {count(bound['max_steps_seen'], 'step')}, beyond the horizon "
                       f"{bound['horizon']}: the bound covers bugs whose ordering points fall in the first "
                       f"{count(bound['horizon'], 'step')} only")
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
        limited = scope["limited_checks"]
        click.echo(f"  oracle checks limited on {count(limited, 'run')}: "
                   f"{'that run proves' if limited == 1 else 'those runs prove'} nothing")
    if scope.get("labels"):
        click.echo(f"  only violations labelled: {', '.join(scope['labels'])}")
    if not found:
        classes = count(doc["classes"] or 0, "class")
        if doc["proven"]:
            what = f"no {' / '.join(scope['labels'])} violation" if scope.get("labels") else "no violation"
            click.echo(f"{what} in {classes}: the bounded space is exhausted (proven for the "
                       "orders, timers and faults above; not for: " + "; ".join(scope.get("not_covered", [])) + ")")
        elif doc["exhausted"]:
            click.echo(f"no violation in {classes}, but nothing is proven: {scope.get('claim')}")
        elif doc["exhausted"] is False:
            click.echo(f"no violation in {classes}; the bound was reached before the space was "
                       "exhausted: nothing is proven (raise --runs)")
        else:
            click.echo("no violation found (a sample, not a proof)")
        return
    swarm = f" (swarm: {', '.join(doc['swarm'])})" if doc["swarm"] else ""
    by = f" by {doc['found_by']}" if doc["found_by"] else ""
    click.echo(f"FOUND {doc['label']} after {count(doc['runs_to_failure'], 'run')}{by}{swarm}")
    if len(doc["labels"]) > 1:
        click.echo(f"labels found: {', '.join(doc['labels'])}")
    # JSON, as check_scheduler's `witness:` line and --format json give it (a dict's repr is not JSON)
    click.echo(f"witness: {json.dumps(doc['witness'], sort_keys=True, default=str)}")
    if doc.get("explanation"):
        click.echo(f"why: {doc['explanation']}")
    if (doc.get("likelihood") or {}).get("summary"):
        click.echo(f"likelihood: {doc['likelihood']['summary']}")
    if doc.get("story"):
        from harness.report.story import Story, render

        for line in render(Story.from_json(doc["story"])):
            click.echo(line)
    for line in doc.get("hang") or ():
        click.echo(line)
    click.echo(f"shrunk to {count(doc['shrunk_calls'], 'call')}"
               + (f", order tape {doc['shrunk_tape']}" if doc["shrunk_tape"] is not None else ""))
    if doc["determinism"]:
        click.echo(f"self-check: {doc['determinism']}")
    if doc["reproducer"]:
        click.echo(f"reproducer: {doc['reproducer']}")
        if doc.get("embedded"):
            click.echo(f"reproducer {doc['embedded']}")
        click.echo(f"replay: {doc['replay']}")
    elif doc["nondeterministic"]:
        click.echo("no reproducer saved: it would not replay")
    elif doc["unsaved"]:
        click.echo(f"no reproducer saved: {doc['unsaved']}")
