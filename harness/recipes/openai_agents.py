"""openai-agents 0.24: the function tools of one model turn, run by the SDK's own `Runner`.

The SDK's test model (`agents.testing.ScriptedModel`) answers the first turn with the batch's calls
as `function_call` items and the second with a message. Each harness tool is an SDK `FunctionTool`
whose `on_invoke_tool` awaits the simulated call and, on failure, answers as `@function_tool` does by
default. The SDK alone decides how the turn's calls run, times them out (`timeout_seconds`, read
from the scenario's `[execution] timeout_ms`) and orders its output items; the glue reads back which
calls failed or timed out, since the SDK gives both to the model as text. A tool the scenario
declares `sync` is a plain function made a tool by `function_tool`, as a user writes one; the SDK
decides where it runs (since 0.8 with `asyncio.to_thread`; before, on the event loop).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from harness.bridges import from_asyncio
from harness.bridges.asyncio import Toolbox
from harness.recipes import runtime_missing

try:
    from agents import Agent, FunctionTool, RunConfig, Runner, default_tool_error_function, function_tool
    from agents.items import ToolCallOutputItem
    from agents.testing import ScriptedModel, assistant_message, function_call
    from agents.tool_context import ToolContext
except ImportError as error:
    raise runtime_missing(__name__, error, "openai-agents>=0.24") from error


def sdk_tool(name: str, tools: Toolbox, errors: dict[str, Exception]) -> FunctionTool:
    """One harness tool as the SDK's own `FunctionTool` (any JSON object as arguments); a sync tool as the
    plain function it is, made a tool by `function_tool`, so the SDK decides where it runs."""

    def failed(ctx: Any, error: Exception) -> Any:
        errors[ctx.tool_call_id] = error
        return default_tool_error_function(ctx, error)

    async def invoke(ctx: ToolContext[Any], arguments: str) -> Any:
        try:
            return await tools[name](**json.loads(arguments))
        except Exception as error:
            return failed(ctx, error)

    def call(ctx: ToolContext[Any]) -> Any:
        return tools[name](**json.loads(ctx.tool_arguments))

    def timed_out(ctx: Any, error: Exception) -> str:
        errors[ctx.tool_call_id] = TimeoutError(str(error))
        return str(error)

    if tools.is_sync(name):
        return function_tool(call, name_override=name, description_override=f"harness tool {name}",
                             strict_mode=False, failure_error_function=failed, timeout=tools.limits.timeout_s,
                             timeout_error_function=timed_out)
    return FunctionTool(name=name, description=f"harness tool {name}", on_invoke_tool=invoke,
                        params_json_schema={"type": "object", "additionalProperties": True},
                        strict_json_schema=False, timeout_seconds=tools.limits.timeout_s,
                        timeout_error_function=timed_out)


async def execute(tool_calls: Sequence[Any], tools: Toolbox) -> list[dict[str, Any]]:
    """One SDK turn: the scripted model asks for the batch, the `Runner` runs it."""
    errors: dict[str, Exception] = {}
    model = ScriptedModel([
        [function_call(tc.function.name, tc.function.arguments, call_id=tc.id) for tc in tool_calls],
        [assistant_message("done")],
    ])
    agent = Agent(name="harness", model=model, tools=[sdk_tool(name, tools, errors) for name in tools])
    result = await Runner.run(agent, "go", run_config=RunConfig(tracing_disabled=True))
    outputs = [item for item in result.new_items if isinstance(item, ToolCallOutputItem)]
    return [{"call_id": item.raw_item["call_id"], "output": item.output, "error": errors.get(item.raw_item["call_id"])}
            for item in outputs]


scheduler = from_asyncio(execute)
