"""The adapters name a scheduler after the function it wraps, by module and qualified name.

Two executors both called `execute` (a runtime's buggy one and its fix) were both `execute` in every
header, finding, reproducer and trace; an explicit `name=` still wins.
"""

from __future__ import annotations

import asyncio
import functools
import json
from typing import Any

from rich.console import Console

from harness import __version__, find_scenario, run
from harness.bridges import from_asyncio, from_gate, from_plan, from_threads
from harness.bridges.naming import origin_name
from harness.explore.engine import explore
from harness.report.run_text import render_run

HERE = __name__


class Buggy:
    """A runtime's executor: every call at once."""

    @staticmethod
    async def execute(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
        async def one(tc: Any) -> dict[str, Any]:
            value = await tools[tc.function.name](**json.loads(tc.function.arguments))
            return {"id": tc.id, "success": True, "result": value}
        return list(await asyncio.gather(*(one(tc) for tc in tool_calls)))


class Fixed:
    """The same runtime's fix: one call at a time."""

    @staticmethod
    async def execute(tool_calls: list[Any], tools: Any) -> list[dict[str, Any]]:
        out = []
        for tc in tool_calls:
            value = await tools[tc.function.name](**json.loads(tc.function.arguments))
            out.append({"id": tc.id, "success": True, "result": value})
        return out


def execute(tool_calls: list[Any], run_tool: Any, interrupted: Any) -> list[Any]:  # a thread executor
    return [run_tool(tc) for tc in tool_calls]


def gate(tool_calls: list[Any]) -> bool:
    return False


class Planner:
    def __call__(self, tool_calls: list[Any]) -> list[list[Any]]:
        return [[tc] for tc in tool_calls]


def test_each_adapter_names_the_function_by_module_and_qualified_name() -> None:
    assert from_asyncio(Buggy.execute).name == f"{HERE}.Buggy.execute"
    assert from_asyncio(Fixed.execute).name == f"{HERE}.Fixed.execute"
    assert from_threads(execute).name == f"{HERE}.execute"
    assert from_gate(gate).name == f"{HERE}.gate"
    assert from_plan(Planner()).name == f"{HERE}.Planner"  # a callable instance: its class
    assert from_plan(functools.partial(gate)).name == f"{HERE}.gate"  # a partial: the function it calls
    assert origin_name(object(), "planner") == "object"  # a built-in type: no `builtins.` prefix


def test_an_explicit_name_wins() -> None:
    assert from_asyncio(Buggy.execute, name="acme").name == "acme"
    assert from_threads(execute, name="pool").name == "pool"
    assert from_gate(gate, name="g").name == "g"
    assert from_plan(Planner(), name="p").name == "p"


def test_the_buggy_and_the_fixed_executor_differ_in_the_trace_the_header_and_the_finding() -> None:
    scenario = find_scenario("config-clobber")
    buggy, fixed = run(scenario, from_asyncio(Buggy.execute), seed=3), run(scenario, from_asyncio(Fixed.execute), 3)
    assert buggy.trace[0]["scheduler"] == f"{HERE}.Buggy.execute"
    assert fixed.trace[0]["scheduler"] == f"{HERE}.Fixed.execute"
    console = Console(record=True, width=200, color_system=None)
    render_run(buggy, console, version=__version__)
    assert f"{HERE}.Buggy.execute" in console.export_text()
    found = explore(scenario, from_asyncio(Buggy.execute), "random", runs=20, seed=1, shrink=False)
    assert found.scheduler == f"{HERE}.Buggy.execute"
    assert found.found is not None and found.found.label == "lost-update"
