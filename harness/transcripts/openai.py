"""Reading OpenAI transcripts: Chat Completions messages and Responses API items.

Owns the two OpenAI dialects and telling them apart. Chat Completions: `{"messages": [...]}`, a bare
list of messages, or a chat completion (`choices[0].message`); an assistant message's `tool_calls`
(`function` and `custom` calls) are one turn; `role: "tool"` messages hold the results. Responses
API: a list of items, `{"input": [...]}`, `{"output": [...]}` or both (input first); a run of
`function_call` / `custom_tool_call` items not separated by a `message` or a call output is one
turn; `function_call_output` items hold the results. Arguments are kept as the raw string the model
sent. It never interprets arguments and never builds a scenario.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from harness.transcripts.parsed import MISSING, Call, Output, Parsed, Reader, Turn, content_text

_EXPECTED_TOP = ("a Chat Completions transcript ({\"messages\": [...]}, a list of messages or a chat completion "
                 "with choices) or a Responses API transcript (a list of items, {\"input\": [...]} or "
                 "{\"output\": [...]})")
_RESPONSES_TYPES = frozenset({"function_call", "function_call_output", "custom_tool_call",
                              "custom_tool_call_output", "reasoning", "message", "item_reference"})
_CALL_TYPES = frozenset({"function_call", "custom_tool_call"})
_OUTPUT_TYPES = frozenset({"function_call_output", "custom_tool_call_output"})


def parse(data: Any, file: str) -> Parsed:
    """The turns and tool outputs of an OpenAI transcript (either dialect, detected from its shape)."""
    r = Reader(file)
    if isinstance(data, Mapping):
        if "messages" in data:
            return _chat(r, r.array(data["messages"], "messages", "a list of messages"), "messages")
        if "choices" in data:
            choices = r.array(data["choices"], "choices", "a list of choices")
            if not choices:
                raise r.fail("choices", "at least one choice", choices)
            choice = r.obj(choices[0], "choices[0]", "a choice object with a message")
            if "message" not in choice:
                raise r.fail("choices[0].message", "the assistant message", MISSING)
            return _chat(r, [choice["message"]], "choices[0].message", single=True)
        if "input" in data or "output" in data:
            items: list[tuple[str, Any]] = []
            for key in ("input", "output"):
                value = data.get(key)
                if value is None or (key == "input" and isinstance(value, str)):  # a plain prompt
                    continue
                entries = r.array(value, key, "a list of Responses API items")
                items.extend((f"{key}[{i}]", item) for i, item in enumerate(entries))
            return _responses(r, items)
        raise r.fail("(top level)", _EXPECTED_TOP, data)
    if isinstance(data, list):
        if any(isinstance(item, Mapping) and _text(item.get("type")) in _RESPONSES_TYPES
               for item in data):
            return _responses(r, [(f"[{i}]", item) for i, item in enumerate(data)])
        return _chat(r, data, "")
    raise r.fail("(top level)", _EXPECTED_TOP, data)


def _chat(r: Reader, messages: list[Any], prefix: str, *, single: bool = False) -> Parsed:
    turns: list[Turn] = []
    outputs: list[Output] = []
    warnings: list[str] = []
    legacy = 0
    assistant_turns = 0
    for i, value in enumerate(messages):
        at = prefix if single else f"{prefix}[{i}]"
        message = r.obj(value, at, "a message object with a role")
        role = message.get("role")
        if not isinstance(role, str) or not role:
            raise r.fail(f"{at}.role", "a role (system, developer, user, assistant or tool)",
                         message.get("role", MISSING))
        if role == "assistant":
            assistant_turns += 1
            tool_calls = message.get("tool_calls")
            if tool_calls is None:
                legacy += message.get("function_call") is not None
                continue
            entries = r.array(tool_calls, f"{at}.tool_calls", "a list of tool calls")
            calls = tuple(_chat_call(r, entry, f"{at}.tool_calls[{j}]") for j, entry in enumerate(entries))
            if calls:
                turns.append(Turn(f"turn-{assistant_turns}", calls, i))
        elif role == "tool":
            call_id = r.required_string(message, "tool_call_id", at, "the id of the call this result answers")
            outputs.append(Output(call_id, content_text(message.get("content")), False, at, i))
        elif role == "function":
            legacy += 1
    if legacy:
        warnings.append(f"{legacy} legacy `function_call` message{'s' if legacy != 1 else ''} (no call ids) "
                        "skipped; only `tool_calls` are imported")
    return Parsed(tuple(turns), tuple(outputs), "OpenAI Chat Completions", tuple(warnings))


def _chat_call(r: Reader, value: Any, at: str) -> Call:
    call = r.obj(value, at, "a tool call object with id, type and function")
    call_id = r.required_string(call, "id", at, "the call id")
    kind = call.get("type", "function")
    if kind == "function":
        if "function" not in call:
            raise r.fail(f"{at}.function", "an object with name and arguments", MISSING)
        function = r.obj(call["function"], f"{at}.function", "an object with name and arguments")
        name = r.required_string(function, "name", f"{at}.function", "the tool name")
        return Call(call_id, name, _raw(r, function, "arguments", f"{at}.function"), at)
    if kind == "custom":
        if "custom" not in call:
            raise r.fail(f"{at}.custom", "an object with name and input", MISSING)
        custom = r.obj(call["custom"], f"{at}.custom", "an object with name and input")
        name = r.required_string(custom, "name", f"{at}.custom", "the tool name")
        return Call(call_id, name, _raw(r, custom, "input", f"{at}.custom"), at)
    raise r.fail(f"{at}.type", "\"function\" or \"custom\"", kind)


def _raw(r: Reader, parent: Mapping[str, Any], key: str, at: str) -> str:
    """The model's raw argument text: any string, even empty or malformed, kept byte for byte."""
    if key not in parent:
        raise r.fail(f"{at}.{key}", "the raw string the model emitted", MISSING)
    value = parent[key]
    if not isinstance(value, str):
        raise r.fail(f"{at}.{key}", "the raw string the model emitted (OpenAI sends arguments as a JSON string)",
                     value)
    return value


def _responses(r: Reader, items: list[tuple[str, Any]]) -> Parsed:
    turns: list[Turn] = []
    outputs: list[Output] = []
    skipped: Counter[str] = Counter()
    turn_no = 0
    in_model_turn = False
    batches_in_turn = 0
    current: list[Call] = []
    current_label = ""
    current_position = 0

    def close() -> None:
        nonlocal current
        if current:
            turns.append(Turn(current_label, tuple(current), current_position))
        current = []

    def model_output() -> None:
        nonlocal turn_no, in_model_turn, batches_in_turn
        if not in_model_turn:
            turn_no, in_model_turn, batches_in_turn = turn_no + 1, True, 0

    for position, (at, value) in enumerate(items):
        item = r.obj(value, at, "a Responses API item (an object with a type)")
        kind = _text(item.get("type", "message" if "role" in item else None))
        if not isinstance(kind, str) or not kind:
            raise r.fail(f"{at}.type", "an item type (message, function_call, function_call_output, ...)",
                         item.get("type", MISSING))
        if kind in _CALL_TYPES:
            model_output()
            if not current:
                batches_in_turn += 1
                current_label = f"turn-{turn_no}" + (f".{batches_in_turn}" if batches_in_turn > 1 else "")
                current_position = position
            call_id = r.required_string(item, "call_id", at, "the call id")
            name = r.required_string(item, "name", at, "the tool name")
            current.append(Call(call_id, name, _raw(r, item, "arguments" if kind == "function_call" else "input", at),
                                at))
        elif kind in _OUTPUT_TYPES:
            close()
            in_model_turn = False
            call_id = r.required_string(item, "call_id", at, "the id of the call this output answers")
            if "output" not in item:
                raise r.fail(f"{at}.output", "the output the model was shown", MISSING)
            outputs.append(Output(call_id, content_text(item["output"]), False, at, position))
        elif kind == "message":
            close()
            if item.get("role") == "assistant":
                model_output()
            else:
                in_model_turn = False
        elif kind == "reasoning":
            model_output()
        elif kind.endswith(("_call", "_call_output")):
            skipped[kind] += 1  # hosted tools (web_search_call, computer_call, ...): the runtime does not run them
    close()
    warnings = []
    if skipped:
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(skipped.items()))
        warnings.append(f"hosted tool items skipped (the runtime does not schedule them): {kinds}")
    return Parsed(tuple(turns), tuple(outputs), "OpenAI Responses API", tuple(warnings))


def _text(value: object) -> str | None:
    """A field that should name a kind: its text, or None when it is not a string (a list or a
    table there is malformed data, and must not reach a set lookup)."""
    return value if isinstance(value, str) else None
