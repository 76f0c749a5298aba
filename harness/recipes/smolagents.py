"""smolagents 1.26: a turn's tool calls run by `ToolCallingAgent`, threads and all, via `from_threads`.

A fake model (as smolagents' own tests write one: a `Model` whose `generate` returns a
`ChatMessage` with `tool_calls`) asks for the batch in its first step and calls `final_answer` in
the second. Each harness tool is a smolagents `Tool` whose `forward` runs the simulated call,
blocking its thread. The agent alone decides how the calls run: its `process_tool_calls` submits
them all to a `ThreadPoolExecutor` and yields each `ToolOutput` as its future completes
(`as_completed`); the glue reports them in that order. A failing tool fails the whole step: the
agent records the step's error and yields no output for the calls that had not completed yet.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from harness.bridges import from_threads
from harness.bridges.threads import ThreadTools
from harness.recipes import runtime_missing

try:
    from smolagents import ChatMessage, Model, Tool, ToolCallingAgent
    from smolagents.agents import ToolOutput
    from smolagents.models import ChatMessageToolCall, ChatMessageToolCallFunction
    from smolagents.monitoring import LogLevel
except ImportError as error:
    raise runtime_missing(__name__, error, "smolagents>=1.26") from error


class HarnessTool(Tool):
    """One harness tool as a smolagents `Tool`: every argument the batch uses, of any type."""

    output_type = "any"
    skip_forward_signature_validation = True

    def __init__(self, name: str, arguments: set[str], run: Callable[..., Any]) -> None:
        self.name, self.description, self._run = name, f"harness tool {name}", run
        self.inputs = {a: {"type": "any", "description": a, "nullable": True} for a in sorted(arguments)}
        super().__init__()

    def forward(self, **arguments: Any) -> Any:
        return self._run(**arguments)


class TurnModel(Model):
    """Step 1: the batch's calls; step 2: `final_answer`."""

    def __init__(self, tool_calls: Sequence[Any]) -> None:
        super().__init__(model_id="harness-turn")
        self.tool_calls, self.steps = tool_calls, 0

    def generate(self, messages: list[Any], stop_sequences: Any = None, response_format: Any = None,
                 tools_to_call_from: Any = None, **kwargs: Any) -> ChatMessage:
        self.steps += 1
        calls = [ChatMessageToolCall(id="final", type="function", function=ChatMessageToolCallFunction(
            name="final_answer", arguments={"answer": "done"}))] if self.steps > 1 else [
            ChatMessageToolCall(id=tc.id, type="function", function=ChatMessageToolCallFunction(
                name=tc.function.name, arguments=json.loads(tc.function.arguments))) for tc in self.tool_calls]
        return ChatMessage(role="assistant", content="", tool_calls=calls)


def execute(tool_calls: Sequence[Any], tools: ThreadTools) -> list[dict[str, Any]]:
    """One agent run; the `ToolOutput`s of the batch's step, in the order the agent yielded them."""
    arguments: dict[str, set[str]] = {}
    for tc in tool_calls:
        arguments.setdefault(tc.function.name, set()).update(json.loads(tc.function.arguments))
    agent = ToolCallingAgent(tools=[HarnessTool(name, args, tools[name]) for name, args in arguments.items()],
                             model=TurnModel(tool_calls), max_steps=2, verbosity_level=LogLevel.OFF)
    outputs = [e for e in agent.run("go", stream=True) if isinstance(e, ToolOutput) and e.id != "final"]
    return [{"tool_call_id": o.id, "content": o.output} for o in outputs]


scheduler = from_threads(execute)
