"""Reproducers: a failing run kept as a small data file, and its replay.

Owns the reproducer format (JSON: the scenario inline, the scheduler as named on the command line,
the seed, the order tape or jitter, the expected oracle label, the fingerprint, the trace and, since
the field was added, the identity of the code it ran: see `harness.reproducers.code_identity`), the replay,
which runs it again and either reproduces it byte for byte (same fingerprint) or names the first
event where it diverged, the judgement of a replay (`judge`: reproduced, nondeterministic, fixed or
still fails, and whether an expectation held), and the self-check before saving (`save_verified`:
replay in this process and, optionally, in a fresh one under another PYTHONHASHSEED; a reproducer
that does not replay is not saved). It never explores.

How a replay under the recorded scheduler is judged:

| code since it was recorded | the run now | verdict | exit code |
|---|---|---|---|
| unchanged | same fingerprint | reproduced | the verdicts' |
| unchanged | another trace | nondeterministic | 5 |
| changed (files named) | no violation | fixed | 0 |
| changed | a violation | still fails (naming the labels) | the verdicts' |
| not recorded (older file) | same fingerprint | reproduced | the verdicts' |
| not recorded | another trace | diverged (nondeterminism, or a change it cannot see) | 5 |

A changed run is replayed twice: two runs of the same code that differ are nondeterministic (exit 5),
never `fixed`. With an expectation (`fixed`, `fails`: the recorded label still fires, `reproduces`:
the same fingerprint) an older file is judged by the oracles as if its code changed, unless the
expectation is `reproduces`; the exit code is 0 when it held, 1 when not, 5 for nondeterminism.
Under another scheduler than the recorded one the trace is not compared: fixed or still fails by the
oracles alone, never nondeterministic.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.exitcodes import ExitCode
from harness.policies import get_scheduler
from harness.reproducers.code_identity import (
    CodeChanges,
    CodeIdentity,
    changes_since,
    defining_modules,
    identity_of,
    resolve_named,
    user_packages,
)
from harness.run import RunResult, run
from harness.scenario import Scenario, ScenarioError, scenario_from_data
from harness.scenario.dump import scenario_to_data
from harness.scenario.model_load import code_modules, loop_modules
from harness.scheduling import Scheduler
from harness.sim.arbiter import Tape
from harness.sim.trace import canonical_json

if TYPE_CHECKING:
    from harness.oracles.verdict import Verdict

FORMAT = "harness-reproducer/1"


class ReproducerError(ValueError):
    """A reproducer file is malformed: the message names the file, the field and what was expected."""


@dataclass(frozen=True)
class Reproducer:
    scenario: Scenario
    scheduler: str
    seed: int
    tape: tuple[str, ...] | None
    jitter: float
    label: str
    oracle: str
    fingerprint: str
    trace: tuple[dict[str, Any], ...]
    found_by: str = ""
    path: Path | None = None
    #: The identity of the code it ran; None in files from before it was recorded.
    code: CodeIdentity | None = None

    def run(self, scheduler: Scheduler | None = None) -> RunResult:
        """Run it again, under the named scheduler or the instance given."""
        chooser = Tape(self.tape) if self.tape is not None else None
        policy = scheduler if scheduler is not None else get_scheduler(self.scheduler)
        return run(self.scenario, policy, self.seed, jitter=self.jitter, chooser=chooser)

    @property
    def modules(self) -> tuple[str, ...]:
        """The Python modules replaying it imports: a `module:attr` scheduler's, and the scenario's
        tool modules (installed catalogues, named by entry point, are not listed)."""
        return tuple(dict.fromkeys([*modules_named(self.scheduler, self.scenario.tools_modules),
                                    *loop_modules(self.scenario.agent_specs)]))

    @property
    def command(self) -> str:
        """The `harness replay` line for it, which works as printed from any directory: its file's
        absolute path, the modules it needs trusted and where they come from (`PYTHONPATH=`)."""
        return replay_command(self.path, self.modules)


def replay_command(path: Path | str | None, modules: tuple[str, ...] | list[str], *,
                   trust: tuple[str, ...] | list[str] | None = None, scheduler: str | None = None,
                   expect: str | None = None) -> str:
    """`harness replay FILE` with `--trust-module` for each of `trust` (default: `modules`, those the
    replay imports), `--scheduler` and `--expect`, prefixed with the `PYTHONPATH=` that `modules`
    need. FILE is absolute and every argument is shell-quoted, so the line works as printed from any
    directory."""
    file = shlex.quote(os.path.abspath(path)) if path is not None else "FILE"
    flags = "".join(f" --trust-module {shlex.quote(module)}" for module in (modules if trust is None else trust))
    if scheduler is not None:
        flags += f" --scheduler {shlex.quote(scheduler)}"
    if expect is not None:
        flags += f" --expect {shlex.quote(expect)}"
    return f"{search_path_prefix(modules)}harness replay {file}{flags}"


def reproducer_of(result: RunResult, scheduler: str, label: str, oracle: str, found_by: str, *,
                  policy: Scheduler | None = None) -> Reproducer:
    """A reproducer of `result`, run under the scheduler named `scheduler` (`policy`, the instance
    that ran, tells which code it is when the name does not: an adapter's wrapped function)."""
    # A loop run is kept as its loop scenario (the model decides the batches again on replay).
    scenario = result.replayable
    return Reproducer(scenario, scheduler, result.seed, result.tape, result.jitter, label, oracle,
                      result.fingerprint, result.trace, found_by, code=code_identity(scheduler, scenario, policy))


def code_identity(scheduler: str, scenario: Scenario, policy: Scheduler | None = None) -> CodeIdentity:
    """The identity of the code a run of `scenario` under `scheduler` (the name; `policy`, the
    instance, if there is one) ran: the harness's, and the imported modules of the packages that
    define the scheduler and the scenario's tool, model and loop modules (`harness.reproducers.code_identity`).
    A built-in scheduler's code is the harness's. It never imports anything."""
    from harness.policies import BUILTIN_SCHEDULERS
    from harness.tools.modules import entry_point_modules

    modules: list[str] = []
    if scheduler not in BUILTIN_SCHEDULERS and ":" in scheduler:
        modules.append(scheduler.partition(":")[0])
        named = resolve_named(scheduler)
        if named is not None:
            modules += defining_modules(named)
    if policy is not None:
        modules += defining_modules(policy)
    if scenario.tools_modules:
        installed = entry_point_modules()
        modules += [installed.get(name, name) for name in scenario.tools_modules]
    modules += loop_modules(scenario.agent_specs)
    return identity_of(user_packages(modules))


def save(reproducer: Reproducer, directory: Path, *, version: str) -> Path:
    """Write the reproducer into `directory` (created if missing); returns the file's path."""
    directory.mkdir(parents=True, exist_ok=True)
    # Names come from user data (a scenario named "../../x"): made safe, and short enough for any filesystem.
    parts = (_safe(reproducer.scenario.name)[:80], _safe(reproducer.scheduler)[:60], _safe(reproducer.label)[:40],
             reproducer.fingerprint[:8])
    name = "--".join(parts) + ".json"
    path = directory / name
    path.write_text(to_json(reproducer, version=version))
    return path


def to_json(reproducer: Reproducer, *, version: str) -> str:
    """The reproducer file's text."""
    document = {
        "format": FORMAT, "harness_version": version, "label": reproducer.label, "oracle": reproducer.oracle,
        "found_by": reproducer.found_by, "scheduler": reproducer.scheduler, "seed": reproducer.seed,
        "tape": list(reproducer.tape) if reproducer.tape is not None else None, "jitter": reproducer.jitter,
        "fingerprint": reproducer.fingerprint, "scenario": scenario_to_data(reproducer.scenario),
        "trace": [dict(event) for event in reproducer.trace],
    }
    if reproducer.code is not None:
        document["code"] = reproducer.code.to_data()
    return json.dumps(document, indent=1, sort_keys=True) + "\n"


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)


def load(path: Path, *, trust: tuple[str, ...] = (), own_scheduler: bool = True) -> Reproducer:
    file = str(path)
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ReproducerError(f"{file}: (file): expected a readable file, got {exc.strerror}") from None
    return loads(text, file, Path(path), trust=trust, own_scheduler=own_scheduler)


def modules_named(scheduler: str, tools_modules: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    from harness.policies import BUILTIN_SCHEDULERS
    from harness.tools.modules import entry_point_names

    named = [] if scheduler in BUILTIN_SCHEDULERS or ":" not in scheduler else [scheduler.partition(":")[0]]
    installed = set(entry_point_names()) if tools_modules else set()
    named += [m for m in tools_modules if m not in installed]
    return tuple(dict.fromkeys(named))


def search_path_prefix(modules: tuple[str, ...] | list[str]) -> str:
    """`PYTHONPATH=DIRS ` when some of `modules` were imported from a directory that a fresh `harness`
    process would not search (one this process got from PYTHONPATH, or that pytest put on `sys.path`
    for a package beside the user's tests), else "": a printed command then works, as printed, in a
    fresh shell. The directories are absolute, in `sys.path` order. Modules not imported (yet), and
    installed ones, add nothing."""
    # The directory each top-level package or module was imported from: what PYTHONPATH must hold.
    roots = []
    for module in modules:
        loaded = sys.modules.get(module.partition(".")[0])
        package = next(iter(getattr(loaded, "__path__", ())), None)
        location = package if isinstance(package, str) else getattr(loaded, "__file__", None)
        if isinstance(location, str):
            roots.append(os.path.dirname(os.path.abspath(location)))
    if not roots:
        return ""
    # Only a directory on this process's search path counts (one an import hook serves, as some
    # editable installs do, is found by a fresh process too).
    entries = list(dict.fromkeys(os.path.abspath(e) for e in sys.path if e))
    fresh = _fresh_search_path()
    needed = [entry for entry in entries if entry in roots and entry not in fresh]
    return f"PYTHONPATH={shlex.quote(os.pathsep.join(needed))} " if needed else ""


_FRESH: list[frozenset[str]] = []


def _fresh_search_path() -> frozenset[str]:
    """The directories a fresh interpreter of this installation searches without PYTHONPATH (site
    packages, editable installs' .pth entries, the standard library): asked of one, once a process,
    and only when a printed command names a module of the user's. If it cannot be asked, the
    directories this process did not get from PYTHONPATH stand in."""
    if not _FRESH:
        try:
            done = subprocess.run([sys.executable, "-E", "-c", "import sys, json; print(json.dumps(sys.path[1:]))"],
                                  capture_output=True, text=True, timeout=30, check=True, cwd=os.sep)
            found = frozenset(os.path.abspath(e) for e in json.loads(done.stdout) if e)
        except (OSError, subprocess.SubprocessError, ValueError):
            told = {os.path.abspath(e) for e in os.environ.get("PYTHONPATH", "").split(os.pathsep) if e}
            found = frozenset(os.path.abspath(e) for e in sys.path if e and os.path.abspath(e) not in told)
        _FRESH.append(found)
    return _FRESH[0]


def _trusted(module: str, trust: tuple[str, ...]) -> bool:
    return any(module == t or module.startswith(t + ".") for t in trust)


def _check_trust(data: dict[str, Any], file: str, trust: tuple[str, ...]) -> None:
    """A reproducer is data: by itself it runs built-in schedulers and installed tool catalogues only.
    Code it names (a `module:attr` scheduler, a tools module) is imported only when the user trusts
    it, so a file from elsewhere cannot run anything by being replayed."""
    tools = data["scenario"].get("tools_module", [])
    tools = [tools] if isinstance(tools, str) else tools
    if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
        return  # the scenario's loader names the malformed field
    scheduler = data["scheduler"]
    for module in modules_named(scheduler, tools):
        if not _trusted(module, trust):
            field = "scheduler" if scheduler.partition(":")[0] == module and ":" in scheduler else \
                "scenario.tools_module"
            raise ReproducerError(
                f"{file}: {field}: names code outside the harness ({module!r}); a reproducer is data and imports "
                f"nothing by itself: replay it with --trust-module {module}"
                + (f" (or --scheduler {scheduler})" if field == "scheduler" else "") + " if you trust that code")
    for field, module in code_modules(data["scenario"]):
        if not _trusted(module, trust):
            raise ReproducerError(
                f"{file}: {field}: names code outside the harness ({module!r}); a reproducer is data and imports "
                f"nothing by itself: replay it with --trust-module {module} if you trust that code")


def loads(text: str, file: str = "<reproducer>", path: Path | None = None, *,
          trust: tuple[str, ...] = (), own_scheduler: bool = True) -> Reproducer:
    """Parse a reproducer's text; errors name `file`, the field and what was expected. Modules it
    names are imported only if `trust` lists them (or a package containing them); with
    `own_scheduler=False` (the caller replays under a scheduler of its own) its scheduler is never
    imported, so it need not be trusted."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ReproducerError(f"{file}: (syntax): expected JSON ({exc}){_scenario_hint(text, file)}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ReproducerError(f"{file}: format: expected {FORMAT!r}")
    expected = {"scheduler": str, "seed": int, "label": str, "oracle": str, "fingerprint": str, "scenario": dict,
                "trace": list}
    for key, kind in expected.items():
        if not isinstance(data.get(key), kind):
            raise ReproducerError(f"{file}: {key}: expected {kind.__name__}, got {data.get(key)!r:.60}")
    from harness.policies import BUILTIN_SCHEDULERS

    if data["scheduler"] not in BUILTIN_SCHEDULERS and ":" not in data["scheduler"]:
        valid = ", ".join(sorted(BUILTIN_SCHEDULERS))
        raise ReproducerError(f"{file}: scheduler: expected a built-in scheduler ({valid}) or "
                              f"package.module:attribute, got {data['scheduler']!r:.60}")
    if isinstance(data["seed"], bool):
        raise ReproducerError(f"{file}: seed: expected int, got {data['seed']!r}")
    jitter = data.get("jitter", 0.0)
    if isinstance(jitter, bool) or not isinstance(jitter, int | float) or not 0 <= jitter <= 10:
        raise ReproducerError(f"{file}: jitter: expected a number between 0 and 10, got {jitter!r:.60}")
    tape = data.get("tape")
    if tape is not None and not (isinstance(tape, list) and all(isinstance(t, str) for t in tape)):
        raise ReproducerError(f"{file}: tape: expected a list of call ids or null")
    _check_trust(data if own_scheduler else {**data, "scheduler": "serial"}, file, trust)
    world = data["scenario"].get("world")
    if isinstance(world, dict) and "from_dir" in world:
        # A reproducer carries its world inline; reading a tree named by a file from elsewhere
        # would make replay depend on (and read) the replaying machine's disk.
        raise ReproducerError(f"{file}: scenario.world.from_dir: expected the world's files inline (a reproducer "
                              "never reads the disk)")
    try:
        scenario = scenario_from_data(data["scenario"], f"{file} (scenario)")
    except ScenarioError as exc:
        raise ReproducerError(str(exc)) from None
    if tape is not None:
        _check_tape(tape, scenario, file)
    code = None
    if data.get("code") is not None:  # files from before the field was added have none
        try:
            code = CodeIdentity.from_data(data["code"], f"{file}: code")
        except ValueError as exc:
            raise ReproducerError(str(exc)) from None
    return Reproducer(scenario, data["scheduler"], data["seed"], tuple(tape) if tape is not None else None,
                      float(data.get("jitter", 0.0)), data["label"], data["oracle"], data["fingerprint"],
                      tuple(data["trace"]), str(data.get("found_by", "")), path, code)


def _scenario_hint(text: str, file: str) -> str:
    """A hint when the file that is not JSON is a scenario file (TOML), which `harness run` takes."""
    import tomllib

    if not file.endswith(".toml"):
        try:
            data = tomllib.loads(text)
        except ValueError:  # TOMLDecodeError too
            return ""
        if not {"name", "batches", "model", "agents"} & set(data):
            return ""
    path = file if "/" in file or file.endswith(".toml") else f"./{file}"  # `harness run` reads it as a path
    return f"; {file} looks like a scenario file (TOML): run it with `harness run {shlex.quote(path)}`"


def _check_tape(tape: list[str], scenario: Scenario, file: str) -> None:
    """Every call an order tape names is a call of the scenario (a tape replayed elsewhere, or
    edited by hand, must not silently fall back to model order and pass as a divergence). A loop
    scenario's calls are decided as it runs, so its tape is not checked against them."""
    from harness.sim.arbiter import FAULT, NO_FAULT, THREAD_PREFIX, TIME, call_of, fault_decision

    if scenario.looped:
        return
    calls = {call.id for call in scenario.calls}
    for index, entry in enumerate(tape):
        if entry == TIME or entry.startswith(THREAD_PREFIX):
            continue
        if entry.startswith((FAULT, NO_FAULT)):
            decision = fault_decision(entry)
            if decision is not None and decision[0] in calls:
                continue
        elif call_of(entry) in calls:
            continue
        raise ReproducerError(f"{file}: tape[{index}]: invalid tape: {entry!r} names no call of the scenario "
                              f"(expected one of {', '.join(sorted(calls))}, {TIME!r}, or a fault decision "
                              f"{FAULT}KIND:CALL/ATTEMPT)")


#: (index, recorded event, event now) of the first difference of two traces; None for "nothing".
Divergence = tuple[int, dict[str, Any] | None, dict[str, Any] | None]


def first_difference(recorded: Sequence[Mapping[str, Any]], now: Sequence[Mapping[str, Any]]) -> Divergence | None:
    """The first event where two traces differ (an event missing from one side is None), or None."""
    for index in range(max(len(recorded), len(now))):
        a = dict(recorded[index]) if index < len(recorded) else None
        b = dict(now[index]) if index < len(now) else None
        if a != b:
            return index, a, b
    return None


def describe_divergence(divergence: Divergence | None) -> str:
    if divergence is None:
        return "trace identical but the final world differs from the recorded one"
    index, expected, actual = divergence
    return (f"diverged at trace event {index}: expected {canonical_json(expected) if expected else 'nothing'}, "
            f"got {canonical_json(actual) if actual else 'nothing'}")


@dataclass(frozen=True)
class Replay:
    reproducer: Reproducer
    result: RunResult
    #: (index, expected event, actual event) of the first difference; None when identical.
    divergence: Divergence | None

    @property
    def identical(self) -> bool:
        return self.divergence is None and self.result.fingerprint == self.reproducer.fingerprint

    def describe(self) -> str:
        if self.identical:
            return f"reproduced: same fingerprint {self.result.fingerprint[:16]}"
        return describe_divergence(self.divergence)

    def cause(self) -> str:
        """The likely cause of a difference, when nothing changed ('likely cause: ...')."""
        return likely_cause(self.reproducer.trace, self.result.trace, self.divergence)


def replay(reproducer: Reproducer, scheduler: Scheduler | None = None) -> Replay:
    """Run the reproducer again (under `scheduler`, an instance, if given) and compare traces."""
    result = reproducer.run(scheduler)
    return Replay(reproducer, result, first_difference(reproducer.trace, result.trace))


def likely_cause(recorded: Sequence[Mapping[str, Any]], now: Sequence[Mapping[str, Any]],
                 divergence: Divergence | None) -> str:
    """Why two runs of the same code from the same inputs differ, read from their first difference."""
    if divergence is None:
        return "likely cause: state kept between runs changed the world (a module-level cache or counter)"
    _, expected, actual = divergence
    kind = (expected or actual or {}).get("ev")
    if _same_instant_reorder([dict(e) for e in recorded], [dict(e) for e in now], divergence[0]):
        return ("likely cause: start order follows iteration over a set of tasks (asyncio.as_completed, "
                "asyncio.wait, a set of futures or coroutines): the same events happened in the same "
                "millisecond in another order, and a set iterates in object-address order, which changes "
                "from run to run; iterate a list in model order instead")
    if kind in ("start", "skip", "note", "abandon"):
        return ("likely cause: the scheduler decides from something outside the seed: object addresses "
                "(id(), sets of tasks or handles), wall-clock time, global random, or state kept between runs")
    return ("likely cause: a tool or the scheduler keeps state between runs (a module-level semaphore, "
            "cache or counter) or reads something outside the simulation")


# -- judging a replay: reproduced, nondeterministic, fixed, still fails ----------------------------

REPRODUCED = "reproduced"
NONDETERMINISTIC = "nondeterministic"
FIXED = "fixed"
STILL_FAILS = "still fails"
#: An older reproducer (no code identity) whose replay differs: nondeterminism or a change it cannot see.
DIVERGED = "diverged"
#: What `--expect` takes: the run has no violation / the recorded label still fires / the same fingerprint.
EXPECTATIONS = ("fixed", "fails", "reproduces")


@dataclass(frozen=True)
class Judgement:
    """A replay judged: the verdict, what changed in the code, and whether an expectation held."""

    replay: Replay
    verdicts: tuple[Verdict, ...]
    #: The violation labels of the run now, sorted.
    labels: tuple[str, ...]
    #: The oracles' exit code for the run now.
    verdicts_exit: int
    verdict: str
    #: How the code differs from the recorded identity; None when none was recorded, or under another scheduler.
    changes: CodeChanges | None
    #: The other scheduler it was judged under (the trace is then not compared); None under the recorded one.
    under: str | None = None
    #: A second run of changed code, made to check that it agrees with the first; None when not made.
    second: RunResult | None = None
    #: What the caller expected (one of EXPECTATIONS), or None.
    expected: str | None = None

    @property
    def reproducer(self) -> Reproducer:
        return self.replay.reproducer

    @property
    def result(self) -> RunResult:
        return self.replay.result

    @property
    def code_changed(self) -> bool | None:
        """Whether the code changed since it was recorded; None when that is not known."""
        return None if self.changes is None else bool(self.changes)

    @property
    def changed_files(self) -> tuple[str, ...]:
        return self.changes.files if self.changes is not None else ()

    @property
    def unstable(self) -> Divergence | None:
        """The first difference between the two runs of changed code, when they differ."""
        if self.second is None or self.second.fingerprint == self.result.fingerprint:
            return None
        return first_difference(self.result.trace, self.second.trace) or (len(self.result.trace), None, None)

    @property
    def held(self) -> bool | None:
        """Whether the expectation held; None without one."""
        if self.expected is None:
            return None
        if self.verdict in (NONDETERMINISTIC, DIVERGED):
            return False
        if self.expected == "fixed":
            return self.verdict == FIXED
        if self.expected == "fails":
            return self.reproducer.label in self.labels
        return self.under is None and self.replay.identical

    @property
    def exit_code(self) -> int:
        """The process's exit code: the expectation's when there is one (0 held, 1 not, 5 nondeterminism),
        else the verdict's (5 for nondeterminism, 0 fixed, else the oracles')."""
        if self.verdict in (NONDETERMINISTIC, DIVERGED):
            return int(ExitCode.NONDETERMINISM)
        if self.expected is not None:
            return int(ExitCode.PASS) if self.held else int(ExitCode.SAFETY_VIOLATION)
        return int(ExitCode.PASS) if self.verdict == FIXED else self.verdicts_exit

    def headline(self) -> str:
        """The verdict in one line."""
        label = self.reproducer.label
        if self.under is not None:
            failed = f"FAILED ({', '.join(self.labels)}); exit code {self.verdicts_exit}" if self.labels else \
                "every oracle holds"
            return f"replayed under {self.under} instead of {self.reproducer.scheduler}: {failed}"
        if self.verdict == REPRODUCED:
            return self.replay.describe()
        if self.verdict == DIVERGED:
            return self.replay.describe()
        changed = f"the code changed since it was recorded ({self.changes.describe()})" if self.changes else \
            "judged by the oracles"
        if self.verdict == NONDETERMINISTIC:
            unstable = self.unstable
            if unstable is not None:
                return f"nondeterministic: {changed}, and two replays of it differ: {describe_divergence(unstable)}"
            return f"nondeterministic: {self.replay.describe()}"
        same = "; the run is byte for byte the recorded one" if self.replay.identical else ""
        if self.verdict == FIXED:
            return f"fixed: {changed} and every oracle holds ({label} no longer fires){same}"
        if label in self.labels:
            others = [x for x in self.labels if x != label]
            return f"still fails: {changed} and {label} still fires" + \
                (f" (with {', '.join(others)})" if others else "") + same
        return f"still fails: {changed}; {label} no longer fires, but the run fails with: {', '.join(self.labels)}"

    def lines(self) -> list[str]:
        """What a replay prints under its header: the verdict, the code, the labels, the expectation."""
        out = [self.headline()]
        label = self.reproducer.label
        if self.under is not None:
            out.append(f"recorded under {self.reproducer.scheduler}: {label}; the trace is not compared "
                       "(another policy runs another schedule)")
        else:
            code = self.reproducer.code
            if self.verdict == NONDETERMINISTIC:
                unstable = self.unstable
                out.append(likely_cause(self.result.trace, self.second.trace, unstable)
                           if unstable is not None and self.second is not None else self.replay.cause())
                if unstable is None and code is not None:
                    out.append(f"the code is unchanged since it was recorded ({code.summary()}); a change "
                               "outside these files is not seen")
            elif code is None:
                out.append("the code identity was not recorded (a reproducer from an older harness)"
                           + (": the run was judged by the oracles, as --expect asks" if self.verdict in
                              (FIXED, STILL_FAILS) else ""))
                if self.verdict == DIVERGED:
                    out.append("if nothing changed, this is nondeterminism: " + self.replay.cause())
                    out.append("if you changed the code since, --expect fixed judges the run by the oracles "
                               "(exit 0 when every oracle holds)")
            elif self.verdict == REPRODUCED:
                out.append(f"the code is unchanged since it was recorded ({code.summary()})")
            out.append(f"expected {label}; verdicts now: {', '.join(self.labels) or 'all oracles hold'}")
        if self.expected is not None:
            failing = (f"it still fails ({', '.join(self.labels)})" if label in self.labels else
                       f"{label} no longer fires (the run fails with {', '.join(self.labels)})")
            happened = {REPRODUCED: "it reproduced, byte for byte", FIXED: "it is fixed", STILL_FAILS: failing,
                        NONDETERMINISTIC: "it is nondeterministic", DIVERGED: "it diverged"}[self.verdict]
            if self.verdict == REPRODUCED and self.code_changed is False and self.expected == "fixed":
                happened += " (the code is unchanged since it was recorded)"
            elif self.verdict == STILL_FAILS and self.replay.identical:
                happened += ", the recorded run byte for byte"
            out.append(f"expected {self.expected}; {happened}: "
                       f"{'held' if self.held else 'did not hold'} (exit {self.exit_code})")
        return out

    def to_json(self) -> dict[str, Any]:
        """The judgement's fields for `--format json` (the text's, as data)."""
        unstable = self.unstable
        return {
            "verdict": self.verdict, "code_recorded": self.reproducer.code is not None,
            "code_changed": self.code_changed, "changed_files": list(self.changed_files),
            "code_changes": ([*self.changes.harness, *self.changes.files] if self.changes is not None else None),
            "labels_now": list(self.labels), "expected": self.expected, "expectation_held": self.held,
            "judged_under": self.under,
            "second_replay": None if self.second is None else
            ("agrees" if unstable is None else describe_divergence(unstable)),
        }


def judge(reproducer: Reproducer, scheduler: Scheduler | None = None, *, under: str | None = None,
          expect: str | None = None) -> Judgement:
    """Replay `reproducer` (under `scheduler`, an instance, if given; else the one it names) and judge
    the run (see the table in the module's docstring). `under` names the scheduler when the caller
    replays under one of its own choosing (`--scheduler NAME`): another policy than the recorded one
    is judged by the oracles alone; the recorded one, named otherwise, is not another. `expect` is
    one of EXPECTATIONS or None."""
    from harness.oracles import check, exit_code

    if expect is not None and expect not in EXPECTATIONS:
        raise ValueError(f"expect: expected one of {', '.join(EXPECTATIONS)}, got {expect!r}")
    outcome = replay(reproducer, scheduler)
    verdicts = tuple(check(outcome.result))
    labels = tuple(sorted({x.label for v in verdicts for x in v.violations}))
    judged = functools.partial(Judgement, outcome, verdicts, labels, int(exit_code(verdicts)), expected=expect)
    if under is not None and _another_scheduler(reproducer, under, outcome.result):
        return judged(FIXED if not labels else STILL_FAILS, None, under)
    changes = changes_since(reproducer.code) if reproducer.code is not None else None
    if changes is not None and not changes:
        return judged(REPRODUCED if outcome.identical else NONDETERMINISTIC, changes)
    if outcome.identical and changes is None:
        return judged(REPRODUCED, None)
    if changes is None and expect in (None, "reproduces"):
        return judged(DIVERGED, None)
    # The code changed (or an older file is judged as asked): the oracles decide, once a second run of
    # the same code agrees with the first; two that differ say nothing about a fix.
    second = None if outcome.identical else reproducer.run(scheduler)
    if second is not None and second.fingerprint != outcome.result.fingerprint:
        return judged(NONDETERMINISTIC, changes, second=second)
    return judged(FIXED if not labels else STILL_FAILS, changes, second=second)


def _another_scheduler(reproducer: Reproducer, name: str, result: RunResult) -> bool:
    """Whether `name` is another policy than the recorded one. Another policy's trace differs by design
    (it names the scheduler in its first event); the recorded policy named otherwise (`module:attr` of
    a built-in, a name its trace carries) is not another."""
    first = reproducer.trace[0] if reproducer.trace else {}
    recorded = first.get("scheduler") if first.get("ev") == "run" else None
    return name != reproducer.scheduler and result.scheduler != (recorded or reproducer.scheduler)


# -- the self-check before saving ------------------------------------------------------------------


@dataclass(frozen=True)
class SelfCheck:
    """Whether a reproducer replays: here, and (if asked) in a fresh process under another hash seed."""

    here: Replay
    #: (identical, description) of the replay in a fresh process; None when not asked for.
    fresh: tuple[bool, str] | None = None

    @property
    def ok(self) -> bool:
        return self.here.identical and (self.fresh is None or self.fresh[0])

    def describe(self) -> str:
        if self.ok:
            where = "in this process" + (" and in a fresh one under another PYTHONHASHSEED" if self.fresh else "")
            return f"replays {where}"
        if not self.here.identical:
            return f"nondeterministic: replaying in this process {self.here.describe()}; {self.cause()}"
        assert self.fresh is not None
        return (f"nondeterministic: in a fresh process under another PYTHONHASHSEED it {self.fresh[1]}; likely "
                "cause: an order that depends on string hashing (iterating a set, or a dict built from one)")

    def cause(self) -> str:
        return self.here.cause()


def _same_instant_reorder(recorded: list[dict[str, Any]], now: list[dict[str, Any]], index: int) -> bool:
    """Whether the traces differ first by a start (or abandon) that both runs made in the same
    millisecond, in another order: what iterating a set of tasks does."""
    if index >= len(recorded) or index >= len(now):
        return False
    expected, actual = recorded[index], now[index]
    if expected.get("ev") not in ("start", "abandon") or actual.get("ev") != expected.get("ev"):
        return False
    t = expected.get("t")

    def bare(event: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in event.items() if k != "seq"}

    def instant(trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [bare(e) for e in trace[index:] if e.get("t") == t and e.get("ev") == expected.get("ev")]

    mine, theirs = instant(recorded), instant(now)
    return actual.get("t") == t and bare(actual) in mine and bare(expected) in theirs


def verify(reproducer: Reproducer, *, fresh_process: bool = False, scheduler: Scheduler | None = None) -> SelfCheck:
    """Replay `reproducer` here (under `scheduler`, an instance, if given) and, with `fresh_process`,
    in a new interpreter under another PYTHONHASHSEED (the scheduler must then be importable by name)."""
    here = replay(reproducer, scheduler)
    fresh = _replay_fresh(reproducer) if fresh_process and here.identical else None
    return SelfCheck(here, fresh)


def save_verified(reproducer: Reproducer, directory: Path, *, version: str, fresh_process: bool = False,
                  scheduler: Scheduler | None = None) -> tuple[Path | None, SelfCheck]:
    """Save the reproducer only if it replays (see `verify`); returns (path or None, the check)."""
    check = verify(reproducer, fresh_process=fresh_process, scheduler=scheduler)
    if not check.ok:
        return None, check
    if reproducer.code is not None:
        # The same packages' files again, now that a run of it happened in this process: a module the
        # code imports only while it runs (the exploration may have run in other processes) counts too.
        reproducer = dataclasses.replace(reproducer, code=identity_of(reproducer.code.packages))
    return save(reproducer, directory, version=version), check


def _replay_fresh(reproducer: Reproducer) -> tuple[bool, str]:
    from harness import __version__

    env = dict(os.environ)
    current = env.get("PYTHONHASHSEED", "")
    env["PYTHONHASHSEED"] = str((int(current) + 4241) % 4294967295 or 1) if current.isdigit() else "4241"
    # The child sees the modules this process sees (a user's scheduler imported from a test tree).
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    # This process made the reproducer from code it already runs: the child may import the same.
    trust = [arg for module in reproducer.modules for arg in ("--trust-module", module)]
    done = subprocess.run([sys.executable, "-m", "harness.reproducers.replay", *trust],
                          input=to_json(reproducer, version=__version__), capture_output=True, text=True, env=env,
                          timeout=600, check=False)
    if done.returncode not in (0, _DIVERGED):
        raise ReproducerError(f"the reproducer could not be replayed in a fresh process (exit {done.returncode}): "
                              f"{done.stderr.strip()[-300:]}")
    return done.returncode == 0, done.stdout.strip()


#: `python -m harness.reproducers.replay`'s exit code for a replay that ran and differs (anything else but 0 is
#: a replay that could not run, e.g. a scheduler that does not import there).
_DIVERGED = 3


def _main() -> int:
    """`python -m harness.reproducers.replay [--trust-module M ...]`: replay the reproducer on stdin; exit 0 if
    identical, 3 if not."""
    args = sys.argv[1:]
    trust = tuple(args[i + 1] for i in range(len(args) - 1) if args[i] == "--trust-module")
    outcome = replay(loads(sys.stdin.read(), "<stdin>", trust=trust))
    print(outcome.describe())
    return 0 if outcome.identical else _DIVERGED


if __name__ == "__main__":
    sys.exit(_main())
