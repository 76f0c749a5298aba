"""pydantic-ai 2.68 through `from_asyncio`: by default a turn's calls run all at once (a lost update
on `config-clobber`); with `sequential=True` on the writing tools every writer runs alone and the
same batches pass, in the serial makespan. Results come back in model order. Sync tools run on the
recipe's thread executor; on pydantic-ai's default anyio worker threads the run is a hang."""

from __future__ import annotations

import pytest

pytest.importorskip("pydantic_ai.models.function")

from harness import find_scenario, get_scheduler, run
from harness.oracles import check
from harness.recipes.pydantic_ai import anyio_worker, scheduler, writers_sequential
from harness.report.hang import hang_lines
from harness.run import RunStatus
from harness.testing import check_scheduler
from tests.runtimes.findings import OFFLOADED, reported, starts, sync_tools_run, tried


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_by_default_the_turn_runs_in_parallel_and_loses_an_update(seed: int) -> None:
    result, found = tried("config-clobber", scheduler, seed)
    builtin, expected = tried("config-clobber", get_scheduler("parallel"), seed)
    assert set(found) == {"lost-update"} and found["lost-update"] == expected["lost-update"]
    assert result.makespan_ms == builtin.makespan_ms


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sequential_writers_pass_in_the_serial_makespan(seed: int) -> None:
    result, found = tried("config-clobber", writers_sequential, seed)
    serial, _ = tried("config-clobber", get_scheduler("serial"), seed)
    assert found == {} and result.makespan_ms == serial.makespan_ms == {1: 1178, 2: 1668, 3: 1033}[seed]
    first, second = result.results
    assert second.start_ms == first.end_ms  # the second patch starts when the first ends


def test_sequential_writers_pass_check_scheduler_on_the_write_races() -> None:
    check_scheduler(writers_sequential, scenarios=["config-clobber", "edit-then-test", "v4a-multi-file"],
                    profile="quick", generated=False)


def test_readers_still_run_together_beside_a_sequential_writer() -> None:
    # v4a-multi-file: a V4A patch of two files, then two reads. The patch runs alone (0-300 ms), the
    # two reads together after it (300-400 ms): serial would take 500.
    result, found = tried("v4a-multi-file", writers_sequential)
    assert found == {} and result.makespan_ms == 400
    assert [(r.call_id, r.start_ms, r.end_ms) for r in result.results] == [
        ("patch-both", 0, 300), ("read-settings", 300, 400), ("read-readme", 300, 400)]


def test_results_come_back_in_model_order_in_the_parallel_makespan() -> None:
    result, found = tried("incident-triage", scheduler)
    assert found == {} and result.makespan_ms == 4000
    assert reported(result) == [("call-logs", "ok"), ("call-metrics", "ok"), ("call-deploys", "ok")]


def test_sync_tool_functions_on_its_thread_executor_run_on_bridge_threads() -> None:
    # pydantic-ai runs a sync tool function on a thread; given a pool (`Agent.using_thread_executor`)
    # it does so through `loop.run_in_executor`, which `from_asyncio` hands to bridge threads: the
    # sync function calls the simulated tool and blocks its thread until the call ends.
    import concurrent.futures
    from collections.abc import Sequence
    from typing import Any

    from pydantic_ai import Agent, Tool
    from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from harness.bridges import from_asyncio
    from harness.bridges.asyncio import Toolbox

    async def execute(tool_calls: Sequence[Any], tools: Toolbox) -> list[dict[str, Any]]:
        async def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            if len(messages) == 1:
                return ModelResponse(parts=[ToolCallPart(tc.function.name, tc.function.arguments, tc.id)
                                            for tc in tool_calls])
            return ModelResponse(parts=[TextPart("done")])

        def sync_tool(name: str) -> Tool[None]:
            def invoke(**arguments: Any) -> Any:
                return tools[name](**arguments)  # on a bridge thread: the value, once the call ends

            return Tool.from_schema(invoke, name=name, description=f"harness tool {name}",
                                    json_schema={"type": "object", "additionalProperties": True})

        agent = Agent(FunctionModel(model), tools=[sync_tool(name) for name in tools])
        with Agent.using_thread_executor(concurrent.futures.ThreadPoolExecutor(max_workers=4)):
            result = await agent.run("go")
        return [{"tool_call_id": part.tool_call_id, "content": part.content} for message in result.all_messages()
                if isinstance(message, ModelRequest) for part in message.parts if isinstance(part, ToolReturnPart)]

    triage, found = tried("incident-triage", from_asyncio(execute), 1)
    assert found == {} and triage.makespan_ms == 4000  # three sync queries on threads, at once
    _, found = tried("config-clobber", from_asyncio(execute), 3)
    assert set(found) == {"lost-update"}


def test_sync_tools_go_to_the_recipes_thread_executor() -> None:
    # The glue gives pydantic-ai the two sync tools as plain functions and runs the agent inside
    # `Agent.using_thread_executor`: pydantic-ai hands them to `loop.run_in_executor`, a bridge thread each.
    result, found = tried("sync-tool-on-loop", scheduler)
    assert found == {} and sync_tools_run(result) == OFFLOADED
    assert reported(result) == [("call-logs", "ok"), ("call-metrics", "ok"), ("call-deploys", "ok")]


def test_without_a_thread_executor_sync_tools_go_to_anyio_worker_threads_and_the_run_hangs() -> None:
    # pydantic-ai's default: `anyio.to_thread.run_sync`, a real thread outside the virtual clock. The
    # async query ends at 2000 ms; the loop never hears back from the worker threads.
    result = run(find_scenario("sync-tool-on-loop"), anyio_worker, seed=1)
    assert result.status is RunStatus.HANG and result.makespan_ms == 2000
    assert not result.results and starts(result) == {"call-deploys": 0}  # neither sync tool's call began
    lines = "\n".join(hang_lines(result))
    assert "thread 'AnyIO worker thread' (unbridged): a real thread started from the event loop" in lines
    assert "pydantic-ai: wrap the run in `using_thread_executor`" in lines
    assert {v.label for v in check(result) if not v.ok} == {"hang"}
