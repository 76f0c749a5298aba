"""One assistant turn of tool calls, with their results, written as each dialect writes it: OpenAI
Chat Completions, OpenAI Responses API and Anthropic Messages. The tests build the same turn in
every shape and expect the same scenario from each."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Done:
    """A call the model made and what production answered (`error`: the result is marked failed,
    which only Anthropic can say; OpenAI shows the text as an ordinary result)."""

    id: str
    tool: str
    args: dict[str, Any]
    answer: str | None = None  # None: the transcript ends before the result
    error: bool = False


SHAPES = ("chat", "responses", "anthropic")


def kind(shape: str) -> str:
    return "anthropic" if shape == "anthropic" else "openai"


def transcript(shape: str, calls: list[Done], prompt: str = "Please do it.") -> Any:
    """The JSON a runtime would log for one turn with `calls` (in model order) and their results."""
    answered = [c for c in calls if c.answer is not None]
    if shape == "chat":
        return {"messages": [
            {"role": "user", "content": prompt},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": c.id, "type": "function", "function": {"name": c.tool, "arguments": json.dumps(c.args)}}
                for c in calls]},
            *({"role": "tool", "tool_call_id": c.id, "content": c.answer} for c in answered),
            {"role": "assistant", "content": "Done."}]}
    if shape == "responses":
        return [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]},
            *({"type": "function_call", "call_id": c.id, "name": c.tool, "arguments": json.dumps(c.args)}
              for c in calls),
            *({"type": "function_call_output", "call_id": c.id, "output": c.answer} for c in answered),
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}]
    if shape == "anthropic":
        return {"messages": [
            {"role": "user", "content": prompt},
            {"role": "assistant", "content": [{"type": "text", "text": "On it."}, *(
                {"type": "tool_use", "id": c.id, "name": c.tool, "input": c.args} for c in calls)]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": c.id, "content": c.answer, "is_error": c.error}
                for c in answered]},
            {"role": "assistant", "content": "Done."}]}
    raise ValueError(shape)
