"""One failure of a `check_scheduler` call, as the user reads it: what, why, how to reproduce, the story.

Owns `Failure` and how a finding becomes one: the shrunk run is replayed first (a failure that does
not replay is reported as nondeterministic), its reproducer saved when a directory is given, and
its text assembled (what was violated, the explanation, how likely the draws it needs are, one
reproduce line that runs as printed, the story, then the raw details). The reproduce line is, in
order of preference: the saved reproducer's `harness replay` line; the `harness replay` line of the
example-database entry it was replayed from; a `harness explore ... --label L` line for a scheduler
and scenario given by name or file; otherwise a sentence saying what to pass to get one (never a
line that cannot run). It never explores.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.explore.findings import Finding
from harness.scenario import Scenario
from harness.scheduling import Scheduler

if TYPE_CHECKING:
    from harness.reproducers.file import Reproducer


@dataclass(frozen=True)
class Failure:
    """A distinct failure (scenario x label) with everything the user needs to act on it."""

    scenario: str
    label: str
    oracle: str
    #: The first line: "<oracle> violated on scenario '<name>': <label>" (or "nondeterministic: ...").
    head: str
    #: The whole block: head, message, why, reproduce, story, details.
    text: str
    #: The head, message, why, likelihood and reproduce lines alone (the first lines of `text`).
    essentials: str
    finding: Finding
    #: Whether the shrunk run replays from its seed and tape (else it is reported as nondeterministic).
    replays: bool
    #: The reproduce line printed (a command that runs as printed), if there is one.
    reproduce: str | None = None
    #: The reproducer saved in `report_dir`, if any.
    reproducer: Path | None = None
    #: `harness replay FILE ...` for the saved (or stored) reproducer.
    replay_command: str | None = None
    #: The verified reproducer the pytest plugin keeps in its example database (None if it does not replay).
    example: Reproducer | None = None
    #: The example-database entry this failure was replayed from, if it came from there.
    stored: Path | None = None
    #: How likely the draws it needs are (`harness.report.likelihood`'s JSON), if anything is computed.
    likelihood: dict[str, Any] | None = None

    def brief(self, like: int) -> str:
        """The head, the explanation and the reproduce line, for a failure of the same label as the
        one numbered `like`, shown in full above it."""
        return f"{self.essentials}\n  (the same label as [{like}], on another scenario: its replay tells the story)"

    def to_json(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "label": self.label, "oracle": self.oracle, "head": self.head,
                "replays": self.replays, "reproduce": self.reproduce,
                "reproducer": str(self.reproducer) if self.reproducer else None,
                "witness": dict(self.finding.witness), "found_by": self.finding.found_by,
                "likelihood": self.likelihood, "text": self.text}


def explore_command(scenario_name: str, scenario_path: str | None, tools_modules: tuple[str, ...], spec: str,
                    runs: int, seed: int, label: str, swarm: bool, *, loop: str | None = None,
                    trust: Sequence[str] = ()) -> str:
    """The `harness explore` line that finds this label again, exactly as the check did: the same
    strategy, runs, seed and swarm kinds, counting only `label` (so the first run showing it is the
    check's), with the scenario by name or by its file's absolute path, under `loop` if one is named,
    with the `trust` flags its file needs (`trust_flags`)."""
    from harness.reproducers.command import modules_named, search_path_prefix

    target = shlex.quote(str(Path(scenario_path).resolve())) if scenario_path is not None else scenario_name
    modules = [*modules_named(spec, tools_modules), *([loop.partition(":")[0]] if loop and ":" in loop else [])]
    return (f"{search_path_prefix(modules)}harness explore {target} "
            f"--scheduler {shlex.quote(spec)} --strategy auto --runs {runs} --seed {seed} --label {label}"
            + (f" --loop {shlex.quote(loop)}" if loop else "") + ("" if swarm else " --swarm-kinds ''")
            + "".join(f" {flag}" for flag in trust))


def trust_flags(scenario: Scenario) -> list[str]:
    """The flags a command loading `scenario`'s file again needs (it loaded, so they were trusted):
    `--trust-module` for each module it names, `--allow-dir` for a from_dir outside its directory."""
    from harness.scenario.model_load import loop_modules
    from harness.tools.modules import entry_point_modules

    installed = entry_point_modules() if scenario.tools_modules else {}
    modules = [m for m in scenario.tools_modules if m not in installed] + loop_modules(scenario.agent_specs)
    flags = [f"--trust-module {shlex.quote(module)}" for module in dict.fromkeys(modules)]
    embedded = scenario.embedded
    if embedded is not None and scenario.path is not None:
        home = Path(scenario.path).resolve().parent
        if not Path(embedded.root).is_relative_to(home):
            flags.append(f"--allow-dir {shlex.quote(embedded.root)}")
    return flags


def describe(finding: Finding, *, spec: str | None, policy: Scheduler, report_dir: Path | str | None,
             check_determinism: bool, command: str | None = None, stored: Path | None = None,
             identity: str | None = None, scenario: Scenario | None = None, regressed: bool = False) -> Failure:
    """Replay the finding's run, save it if asked, and put its text together. `command` is the explore
    line for it (None when the scenario has no name or file a command can give); `stored` the example
    database entry it came from (`regressed`: an entry that passed before and fails again); `identity`
    what that database files it under; `scenario` the one explored (its distributions say how likely
    the finding is when swarm faults changed its run's)."""
    from harness import __version__
    from harness.diagnosis.origins import recording
    from harness.oracles import check as check_oracles
    from harness.report.explain import explain_witness
    from harness.report.hang import hang_lines
    from harness.report.likelihood import likelihood_of
    from harness.report.story import story_lines
    from harness.reproducers.file import reproducer_of
    from harness.reproducers.replay import save_verified, verify
    from harness.scenario.dump import NotSerializable

    result = finding.result
    reproducer = reproducer_of(result, spec or result.scheduler, finding.label, finding.oracle, "check_scheduler",
                               policy=policy)
    fresh = check_determinism and spec is not None
    path = None
    unsaved = None
    with recording() as origins:  # the replay notes the user's source lines for the story
        if report_dir is not None and spec is not None:
            try:
                path, selfcheck = save_verified(reproducer, Path(report_dir), version=__version__,
                                                fresh_process=fresh, scheduler=policy)
            except NotSerializable as exc:  # the failure is still reported; only its file is missing
                unsaved = str(exc)
                selfcheck = verify(reproducer, fresh_process=fresh, scheduler=policy)
        else:
            selfcheck = verify(reproducer, fresh_process=fresh, scheduler=policy)
    name = result.scenario.name
    head = f"{finding.oracle} violated on scenario {name!r}: {finding.label}"
    if regressed:
        head += " (fixed before, it fails again)"
    if not selfcheck.ok:
        head = (f"nondeterministic: the {finding.label} found on scenario {name!r} does not replay from its seed "
                f"and order tape ({selfcheck.describe()})")
    lines = [head, f"  {finding.message}",
             f"  why: {explain_witness(finding.label, finding.witness, result, finding.message)}"]
    likely = likelihood_of(result, finding, scenario=scenario if finding.swarm else None)
    if likely.line() is not None:
        lines.append(f"  likelihood: {likely.line()}")
    replay_command = None
    if path is not None:
        replay_command = dataclasses.replace(reproducer, path=path).command
    elif stored is not None and spec is not None and selfcheck.ok:
        replay_command = dataclasses.replace(reproducer, path=stored).command
    reproduce = replay_command or command
    if reproduce is not None:
        # A run that does not replay has no reproducer; the exploration that found it is what can run again.
        lines.append(f"  reproduce: {reproduce}" + ("" if selfcheck.ok else "  (it may not find it again: the "
                                                    "run does not replay)"))
    else:
        lines.append("  " + _no_command_hint(spec))
    if unsaved is not None:
        lines.append(f"  no reproducer saved in {report_dir}: {unsaved}")
    calls = ", ".join(f"{c.id}={c.name}" for c in result.scenario.calls)
    details = [
        f"  witness: {json.dumps(finding.witness, sort_keys=True, default=str)}",
        f"  calls: {calls}",
        f"  seed {result.seed}" + (f", order tape {json.dumps(list(result.tape))}" if result.tape is not None else "")
        + (f", found by {finding.found_by}" if finding.found_by else "")
        + (f", swarm faults: {', '.join(finding.swarm)}" if finding.swarm else "")
        + (f"; stored in the example database as {stored.name}, replayed first" if stored is not None else ""),
    ]
    every = [v for verdict in check_oracles(result) for v in verdict.violations]
    violations = [v for v in every if v.label == finding.label]
    # The story right under the reproduce line, before the raw witness.
    details[:0] = [f"  {line}" for line in story_lines(violations[:1], result, origins if selfcheck.ok else None,
                                                       run_violations=every)]
    if finding.label == "hang":  # what each unfinished call waited on, read at the hang
        details[:0] = [f"  {line}" for line in hang_lines(result)]
    example = None
    if selfcheck.ok:
        example = dataclasses.replace(reproducer, scheduler=identity or spec or result.scheduler, path=None)
    return Failure(name, finding.label, finding.oracle, head, "\n".join([*lines, *details]), "\n".join(lines),
                   finding, selfcheck.ok, reproduce, path, replay_command, example, stored,
                   likely.to_json() if likely.line() is not None else None)


def _no_command_hint(spec: str | None) -> str:
    """What to pass to get a command line, when none can be printed (never a line that cannot run)."""
    if spec is None:
        return ("(no command reproduces a scheduler given as an instance: give it by name, "
                "check_scheduler(\"package.module:attr\"), to get one)")
    return ("(this scenario has no name or file a command can give: pass report_dir=DIR, or "
            "--harness-report-dir=DIR under pytest, to save a reproducer that `harness replay` runs)")
