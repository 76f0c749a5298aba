"""Loading scenario files: TOML in, a validated `Scenario` out, or a `ScenarioError` that names the
file, the field and what was expected.

Owns the file format. Scenario files are data: they are parsed with `tomllib` and never executed,
imported or evaluated; the code they name is imported only when the caller trusts it, and
`from_dir` reads only where the caller allows (`harness.scenario.trust`). Unknown keys are errors
(named by their path, with the closest valid key), and a call's arguments must fit its tool
(`harness.scenario.arguments`), so a typo cannot silently change a scenario. This module reads the
top level (limits, execution, faults, interrupt, machine, approvals, model and agents) and assembles
the `Scenario`; its tables are read beside it: `[world]` (`world_load`), the tools (`tools_load`),
`[[batches]]` (`batches_load`), `[approvals]` (`approvals_load`), `[model]` and `[[agents]]`
(`model_load`), each with `reader`'s checks.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import moved
from harness.faults.plan import FaultPlan, FaultSpecError, parse_faults
from harness.model import Batch
from harness.scenario.approvals_load import ApprovalsError, parse_approvals, scripted_calls
from harness.scenario.arguments import OPT_OUT, check_calls
from harness.scenario.batches_load import PerCall, parse_batches
from harness.scenario.model_load import ModelSpecError, parse_agent, parse_agents
from harness.scenario.reader import Reader, ScenarioError, check_text
from harness.scenario.spec import REFERENCE_ORDERS, Interrupt, Scenario
from harness.scenario.tools_from import tools_from
from harness.scenario.tools_load import check_known_tools, parse_tools, tool_modules
from harness.scenario.trust import Trust, TrustLike, check_code
from harness.scenario.world_load import parse_world
from harness.scheduling.approvals import ApprovalScript
from harness.scheduling.execution import ExecutionPolicy
from harness.sim.kernel import Limits
from harness.sim.machine import Machine
from harness.suggest import below
from harness.tools.catalogue import Catalogue, base_catalogue
from harness.tools.modules import ToolsModuleError

if TYPE_CHECKING:
    from harness.agent.spec import AgentEntry, AgentSpec


# What loading raises, importable beside the loaders.
__all__ = ["ScenarioError", "load_scenario", "scenario_from_data"]

_TOP_KEYS = {"name", "description", "source", "time_bound_ms", "event_budget", "max_concurrency", "interrupt",
             "approvals",
             "execution", "faults", "world", "tools", "batches", "unknown_tools", "tools_module", "model", "loop",
             "agents", "machine", "reference", "tools_from", OPT_OUT}
_EXECUTION_KEYS = {f.name for f in dataclasses.fields(ExecutionPolicy)}


def load_scenario(path: str | Path, *, tools_modules: tuple[str, ...] = (), trust: TrustLike | None = None) -> Scenario:
    """Read and validate one scenario file; `tools_modules` adds Python tool modules to the ones it
    names. The modules it names are imported only if `trust` (or `tools_modules`, or the project's
    pyproject.toml) names them, and its `from_dir` is read only inside its directory or `trust.dirs`
    (`harness.scenario.trust`); else `UntrustedCode` / `ScenarioError`, before anything is imported."""
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
    return scenario_from_data(data, file, tools_modules=tools_modules, trust=trust)


def scenario_from_data(data: Any, file: str = "<data>", *, tools_modules: tuple[str, ...] = (),
                       trust: TrustLike | None = None) -> Scenario:
    """Validate already-parsed scenario data (a TOML document as a dict). `tools_modules` (e.g. from
    `--tools`) are used after the ones the data names. Data is held to the same rule as a file
    (`load_scenario`): a `from_dir` of data that is no file is read inside the current directory."""
    r = Reader(file)
    top = r.table(data, "", _TOP_KEYS)
    check_text(r, top, "", 0)
    trusted = Trust.of(trust).adding(tools_modules)
    check_code(top, file, trusted)  # before anything the data names is imported
    modules = tool_modules(r, top.get("tools_module", []), tools_modules)
    try:
        base = base_catalogue(modules)
    except ToolsModuleError as exc:
        raise r.fail("tools_module", f"importable tool modules ({exc})", has_got=False) from None
    if "name" not in top:
        raise r.fail("name", "a non-empty string (the scenario's name)", has_got=False)
    name = r.name(top["name"], "name")
    limits = Limits(
        time_bound_ms=r.positive(top.get("time_bound_ms", Limits().time_bound_ms), "time_bound_ms"),
        event_budget=r.positive(top.get("event_budget", Limits().event_budget), "event_budget"),
    )
    world, embedded = parse_world(r, top.get("world", {}), trusted)
    tables = tools_from(r, top["tools_from"], top.get("tools", {}), trusted, base) if "tools_from" in top \
        else top.get("tools", {})
    catalogue = parse_tools(r, tables, base)
    tool_caps = {
        name: r.positive(override["max_concurrency"], f"tools.{name}.max_concurrency")
        for name, override in tables.items()
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
    batches, per_call = parse_batches(r, top.get("batches")) if "batches" in top or not ("model" in top or agents) \
        else ((), PerCall())
    agent = _agent(r, top, catalogue, batches)
    check_known_tools(r, batches, catalogue, top.get("unknown_tools", []))
    check_arguments = r.boolean(top.get(OPT_OUT, True), OPT_OUT)
    reference = top.get("reference")
    if reference is not None and reference not in REFERENCE_ORDERS:
        raise r.fail("reference", f"one of {', '.join(REFERENCE_ORDERS)}", reference)
    check_calls(top, catalogue, partial(ScenarioError, file, has_got=False))
    approvals = _approvals(r, top, catalogue, batches)
    if per_call.results:
        catalogue = catalogue.with_results(per_call.results)
    tool_failures = {
        name: r.failure(override["failure"], f"tools.{name}.failure")
        for name, override in tables.items()
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
        embedded=embedded,
        reference=reference,
    )


def _machine(r: Reader, value: Any) -> Machine:
    """`[machine]`: the host facts bridged code sees (`cpus = N` answers `os.cpu_count()`)."""
    table = r.table(value, "machine", {"cpus"})
    cpus = table.get("cpus", Machine().cpus)
    if not isinstance(cpus, int) or isinstance(cpus, bool) or cpus < 1:
        raise r.fail("machine.cpus", "a positive whole number of CPUs (what os.cpu_count() returns to the runtime)",
                     cpus)
    return Machine(cpus)


def _approvals(r: Reader, top: Mapping[str, Any], catalogue: Catalogue,
               batches: tuple[Batch, ...]) -> ApprovalScript | None:
    """`[approvals]`: the scripted user (harness.scenario.approvals_load); None: every tool is pre-approved."""
    if "approvals" not in top:
        return None
    try:
        return parse_approvals(top["approvals"], catalogue, scripted_calls(top, batches))
    except ApprovalsError as exc:
        raise ScenarioError(r.file, exc.field, exc.expected, exc.got, has_got=exc.has_got) from None


def _agent(r: Reader, top: Mapping[str, Any], catalogue: Catalogue,
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


def _agents(r: Reader, top: Mapping[str, Any], catalogue: Catalogue) -> tuple[tuple[AgentEntry, ...], Catalogue]:
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


# Names split out of this module still import from it, with a warning (see harness.moved).
__getattr__ = moved.forward(__name__)
