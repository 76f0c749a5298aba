"""LangGraph 1.2: a turn's tool calls run by the prebuilt `ToolNode`, as a graph would run it.

The model's turn is an `AIMessage` carrying the batch as `tool_calls` (LangGraph's own tests drive
`ToolNode` this way); each harness tool is a LangChain `StructuredTool` whose coroutine awaits the
simulated call. `ToolNode` alone decides how the calls run (`asyncio.gather` over all of them),
what a failing tool does (its default `handle_tool_errors` re-raises anything but a bad-arguments
error) and the order of its `ToolMessage`s. A tool the scenario declares `sync` is a plain function
(`func=`), which LangChain runs in the loop's executor under `ainvoke`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from harness.bridges import from_asyncio
from harness.bridges.asyncio import Toolbox
from harness.recipes import runtime_missing

try:
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.messages.tool import default_tool_parser
    from langchain_core.tools import StructuredTool
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode
except ImportError as error:
    raise runtime_missing(__name__, error, "langgraph>=1.2") from error


def lc_tool(name: str, tools: Toolbox) -> StructuredTool:
    """One harness tool as LangChain's own `StructuredTool` (any JSON object as arguments); a sync tool as
    the plain function it is (`func=`), so LangChain decides where it runs."""

    async def invoke(**arguments: Any) -> Any:
        return await tools[name](**arguments)

    def call(**arguments: Any) -> Any:
        return tools[name](**arguments)

    sync = tools.is_sync(name)
    return StructuredTool.from_function(func=call if sync else None, coroutine=None if sync else invoke, name=name,
                                        description=f"harness tool {name}",
                                        args_schema={"type": "object", "additionalProperties": True})


async def execute(tool_calls: Sequence[Any], tools: Toolbox) -> list[dict[str, Any]]:
    """One `ToolNode` step over the model's message."""
    # LangChain's own parser of OpenAI tool calls: arguments that are not JSON become invalid_tool_calls.
    parsed, invalid = default_tool_parser([
        {"id": tc.id, "function": {"name": tc.function.name, "arguments": tc.function.arguments}} for tc in tool_calls])
    message = AIMessage(content="", tool_calls=parsed, invalid_tool_calls=invalid)
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode([lc_tool(name, tools) for name in tools]))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    output = await graph.compile().ainvoke({"messages": [message]})
    messages = [m for m in output["messages"] if isinstance(m, ToolMessage)]
    return [{"tool_call_id": m.tool_call_id, "is_error": m.status == "error",  # content: the value as JSON text
             "content": json.loads(m.content) if m.status == "success" else m.content} for m in messages]


scheduler = from_asyncio(execute)
