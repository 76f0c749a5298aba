"""Loading scenario files: TOML in, a validated `Scenario` out, or a `ScenarioError` that names the
file, the field and what was expected.

Owns the file format. Scenario files are data: they are parsed with `tomllib` and never executed,
imported or evaluated. Unknown keys are errors (named by their path, with the closest valid key), and
a call's arguments must fit its tool (`harness.scenario.arguments`), so a typo cannot silently change
a scenario.
"""

from __future__ import annotations

import dataclasses
import json
import posixpath
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.faults.failures import FailureModel, FailureSpecError, parse_failure
from harness.faults.latency import LatencyModel, LatencySpecError, parse_latency
from harness.faults.plan import FaultPlan, FaultSpecError, parse_faults
from harness.model import Batch, ToolCall
from harness.scenario.approvals_load import ApprovalsError, parse_approvals, scripted_calls
from harness.scenario.arguments import OPT_OUT, check_calls
from harness.scenario.model_load import ModelSpecError, parse_agent, parse_agents
from harness.scenario.spec import Interrupt, Recorded, Scenario
from harness.scenario.tree import Tree, TreeError, read_tree
from harness.scheduling.approvals import ApprovalScript
from harness.scheduling.execution import ExecutionPolicy
from harness.sim.kernel import Limits
from harness.sim.machine import Machine
from harness.suggest import FieldError, below, check_keys, did_you_mean
from harness.tools.catalogue import Catalogue, base_catalogue
from harness.tools.inputs import ArgsFromError, Source
from harness.tools.modules import ToolsModuleError
from harness.tools.params import Parameters
from harness.tools.script import Script, ScriptError, Template
from harness.tools.spec import Declared, ResourceKeys, SideEffect, ToolSpec
from harness.world.state import WorldState
from harness.world.world import World

if TYPE_CHECKING:
    from harness.agent.spec import AgentEntry, AgentSpec


class ScenarioError(ValueError):
    """A scenario file is malformed. `str()` is one line: `file: field: expected X, got Y`."""

    def __init__(self, file: str, field: str, expected: str, got: Any = None, *, has_got: bool = True) -> None:
        detail = f"expected {expected}" + (f", got {_show(got)}" if has_got else "")
        super().__init__(f"{file}: {field}: {detail}")
        self.file, self.field, self.expected = file, field, expected


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_TOP_KEYS = {"name", "description", "source", "time_bound_ms", "event_budget", "max_concurrency", "interrupt",
             "approvals",
             "execution", "faults", "world", "tools", "batches", "unknown_tools", "tools_module", "model", "loop",
             "agents", "machine", OPT_OUT}
_WORLD_KEYS = {"cwd", "home", "case_sensitive", "env", "dirs", "files", "symlinks", "hardlinks", "from_dir",
               "users"}
_TOOL_KEYS = {"latency", "declared", "stops_on_cancel", "max_concurrency", "failure", "file_lock", "sync",
              "blocking_ms"}
#: A tool the catalogue does not have is declared whole: its behaviour (`does`) is what makes it one.
_NEW_TOOL_KEYS = _TOOL_KEYS | {"description", "does", "result", "parameters"}
#: What a declared tool claims when its scenario does not say: it may change things, and not safely twice.
NEW_TOOL_DECLARED = Declared(read_only=False, side_effect=SideEffect.LOCAL, idempotent=False)
_BATCH_KEYS = {"label", "calls"}
_CALL_KEYS = {"id", "name", "arguments", "latency", "failure", "depends_on", "result", "args_from", "recorded",
              "recorded_error", OPT_OUT}
_EXECUTION_KEYS = {f.name for f in dataclasses.fields(ExecutionPolicy)}
_DECLARED_BOOLS = {"read_only", "idempotent", "interactive", "needs_confirmation", "honours_cancel", "exclusive"}


class _Reader:
    """Field-by-field validation with the error location built up as it descends."""

    def __init__(self, file: str) -> None:
        self.file = file

    def fail(self, field: str, expected: str, got: Any = None, *, has_got: bool = True) -> ScenarioError:
        return ScenarioError(self.file, field, expected, got, has_got=has_got)

    def table(self, value: Any, field: str, allowed: set[str]) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(field, "a table", value)
        check_keys(value, allowed, field, partial(ScenarioError, self.file, has_got=False))
        return value

    def string(self, value: Any, field: str, *, nonempty: bool = True) -> str:
        if not isinstance(value, str) or (nonempty and not value):
            raise self.fail(field, "a non-empty string" if nonempty else "a string", value)
        return value

    def boolean(self, value: Any, field: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(field, "true or false", value)
        return value

    def positive(self, value: Any, field: str) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise self.fail(field, "a positive integer", value)
        return value

    def non_negative(self, value: Any, field: str) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise self.fail(field, "a whole number of milliseconds >= 0", value)
        return value

    def abs_path(self, value: Any, field: str) -> str:
        path = self.string(value, field)
        if not path.startswith("/"):
            raise self.fail(field, "an absolute path (starting with /)", value)
        return posixpath.normpath(path)

    def failure(self, value: Any, field: str) -> FailureModel:
        try:
            return parse_failure(value)
        except FailureSpecError as exc:
            raise ScenarioError(self.file, below(field, exc.field), str(exc), has_got=False) from None

    def latency(self, value: Any, field: str) -> LatencyModel:
        try:
            return parse_latency(value)
        except LatencySpecError as exc:
            raise ScenarioError(self.file, below(field, exc.field), str(exc).removeprefix("expected "),
                                has_got=False) from None


def load_scenario(path: str | Path, *, tools_modules: tuple[str, ...] = ()) -> Scenario:
    """Read and validate one scenario file; `tools_modules` adds Python tool modules to the ones it names."""
    file = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ScenarioError(file, "(file)", "a readable file", exc.strerror or str(exc)) from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ScenarioError(file, "(file)", "UTF-8 text", has_got=False) from None
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(file, "(syntax)", f"valid TOML ({exc})", has_got=False) from None
    except RecursionError:
        raise ScenarioError(file, "(syntax)", "TOML nested less than a few hundred levels deep",
                            has_got=False) from None
    return scenario_from_data(data, file, tools_modules=tools_modules)


def scenario_from_data(data: Any, file: str = "<data>", *, tools_modules: tuple[str, ...] = ()) -> Scenario:
    """Validate already-parsed scenario data (a TOML document as a dict). `tools_modules` (e.g. from
    `--tools`) are used after the ones the data names."""
    r = _Reader(file)
    top = r.table(data, "", _TOP_KEYS)
    _check_text(r, top, "", 0)
    modules = _modules(r, top.get("tools_module", []), tools_modules)
    try:
        base = base_catalogue(modules)
    except ToolsModuleError as exc:
        raise r.fail("tools_module", f"importable tool modules ({exc})", has_got=False) from None
    if "name" not in top:
        raise r.fail("name", "a non-empty string (the scenario's name)", has_got=False)
    name = r.string(top["name"], "name")
    limits = Limits(
        time_bound_ms=r.positive(top.get("time_bound_ms", Limits().time_bound_ms), "time_bound_ms"),
        event_budget=r.positive(top.get("event_budget", Limits().event_budget), "event_budget"),
    )
    world = _world(r, top.get("world", {}))
    catalogue = _tools(r, top.get("tools", {}), base)
    tool_caps = {
        name: r.positive(override["max_concurrency"], f"tools.{name}.max_concurrency")
        for name, override in top.get("tools", {}).items()
        if "max_concurrency" in override
    }
    max_concurrency = top.get("max_concurrency")
    if max_concurrency is not None:
        max_concurrency = r.positive(max_concurrency, "max_concurrency")
    execution = ExecutionPolicy()
    if "execution" in top:
        table = r.table(top["execution"], "execution", _EXECUTION_KEYS)
        try:
            execution = ExecutionPolicy.from_data(table)
        except ValueError as exc:
            raise r.fail("execution", f"a valid execution policy ({exc})", has_got=False) from None
    faults = FaultPlan()
    if "faults" in top:
        try:
            faults = parse_faults(top["faults"], catalogue)
        except FaultSpecError as exc:
            raise r.fail(below("faults", exc.field), str(exc), has_got=False) from None
    interrupt = None
    if "interrupt" in top:
        table = r.table(top["interrupt"], "interrupt", {"at_ms", "grace_ms"})
        if "at_ms" not in table:
            raise r.fail("interrupt.at_ms", "a whole number of milliseconds >= 0", has_got=False)
        interrupt = Interrupt(r.non_negative(table["at_ms"], "interrupt.at_ms"),
                              r.non_negative(table.get("grace_ms", 3000), "interrupt.grace_ms"))
    machine = _machine(r, top["machine"]) if "machine" in top else Machine()
    agents, catalogue = _agents(r, top, catalogue)
    # Fixed batches run first; a [model] after them decides the turns that follow.
    batches, per_call = _batches(r, top.get("batches")) if "batches" in top or not ("model" in top or agents) \
        else ((), _PerCall())
    agent = _agent(r, top, catalogue, batches)
    _known_tools(r, batches, catalogue, top.get("unknown_tools", []))
    check_arguments = r.boolean(top.get(OPT_OUT, True), OPT_OUT)
    check_calls(top, catalogue, partial(ScenarioError, file, has_got=False))
    approvals = _approvals(r, top, catalogue, batches)
    if per_call.results:
        catalogue = catalogue.with_results(per_call.results)
    tool_failures = {
        name: r.failure(override["failure"], f"tools.{name}.failure")
        for name, override in top.get("tools", {}).items()
        if "failure" in override
    }
    return Scenario(
        name=name,
        batches=batches,
        world=world,
        catalogue=catalogue,
        limits=limits,
        call_latency=per_call.latency,
        tool_failures=tool_failures,
        call_failures=per_call.failures,
        depends_on=per_call.depends_on,
        description=r.string(top.get("description", ""), "description", nonempty=False),
        source=r.string(top.get("source", ""), "source", nonempty=False),
        path=file,
        max_concurrency=max_concurrency,
        tool_caps=tool_caps,
        interrupt=interrupt,
        execution=execution,
        faults=faults,
        tools_modules=modules,
        args_from=per_call.args_from,
        approvals=approvals,
        agent=agent,
        agents=agents,
        recorded=per_call.recorded,
        check_arguments=check_arguments,
        machine=machine,
    )


def _machine(r: _Reader, value: Any) -> Machine:
    """`[machine]`: the host facts bridged code sees (`cpus = N` answers `os.cpu_count()`)."""
    table = r.table(value, "machine", {"cpus"})
    cpus = table.get("cpus", Machine().cpus)
    if not isinstance(cpus, int) or isinstance(cpus, bool) or cpus < 1:
        raise r.fail("machine.cpus", "a positive whole number of CPUs (what os.cpu_count() returns to the runtime)",
                     cpus)
    return Machine(cpus)


def _approvals(r: _Reader, top: Mapping[str, Any], catalogue: Catalogue,
               batches: tuple[Batch, ...]) -> ApprovalScript | None:
    """`[approvals]`: the scripted user (harness.scenario.approvals_load); None: every tool is pre-approved."""
    if "approvals" not in top:
        return None
    try:
        return parse_approvals(top["approvals"], catalogue, scripted_calls(top, batches))
    except ApprovalsError as exc:
        raise ScenarioError(r.file, exc.field, exc.expected, exc.got, has_got=exc.has_got) from None


def _agent(r: _Reader, top: Mapping[str, Any], catalogue: Catalogue,
           batches: tuple[Batch, ...]) -> AgentSpec | None:
    """A scripted model and its loop (harness.scenario.model_load), or None for fixed batches only.
    With `[[batches]]` beside it, those run first and the model decides what follows."""
    if "model" not in top:
        if "loop" in top:
            raise r.fail("loop", "a [model] next to it (a loop policy drives a scripted model)", has_got=False)
        return None
    unknown = top.get("unknown_tools", [])
    names = set(unknown) if isinstance(unknown, list) and all(isinstance(n, str) for n in unknown) else set()
    try:
        return parse_agent(top["model"], top.get("loop"), set(catalogue), names,
                           [call.id for batch in batches for call in batch])
    except ModelSpecError as exc:
        raise r.fail(exc.field, exc.expected, has_got=False) from None


def _agents(r: _Reader, top: Mapping[str, Any], catalogue: Catalogue) -> tuple[tuple[AgentEntry, ...], Catalogue]:
    """`[[agents]]`: several scripted agents at once on the world (harness.scenario.model_load), and
    the catalogue with the `delegate` tool when one of them is a subagent."""
    if "agents" not in top:
        return (), catalogue
    for other, why in (("model", "each agent has its own [agents.model]"),
                       ("loop", "each agent sets its own loop"),
                       ("batches", "the agents' models decide every batch"),
                       ("interrupt", "a user interrupt belongs to one agent's turn")):
        if other in top:
            raise r.fail(other, f"no {other} next to [[agents]] ({why})", has_got=False)
    from harness.policies.registry import scheduler_names

    unknown = top.get("unknown_tools", [])
    names = set(unknown) if isinstance(unknown, list) and all(isinstance(n, str) for n in unknown) else set()
    rows = top["agents"]
    if isinstance(rows, list) and any(isinstance(a, Mapping) and a.get("delegated") is True for a in rows):
        from harness.agent import delegate

        if delegate.NAME in catalogue:
            raise r.fail(f"tools.{delegate.NAME}", f"no tool named {delegate.NAME!r} beside delegated agents (the "
                         "harness gives their parents that tool)", has_got=False)
        catalogue = catalogue.replace_tool(delegate.SPEC)
    try:
        return parse_agents(rows, set(catalogue), names, scheduler_names()), catalogue
    except ModelSpecError as exc:
        raise r.fail(exc.field, exc.expected, has_got=False) from None


#: Deeper than this, a scenario is not a workload but an attack on the loader (and on json.dumps).
MAX_DEPTH = 64


def _check_text(r: _Reader, value: Any, field: str, depth: int) -> None:
    """Every string is text UTF-8 can carry (no lone surrogates: they cannot be hashed into a
    fingerprint or written to a reproducer), and nothing nests absurdly deep."""
    if depth > MAX_DEPTH:
        raise r.fail(field or "(top level)", f"data nested at most {MAX_DEPTH} levels deep", has_got=False)
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise r.fail(field or "(top level)", "text without lone surrogates (\\ud800-\\udfff cannot be "
                         "encoded as UTF-8)", value) from None
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _check_text(r, key, field or "(top level)", depth + 1)
            _check_text(r, item, f"{field}.{key}" if field else str(key), depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_text(r, item, f"{field}[{i}]", depth + 1)


def _modules(r: _Reader, value: Any, extra: tuple[str, ...]) -> tuple[str, ...]:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
        raise r.fail("tools_module", "a Python module name (or a list of them) whose TOOLS the scenario uses, "
                     "e.g. \"mypkg.tools\"", value)
    return tuple(dict.fromkeys([*names, *extra]))


def _known_tools(r: _Reader, batches: tuple[Batch, ...], catalogue: Catalogue, unknown: Any) -> None:
    """Every call names a tool of the catalogue, or one the scenario declares unknown on purpose (to
    model a tool the runtime does not know): a typo must not run as a batch of errors that passes."""
    if not isinstance(unknown, list) or not all(isinstance(n, str) and n for n in unknown):
        raise r.fail("unknown_tools", "a list of tool names the runtime is meant not to know", unknown)
    for name in unknown:
        if name in catalogue:
            raise r.fail("unknown_tools", f"names of tools the catalogue does not have ({name!r} is one it has)",
                         unknown)
    valid = sorted(catalogue)
    for b, batch in enumerate(batches):
        for c, call in enumerate(batch):
            if call.name in catalogue or call.name in unknown:
                continue
            raise r.fail(f"batches[{b}].calls[{c}].name",
                         f"a known tool ({did_you_mean(call.name, valid)}valid: {', '.join(valid)}; or list it in "
                         "unknown_tools to model a tool the runtime does not know)", call.name)


def _world(r: _Reader, value: Any) -> WorldState:
    w = r.table(value, "world", _WORLD_KEYS)
    cwd = r.abs_path(w.get("cwd", "/"), "world.cwd")
    home = r.abs_path(w.get("home", "/home/user"), "world.home")
    case_sensitive = r.boolean(w.get("case_sensitive", True), "world.case_sensitive")
    env_table = w.get("env", {})
    if not isinstance(env_table, Mapping) or not all(isinstance(v, str) for v in env_table.values()):
        raise r.fail("world.env", "a table of string values", env_table)
    dirs_value = w.get("dirs", [])
    if not isinstance(dirs_value, list):
        raise r.fail("world.dirs", "a list of absolute paths", dirs_value)
    dirs = [r.abs_path(d, f"world.dirs[{i}]") for i, d in enumerate(dirs_value)]
    files_table = w.get("files", {})
    if not isinstance(files_table, Mapping):
        raise r.fail("world.files", "a table of path = content", files_table)
    files = []
    for path, content in files_table.items():
        field = f"world.files.{json.dumps(path)}"
        files.append((r.abs_path(path, field), r.string(content, field, nonempty=False)))
    links_table = w.get("symlinks", {})
    if not isinstance(links_table, Mapping):
        raise r.fail("world.symlinks", "a table of link path = target", links_table)
    symlinks = [(r.abs_path(p, f"world.symlinks.{json.dumps(p)}"), r.string(t, f"world.symlinks.{json.dumps(p)}"))
                for p, t in links_table.items()]
    if "from_dir" in w:
        tree = _from_dir(r, w["from_dir"], cwd)
        dirs = [*tree.dirs, *dirs]
        listed = {p for p, _ in files}
        files = [*((p, c) for p, c in tree.files if p not in listed), *files]  # world.files wins
        symlinks = [*tree.symlinks, *symlinks]
    else:
        tree = None
    groups_value = w.get("hardlinks", [])
    if not isinstance(groups_value, list):
        raise r.fail("world.hardlinks", "a list of path lists, e.g. [['/a', '/b']]", groups_value)
    file_paths = {p for p, _ in files}
    hardlinks = []
    for i, group in enumerate(groups_value):
        field = f"world.hardlinks[{i}]"
        if not isinstance(group, list) or len(group) < 2:
            raise r.fail(field, "a list of at least two absolute paths", group)
        paths = tuple(r.abs_path(p, f"{field}[{j}]") for j, p in enumerate(group))
        if paths[0] not in file_paths:
            raise r.fail(f"{field}[0]", "a path listed in world.files (the file the others link to)", paths[0])
        hardlinks.append(paths)
    if tree is not None:
        hardlinks = [*tree.hardlinks, *hardlinks]
    # Building the world once validates the structure (e.g. a file inside a file) and normalises
    # it into canonical form.
    users_table = w.get("users", {})
    if not isinstance(users_table, Mapping):
        raise r.fail("world.users", 'a table of user name = home directory, e.g. { alice = "/home/alice" }',
                     users_table)
    users = {}
    for user, user_home in users_table.items():
        if not user or "/" in user:
            raise r.fail(f"world.users.{json.dumps(user)}", "a user name without '/'", user)
        users[user] = r.abs_path(user_home, f"world.users.{json.dumps(user)}")
    world = World(case_sensitive=case_sensitive, cwd=cwd, home=home, env=dict(env_table), users=users)
    try:
        world.populate(dirs=dirs, files=files, symlinks=symlinks, hardlinks=hardlinks)
    except OSError as exc:
        raise r.fail("world", "a consistent file tree", f"{exc.strerror or exc}: {exc.filename}") from None
    return world.state()


def _from_dir(r: _Reader, value: Any, cwd: str) -> Tree:
    """`from_dir = "tree/"` or `{ path = "tree/", into = "/repo", exclude = [".git"] }`: a real tree,
    relative to the scenario file, copied under `into` (default: the world's cwd)."""
    table = {"path": value} if isinstance(value, str) else r.table(value, "world.from_dir", {"path", "into",
                                                                                             "exclude"})
    where = "world.from_dir" if isinstance(value, str) else "world.from_dir.path"
    relative = r.string(table.get("path"), where)
    into = r.abs_path(table.get("into", cwd), "world.from_dir.into")
    exclude: Any = table.get("exclude", [])
    if not isinstance(exclude, list) or not all(isinstance(p, str) and p for p in exclude):
        raise r.fail("world.from_dir.exclude", 'a list of glob patterns, e.g. [".git", "*.png"]', exclude)
    base = Path(r.file).parent if Path(r.file).is_file() else Path.cwd()
    try:
        return read_tree(base / relative, into, exclude=tuple(exclude))
    except TreeError as exc:
        raise r.fail(where, f"a directory tree that fits a world ({exc})", has_got=False) from None


def _tools(r: _Reader, value: Any, base: Catalogue) -> Catalogue:
    """Overrides of the catalogue's tools, and tools the scenario declares whole (with `does`)."""
    if not isinstance(value, Mapping):
        raise r.fail("tools", "a table of tool name = table", value)
    catalogue = base
    for tool_name, override in value.items():
        field = f"tools.{tool_name}"
        if tool_name in base:
            o = r.table(override, field, _NEW_TOOL_KEYS)
            for whole in ("does", "result", "description", "parameters"):
                if whole in o:
                    raise r.fail(f"{field}.{whole}", f"no {whole}: {tool_name!r} is a tool of the catalogue and "
                                 "keeps its behaviour and arguments (declare a tool under a new name to script one)",
                                 has_got=False)
            spec = catalogue[tool_name]
        else:
            if isinstance(override, Mapping):  # a misspelt key first: `doe` is why `does` is missing
                r.table(override, field, _NEW_TOOL_KEYS)
            if not isinstance(override, Mapping) or "does" not in override:
                # A tool this file declares is as likely to be the one meant as one of the catalogue.
                declared = [n for n, v in value.items() if isinstance(v, Mapping) and "does" in v]
                raise r.fail(field, f"a tool of the catalogue ({did_you_mean(tool_name, [*declared, *base])}"
                             "valid: `harness list tools`), or a new tool declared with its behaviour: does = [...] "
                             "(touch points; [] for a tool that only waits)", has_got=False)
            if not _TOOL_NAME.fullmatch(tool_name):
                raise r.fail(field, "a tool name of letters, digits, '_', '-' or '.'", tool_name)
            o = override
            try:
                behaviour = Script.parse(o["does"], o.get("result"), has_result="result" in o, field="does")
            except ScriptError as exc:
                raise r.fail(f"{field}.{exc.field}", exc.expected, has_got=False) from None
            description = r.string(o.get("description", f"declared in {r.file}"), f"{field}.description",
                                   nonempty=False)
            spec = ToolSpec(tool_name, description, NEW_TOOL_DECLARED, behaviour,
                            parameters=_parameters(r, o, behaviour, field) if "parameters" in o else None)
        if "latency" in o:
            spec = replace(spec, latency=r.latency(o["latency"], f"{field}.latency"))
        if "stops_on_cancel" in o:
            spec = replace(spec, stops_on_cancel=r.boolean(o["stops_on_cancel"], f"{field}.stops_on_cancel"))
        if "declared" in o:
            spec = replace(spec, declared=_declared(r, spec.declared, o["declared"], f"{field}.declared",
                                                    spec.parameters if tool_name not in base else None))
        if "file_lock" in o:
            spec = replace(spec, file_lock=r.boolean(o["file_lock"], f"{field}.file_lock"))
        if "sync" in o:  # the real tool is a plain function: a bridged runtime blocks while it runs
            spec = replace(spec, sync=r.boolean(o["sync"], f"{field}.sync"))
        if "blocking_ms" in o:
            spec = replace(spec, blocking_ms=r.non_negative(o["blocking_ms"], f"{field}.blocking_ms"))
        catalogue = catalogue.replace_tool(spec)
    return catalogue


_TOOL_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")


def _parameters(r: _Reader, table: Mapping[str, Any], behaviour: Script, field: str) -> Parameters:
    """A declared tool's `parameters` (harness.tools.params' short form); every argument its script
    and result read must be one of them."""
    try:
        parameters = Parameters.parse(table["parameters"], f"{field}.parameters")
    except FieldError as exc:
        raise r.fail(exc.field, exc.expected, has_got=False) from None
    for name, where in behaviour.arguments().items():
        _parameter(r, parameters, name, f"{field}.{where}")
    return parameters


def _parameter(r: _Reader, parameters: Parameters, name: str, field: str) -> None:
    """A template at `field` reads the argument `name`: one of the declared `parameters`."""
    if name not in parameters.names:
        raise r.fail(field, f"a template over the tool's parameters ({did_you_mean(name, parameters.names)}"
                     f"{parameters.signature}) or over names earlier steps bind with as", f"{{{name}}}")


def _declared(r: _Reader, declared: Declared, value: Any, field: str,
              parameters: Parameters | None = None) -> Declared:
    """`declared` with the table's changes; key templates of a tool declared with `parameters` read them."""
    d = r.table(value, field, _DECLARED_BOOLS | {"side_effect", "category", "resource_keys"})
    changes: dict[str, Any] = {k: r.boolean(v, f"{field}.{k}") for k, v in d.items() if k in _DECLARED_BOOLS}
    if "side_effect" in d:
        choices = [s.value for s in SideEffect]
        if d["side_effect"] not in choices:
            raise r.fail(f"{field}.side_effect", f"one of {', '.join(choices)}", d["side_effect"])
        changes["side_effect"] = SideEffect(d["side_effect"])
    if "category" in d:
        changes["category"] = r.string(d["category"], f"{field}.category")
    if "resource_keys" in d:
        keys = d["resource_keys"]
        where = f"{field}.resource_keys"
        if not isinstance(keys, list):
            raise r.fail(where, 'a list of key templates over the arguments, e.g. ["db:{table}", "file:{path}"]',
                         keys)
        for i, key in enumerate(keys):
            try:
                Template.parse(key, f"{where}[{i}]")
            except ScriptError as exc:
                raise r.fail(exc.field, exc.expected, has_got=False) from None
            if not key:
                raise r.fail(f"{where}[{i}]", "a non-empty key template", key)
            if parameters is not None:  # a tool with parameters: its key templates read them
                for name in Template(key).names:
                    _parameter(r, parameters, name, f"{where}[{i}]")
        changes["resource_keys"] = ResourceKeys(templates=tuple(keys))
    return replace(declared, **changes)


@dataclass
class _PerCall:
    latency: dict[str, LatencyModel] = field(default_factory=dict)
    failures: dict[str, FailureModel] = field(default_factory=dict)
    depends_on: dict[str, tuple[str, ...]] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)
    args_from: dict[str, dict[str, str]] = field(default_factory=dict)
    recorded: dict[str, Recorded] = field(default_factory=dict)


def _recorded(r: _Reader, call: Mapping[str, Any], at: str) -> Recorded:
    """`recorded = VALUE` or `recorded_error = "text"`: what the call returned in production, an
    expectation only. With `result` (a fixed value) there would be nothing left to check."""
    for other in ("result", "recorded") if "recorded_error" in call else ("result",):
        if other in call:
            key = "recorded_error" if "recorded_error" in call else "recorded"
            raise r.fail(f"{at}.{key}", f"no {key} next to {other}: a call's production result is either its "
                         "fixed value (result) or an expectation its computed value is checked against "
                         "(recorded, recorded_error)", has_got=False)
    if "recorded_error" in call:
        return Recorded(error=r.string(call["recorded_error"], f"{at}.recorded_error", nonempty=False))
    return Recorded(_json_value(r, call["recorded"], f"{at}.recorded"))


def _args_from(r: _Reader, value: Any, field: str, earlier: set[str]) -> dict[str, str]:
    """`args_from = { ticket_id = "open-ticket.value.ticket" }`: arguments read from earlier calls' results."""
    if not isinstance(value, Mapping):
        raise r.fail(field, 'a table of argument = "CALL.value.key" (or a template with {CALL.value.key})', value)
    for arg, text in value.items():
        try:
            source = Source.parse(text)
        except ArgsFromError as exc:
            raise r.fail(f"{field}.{arg}", str(exc), has_got=False) from None
        for producer in source.producers:
            if producer not in earlier:
                raise r.fail(f"{field}.{arg}", "a reference to a call earlier in the scenario", producer)
    return {str(k): str(v) for k, v in value.items()}


def _json_value(r: _Reader, value: Any, field: str) -> Any:
    """A value a call can return: TOML's strings, numbers, booleans, arrays and tables (no dates)."""
    if isinstance(value, str | bool | int) or value is None:
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise r.fail(field, "a finite number (JSON has no nan or inf)", value)
        return value
    if isinstance(value, list):
        return [_json_value(r, item, f"{field}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, Mapping):
        return {str(k): _json_value(r, v, f"{field}.{k}") for k, v in value.items()}
    raise r.fail(field, "a JSON value (string, number, boolean, array or table)", value)


def _batches(r: _Reader, value: Any) -> tuple[tuple[Batch, ...], _PerCall]:
    if not isinstance(value, list) or not value:
        raise r.fail("batches", "a non-empty array of tables ([[batches]])", value, has_got=value is not None)
    batches: list[Batch] = []
    per_call = _PerCall()
    seen: set[str] = set()
    for b, batch_value in enumerate(value):
        where = f"batches[{b}]"
        batch = r.table(batch_value, where, _BATCH_KEYS)
        calls_value = batch.get("calls")
        if not isinstance(calls_value, list) or not calls_value:
            raise r.fail(f"{where}.calls", "a non-empty array of tables ([[batches.calls]])", calls_value,
                         has_got=calls_value is not None)
        calls: list[ToolCall] = []
        for c, call_value in enumerate(calls_value):
            at = f"{where}.calls[{c}]"
            call = r.table(call_value, at, _CALL_KEYS)
            for required in ("id", "name"):
                if required not in call:
                    raise r.fail(f"{at}.{required}", "a non-empty string", has_got=False)
            call_id = r.string(call["id"], f"{at}.id")
            if call_id in seen:
                raise r.fail(f"{at}.id", "an id not used by another call in the scenario", call_id)
            seen.add(call_id)
            arguments = call.get("arguments", "{}")
            if isinstance(arguments, Mapping):
                try:
                    arguments = json.dumps(arguments)
                except (TypeError, ValueError):
                    raise r.fail(f"{at}.arguments", "an inline table of JSON values (TOML dates and times have "
                                 "no JSON form; quote them)", arguments) from None
            elif not isinstance(arguments, str):
                raise r.fail(f"{at}.arguments", "the raw JSON string the model emitted, or an inline table",
                             arguments)
            else:
                try:
                    parsed = json.loads(arguments)
                except (ValueError, RecursionError):
                    parsed = None  # malformed arguments are a legitimate input: kept raw
                # JSON escapes can spell a lone surrogate ("\ud800") that no tool could encode.
                _check_text(r, parsed, f"{at}.arguments", 0)
            if "latency" in call:
                per_call.latency[call_id] = r.latency(call["latency"], f"{at}.latency")
            if "failure" in call:
                per_call.failures[call_id] = r.failure(call["failure"], f"{at}.failure")
            if "result" in call:
                per_call.results[call_id] = _json_value(r, call["result"], f"{at}.result")
            if "recorded" in call or "recorded_error" in call:
                per_call.recorded[call_id] = _recorded(r, call, at)
            if "depends_on" in call:
                needs = call["depends_on"]
                batch_ids = {c.id for c in calls}
                if not isinstance(needs, list) or not all(isinstance(n, str) and n in batch_ids for n in needs):
                    raise r.fail(f"{at}.depends_on", "a list of ids of earlier calls in the same batch", needs)
                per_call.depends_on[call_id] = tuple(needs)
            if "args_from" in call:
                per_call.args_from[call_id] = _args_from(r, call["args_from"], f"{at}.args_from", seen - {call_id})
            r.boolean(call.get(OPT_OUT, True), f"{at}.{OPT_OUT}")
            calls.append(ToolCall(call_id, r.string(call["name"], f"{at}.name"), arguments, c))
        # Empty is allowed: batches built in Python (and Hypothesis') have no label, and their
        # reproducers must load back as they ran.
        label = r.string(batch.get("label", f"batch-{b + 1}"), f"{where}.label", nonempty=False)
        batches.append(Batch(tuple(calls), label))
    return tuple(batches), per_call
