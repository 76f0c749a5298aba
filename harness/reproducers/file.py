"""A reproducer file: a failing run kept as a small data file, written, read and checked.

Owns the format (JSON: the scenario inline, the scheduler as named on the command line, the seed,
the order tape or jitter, the expected oracle label, the fingerprint, the trace and, since the field
was added, the identity of the code it ran: see `harness.reproducers.code_identity`), `Reproducer`,
`reproducer_of` a run, `save` / `to_json`, and `load` / `loads`, which name the file, the field and
what was expected for malformed input, and import only the code the user trusts (a reproducer is
data: the rule is `harness.scenario.trust`'s, as for scenario files). A reproducer of a scenario whose
`[world] from_dir` copied real files lists them (`embedded`), so whoever shares it knows what it
carries. It never compares a replay with its recording (`harness.reproducers.divergence`).
"""

from __future__ import annotations

import contextlib
import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.atomic import make_dir, write_text
from harness.policies import get_scheduler
from harness.reproducers.code_identity import (
    CodeIdentity,
    defining_modules,
    identity_of,
    resolve_named,
    user_packages,
)
from harness.reproducers.command import modules_named, replay_command
from harness.run import RunResult, run
from harness.scenario import Scenario, ScenarioError, scenario_from_data
from harness.scenario.dump import scenario_to_data
from harness.scenario.model_load import loop_modules
from harness.scenario.spec import Embedded
from harness.scenario.trust import Trust, TrustLike, UntrustedCode, check_code
from harness.scheduling import Scheduler
from harness.sim.arbiter import Tape

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
    #: The real files its scenario's `from_dir` copied in when it loaded (None: none).
    embedded: Embedded | None = None

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


def reproducer_of(result: RunResult, scheduler: str, label: str, oracle: str, found_by: str, *,
                  policy: Scheduler | None = None) -> Reproducer:
    """A reproducer of `result`, run under the scheduler named `scheduler` (`policy`, the instance
    that ran, tells which code it is when the name does not: an adapter's wrapped function)."""
    # A loop run is kept as its loop scenario (the model decides the batches again on replay).
    scenario = result.replayable
    return Reproducer(scenario, scheduler, result.seed, result.tape, result.jitter, label, oracle,
                      result.fingerprint, result.trace, found_by, code=code_identity(scheduler, scenario, policy),
                      embedded=scenario.embedded or result.scenario.embedded)


def code_identity(scheduler: str, scenario: Scenario, policy: Scheduler | None = None) -> CodeIdentity:
    """The identity of the code a run of `scenario` under `scheduler` (the name; `policy`, the
    instance, if there is one) ran: the harness's, and the imported modules of the packages that
    define the scheduler and the scenario's tool, model and loop modules (`harness.reproducers.code_identity`).
    A built-in scheduler's code is the harness's. It never imports anything."""
    from harness.policies import BUILTIN_SCHEDULERS
    from harness.run.elsewhere import RunsElsewhere
    from harness.tools.modules import entry_point_modules

    if isinstance(policy, RunsElsewhere):  # an isolated child's stand-in: the code was imported there
        told = policy.code_elsewhere(scenario)
        if told is not None:
            with contextlib.suppress(ValueError):  # not an identity: told from here, as far as this process can
                return CodeIdentity.from_data(told, "the identity an isolated process sent")
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


def save(reproducer: Reproducer, directory: Path, *, version: str, text: str | None = None) -> Path:
    """Write the reproducer into `directory` (created if missing); returns the file's path. `text`:
    its `to_json` already made (and checked), written as it is."""
    make_dir(directory)
    # Names come from user data (a scenario named "../../x"): made safe, and short enough for any filesystem.
    parts = (_safe(reproducer.scenario.name)[:80], _safe(reproducer.scheduler)[:60], _safe(reproducer.label)[:40],
             reproducer.fingerprint[:8])
    name = "--".join(parts) + ".json"
    path = directory / name
    # Whole or not at all (harness.atomic).
    write_text(path, to_json(reproducer, version=version) if text is None else text)
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
    if reproducer.embedded is not None:
        embedded = reproducer.embedded
        document["embedded"] = {"from_dir": embedded.root, "into": embedded.into, "files": list(embedded.files)}
    return json.dumps(document, indent=1, sort_keys=True) + "\n"


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)


def load(path: Path, *, trust: TrustLike | None = None, own_scheduler: bool = True) -> Reproducer:
    file = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ReproducerError(f"{file}: (file): expected a readable file, got {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:  # a byte no JSON file may hold (the file was corrupted)
        raise ReproducerError(f"{file}: (file): expected UTF-8 text, got byte {raw[exc.start]:#04x} at offset "
                              f"{exc.start}") from None
    return loads(text, file, Path(path), trust=trust, own_scheduler=own_scheduler)


def _check_trust(data: dict[str, Any], file: str, trust: Trust) -> None:
    """A reproducer is data: by itself it runs built-in schedulers and installed tool catalogues only.
    Code it names (a `module:attr` scheduler, the scenario's tool, model and loop modules) is imported
    only when the user trusts it (`harness.scenario.trust`), so a file from elsewhere cannot run
    anything by being replayed."""
    from harness.policies import BUILTIN_SCHEDULERS

    scheduler = data["scheduler"]
    module = scheduler.partition(":")[0]
    if scheduler not in BUILTIN_SCHEDULERS and ":" in scheduler and not trust.allows(module):
        raise ReproducerError(str(UntrustedCode(file, "scheduler", module, kind="reproducer", verb="replay",
                                                alternative=f" (or --scheduler {scheduler})")))
    try:
        check_code(data["scenario"], file, trust, prefix="scenario.", kind="reproducer", verb="replay")
    except UntrustedCode as exc:
        raise ReproducerError(str(exc)) from None


def loads(text: str, file: str = "<reproducer>", path: Path | None = None, *,
          trust: TrustLike | None = None, own_scheduler: bool = True) -> Reproducer:
    """Parse a reproducer's text; errors name `file`, the field and what was expected. Modules it
    names are imported only if `trust` (or the project's pyproject.toml) lists them, or a package
    containing them (`harness.scenario.trust`); with
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
    for index, event in enumerate(data["trace"]):
        if not isinstance(event, dict):
            raise ReproducerError(f"{file}: trace[{index}]: expected an object (a trace event), got {event!r:.60}")
    jitter = data.get("jitter", 0.0)
    if isinstance(jitter, bool) or not isinstance(jitter, int | float) or not 0 <= jitter <= 10:
        raise ReproducerError(f"{file}: jitter: expected a number between 0 and 10, got {jitter!r:.60}")
    tape = data.get("tape")
    if tape is not None and not (isinstance(tape, list) and all(isinstance(t, str) for t in tape)):
        raise ReproducerError(f"{file}: tape: expected a list of call ids or null")
    trusted = Trust.of(trust)
    _check_trust(data if own_scheduler else {**data, "scheduler": "serial"}, file, trusted)
    world = data["scenario"].get("world")
    if isinstance(world, dict) and "from_dir" in world:
        # A reproducer carries its world inline; reading a tree named by a file from elsewhere
        # would make replay depend on (and read) the replaying machine's disk.
        raise ReproducerError(f"{file}: scenario.world.from_dir: expected the world's files inline (a reproducer "
                              "never reads the disk)")
    try:
        scenario = scenario_from_data(data["scenario"], f"{file} (scenario)", trust=trusted)
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
                      tuple(data["trace"]), str(data.get("found_by", "")), path, code,
                      _embedded(data.get("embedded"), file))


def embedded_line(embedded: Embedded, shown: int = 10) -> str:
    """One line saying which real files a reproducer carries (its scenario's from_dir copied them in)."""
    files = embedded.files
    listed = ", ".join(files[:shown]) + (f", and {len(files) - shown} more" if len(files) > shown else "")
    return (f"embeds {len(files)} file{'' if len(files) == 1 else 's'} read from {embedded.root} (world: "
            f"{embedded.into}){': ' + listed if files else ''}")


def _embedded(value: Any, file: str) -> Embedded | None:
    """The `embedded` record (files from before it was written have none); it is information for the
    reader, never read from the disk."""
    if value is None:
        return None
    try:  # printed by `harness replay`: text a terminal can take (no lone surrogates)
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (UnicodeEncodeError, ValueError):
        value = "text with lone surrogates"
    if not (isinstance(value, dict) and isinstance(value.get("from_dir"), str) and isinstance(value.get("into"), str)
            and isinstance(value.get("files"), list) and all(isinstance(f, str) for f in value["files"])):
        raise ReproducerError(f"{file}: embedded: expected {{from_dir: path, into: path, files: [path, ...]}} (the "
                              f"real files the scenario copied in), got {value!r:.60}")
    return Embedded(value["from_dir"], value["into"], tuple(value["files"]))


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


