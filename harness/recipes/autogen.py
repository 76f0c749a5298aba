"""AutoGen 0.7 (autogen-agentchat): a turn's tool calls run by `AssistantAgent`, under its own replay model.

AutoGen's test model (`ReplayChatCompletionClient`, from autogen-ext) answers the agent's model call
with the batch as `FunctionCall`s; each harness tool is an AutoGen `BaseTool` (any JSON object as
arguments) whose `run` awaits the simulated call, in the agent's default workbench. The agent alone
decides how the calls run (`asyncio.gather` over all of them, in a task of its own), what a failing
tool gives the model (an error result; its siblings run on) and what a value becomes: `str(value)`,
the text the model reads, which the glue reports as it is, in the agent's order. `scheduler` is
interrupted as Ctrl-C interrupts `asyncio.run` (the run's task is cancelled); `with_token` cancels
the run's `CancellationToken` instead, AutoGen's own way to stop a run. A tool the scenario declares
`sync` is a plain function in AutoGen's own `FunctionTool`, which runs it in the loop's executor.
"""

from __future__ import annotations

from collections.abc import Sequence
from inspect import Parameter, Signature
from typing import Any

from harness.bridges import from_asyncio
from harness.bridges.asyncio import Toolbox
from harness.recipes import json_object, runtime_missing

try:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.messages import ToolCallExecutionEvent
    from autogen_core import CancellationToken, FunctionCall
    from autogen_core.models import CreateResult, ModelInfo, RequestUsage
    from autogen_core.tools import BaseTool, FunctionTool
    from autogen_ext.models.replay import ReplayChatCompletionClient
    from pydantic import BaseModel, ConfigDict
except ImportError as error:
    raise runtime_missing(__name__, error, "autogen-agentchat>=0.7.5", "autogen-ext>=0.7.5") from error

MODEL = ModelInfo(vision=False, function_calling=True, json_output=False, family="unknown", structured_output=False)


class Arguments(BaseModel):
    """Any JSON object: the call's arguments as the model wrote them."""

    model_config = ConfigDict(extra="allow")


class HarnessTool(BaseTool[Arguments, BaseModel]):
    """One harness tool as AutoGen's own `BaseTool`."""

    def __init__(self, name: str, tools: Toolbox) -> None:
        super().__init__(Arguments, BaseModel, name, f"harness tool {name}")
        self.tools = tools

    async def run(self, args: Arguments, cancellation_token: CancellationToken) -> Any:
        return await self.tools[self.name](**args.model_dump())


def sync_tool(name: str, tools: Toolbox, tool_calls: Sequence[Any]) -> FunctionTool:
    """A sync tool as a plain function for AutoGen's own `FunctionTool`, which decides where it runs."""

    def call(**arguments: Any) -> Any:  # a parameter per argument the batch gives the tool; None: not given
        return tools[name](**{key: value for key, value in arguments.items() if value is not None})

    given = sorted({a for tc in tool_calls if tc.function.name == name for a in json_object(tc.function.arguments)})
    call.__signature__ = Signature([Parameter(a, Parameter.KEYWORD_ONLY, default=None) for a in given])  # type: ignore
    call.__annotations__ = dict.fromkeys([*given, "return"], Any)
    return FunctionTool(call, f"harness tool {name}", name=name)


TOKENS: list[CancellationToken] = []  # the open runs' tokens (agents of one run share its loop)


async def execute(tool_calls: Sequence[Any], tools: Toolbox) -> list[dict[str, Any]]:
    """One agent run: the replayed model asks for the batch, the agent runs it."""
    calls = [FunctionCall(id=tc.id, name=tc.function.name, arguments=tc.function.arguments) for tc in tool_calls]
    turn = CreateResult(finish_reason="function_calls", content=calls, usage=RequestUsage(0, 0), cached=False)
    agent = AssistantAgent("harness", model_client=ReplayChatCompletionClient([turn], model_info=MODEL),
                           tools=[sync_tool(n, tools, tool_calls) if tools.is_sync(n) else HarnessTool(n, tools)
                                  for n in tools])
    token = CancellationToken()
    TOKENS.append(token)
    try:
        result = await agent.run(task="go", cancellation_token=token)
    finally:
        TOKENS.remove(token)
    done = [r for message in result.messages if isinstance(message, ToolCallExecutionEvent) for r in message.content]
    return [{"call_id": r.call_id, "content": r.content, "is_error": r.is_error} for r in done]


def cancel_tokens() -> None:
    """At the user interrupt: cancel every open run's token, as an app's stop button does."""
    for token in TOKENS:
        token.cancel()


scheduler = from_asyncio(execute)
with_token = from_asyncio(execute, interrupt=cancel_tokens)
