"""Reading Anthropic Messages API transcripts.

Owns the Anthropic dialect: `{"messages": [...]}` (a request, `system` and all), a bare list of
messages, or one assistant message (a response). The `tool_use` blocks of an assistant message's
`content` are one turn, in block order; `tool_result` blocks in user messages hold the results, and
`is_error: true` marks a failed one. `tool_use.input` is an object the API already parsed, so the
arguments are its `json.dumps` (non-ASCII kept): the model's original bytes are not in the transcript.
It never builds a scenario.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

from harness.transcripts.parsed import MISSING, Call, Output, Parsed, Reader, Turn, content_text

_EXPECTED_TOP = ("a Messages API transcript ({\"messages\": [...]}, a list of messages or one assistant "
                 "message)")


def parse(data: Any, file: str) -> Parsed:
    """The turns and tool outputs of an Anthropic transcript."""
    r = Reader(file)
    if isinstance(data, Mapping):
        if "messages" in data:
            return _messages(r, r.array(data["messages"], "messages", "a list of messages"), "messages")
        if data.get("role") == "assistant" and "content" in data:
            return _messages(r, [data], "", single=True)
    elif isinstance(data, list):
        return _messages(r, data, "")
    raise r.fail("(top level)", _EXPECTED_TOP, data)


def _messages(r: Reader, messages: list[Any], prefix: str, *, single: bool = False) -> Parsed:
    turns: list[Turn] = []
    outputs: list[Output] = []
    skipped: Counter[str] = Counter()
    assistant_turns = 0
    for i, value in enumerate(messages):
        at = "" if single else f"{prefix}[{i}]"
        dot = f"{at}." if at else ""
        message = r.obj(value, at or "(top level)", "a message object with role and content")
        role = message.get("role")
        if role not in ("user", "assistant"):
            hint = " (roles system and tool are OpenAI's: import it with `harness import openai`)" \
                if role in ("system", "tool", "developer") else ""
            raise r.fail(f"{dot}role", f"\"user\" or \"assistant\"{hint}", message.get("role", MISSING))
        content = message.get("content")
        if content is None or isinstance(content, str):
            assistant_turns += role == "assistant"
            continue
        blocks = r.array(content, f"{dot}content", "a string or a list of content blocks")
        if role == "assistant":
            assistant_turns += 1
            calls: list[Call] = []
            for j, block_value in enumerate(blocks):
                where = f"{dot}content[{j}]"
                block = _block(r, block_value, where)
                if block["type"] == "tool_use":
                    calls.append(_tool_use(r, block, where))
                elif block["type"] in ("server_tool_use", "mcp_tool_use"):
                    skipped[block["type"]] += 1
            if calls:
                turns.append(Turn(f"turn-{assistant_turns}", tuple(calls), i))
        else:
            for j, block_value in enumerate(blocks):
                where = f"{dot}content[{j}]"
                block = _block(r, block_value, where)
                if block["type"] == "tool_result":
                    outputs.append(_tool_result(r, block, where, i))
    warnings = []
    if skipped:
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(skipped.items()))
        warnings.append(f"server-side tool blocks skipped (the runtime does not schedule them): {kinds}")
    return Parsed(tuple(turns), tuple(outputs), "Anthropic Messages API", tuple(warnings))


def _block(r: Reader, value: Any, at: str) -> Mapping[str, Any]:
    block = r.obj(value, at, "a content block (an object with a type)")
    if not isinstance(block.get("type"), str):
        raise r.fail(f"{at}.type", "a block type (text, tool_use, tool_result, ...)",
                     block.get("type", MISSING))
    return block


def _tool_use(r: Reader, block: Mapping[str, Any], at: str) -> Call:
    call_id = r.required_string(block, "id", at, "the tool_use id")
    name = r.required_string(block, "name", at, "the tool name")
    if "input" not in block:
        raise r.fail(f"{at}.input", "the arguments object", MISSING)
    arguments = block["input"]
    if not isinstance(arguments, Mapping):
        raise r.fail(f"{at}.input", "the arguments as an object (Anthropic sends tool_use input parsed)", arguments)
    return Call(call_id, name, json.dumps(arguments, ensure_ascii=False), at)


def _tool_result(r: Reader, block: Mapping[str, Any], at: str, position: int) -> Output:
    call_id = r.required_string(block, "tool_use_id", at, "the id of the tool_use this result answers")
    is_error = block.get("is_error", False)
    if not isinstance(is_error, bool):
        raise r.fail(f"{at}.is_error", "true or false", is_error)
    return Output(call_id, content_text(block.get("content")), is_error, at, position)
