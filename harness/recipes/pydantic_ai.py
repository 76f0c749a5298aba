"""pydantic-ai 2.68: a turn's tool calls run by the agent's own graph, under its own test model.

`FunctionModel` (pydantic-ai's test model) answers the first request with the batch as
`ToolCallPart`s and the next with text; each harness tool is a pydantic-ai `Tool` (built with
`Tool.from_schema`, any JSON object as arguments) whose function awaits the simulated call.
pydantic-ai alone decides how the calls run: all at once by default, and a tool marked
`sequential=True` as a barrier that runs alone. A failing tool raises, as a plain tool function
does; the glue reads the `ToolReturnPart`s back in the order the agent put them in its messages.
A tool the scenario declares `sync` is a plain function, which pydantic-ai runs on a thread: the
recipe's `POOL`, given with `Agent.using_thread_executor` (without it, anyio's worker threads).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from typing import Any

from harness.bridges import from_asyncio
from harness.bridges.asyncio import FromAsyncio, Toolbox
from harness.recipes import runtime_missing

try:
    from pydantic_ai import Agent, Tool
    from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
except ImportError as error:
    raise runtime_missing(__name__, error, "pydantic-ai-slim>=2.68") from error

POOL = ThreadPoolExecutor(thread_name_prefix="harness-tools")  # as a server gives pydantic-ai a bounded pool


def pai_tool(name: str, tools: Toolbox, sequential: bool) -> Tool[None]:
    """One harness tool as pydantic-ai's own `Tool`; a sync tool as the plain function it is, so pydantic-ai
    decides where it runs."""

    async def invoke(**arguments: Any) -> Any:
        return await tools[name](**arguments)

    def call(**arguments: Any) -> Any:
        return tools[name](**arguments)

    return Tool.from_schema(call if tools.is_sync(name) else invoke, name=name, description=f"harness tool {name}",
                            sequential=sequential, json_schema={"type": "object", "additionalProperties": True})


def pydantic_ai(sequential: Collection[str] = (), anyio_threads: bool = False) -> FromAsyncio:
    """A scheduler running each batch as one agent turn; tools named in `sequential` get `sequential=True`.
    Sync tools go to `POOL` (`Agent.using_thread_executor`), unless `anyio_threads`: then to pydantic-ai's
    default, anyio's worker threads, real threads outside the virtual clock (the run hangs)."""

    async def execute(tool_calls: Sequence[Any], tools: Toolbox) -> list[dict[str, Any]]:
        async def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            if len(messages) == 1:  # the user's prompt: this turn's calls, as the model wrote them
                return ModelResponse(parts=[ToolCallPart(tc.function.name, tc.function.arguments, tc.id)
                                            for tc in tool_calls])
            return ModelResponse(parts=[TextPart("done")])

        agent = Agent(FunctionModel(model), tools=[pai_tool(name, tools, name in sequential) for name in tools])
        with nullcontext() if anyio_threads else Agent.using_thread_executor(POOL):
            result = await agent.run("go")
        returns = [part for message in result.all_messages() if isinstance(message, ModelRequest)
                   for part in message.parts if isinstance(part, ToolReturnPart)]
        return [{"tool_call_id": part.tool_call_id, "content": part.content} for part in returns]

    return from_asyncio(execute)


scheduler = pydantic_ai()
anyio_worker = pydantic_ai(anyio_threads=True)
writers_sequential = pydantic_ai(sequential={"patch", "write_file"})
