"""`harness import openai`: Chat Completions and Responses API transcripts become scenarios."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.transcripts import import_file, import_transcript, load_map

DATA = Path(__file__).parent / "data"


def _chat_messages() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = json.loads((DATA / "openai_chat.json").read_text())["messages"]
    return messages


def _calls(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [call for batch in data["batches"] for call in batch["calls"]]


def test_chat_one_batch_per_assistant_turn_with_ids_and_model_order_kept() -> None:
    imported = import_file("openai", DATA / "openai_chat.json")
    data = imported.data
    assert data["name"] == "openai_chat"
    # The third assistant message has `tool_calls: []` and the fifth none: both are skipped, and
    # labels count assistant messages so a batch can be found in the transcript.
    assert [b["label"] for b in data["batches"]] == ["turn-1", "turn-2", "turn-4"]
    assert [[c["id"] for c in b["calls"]] for b in data["batches"]] == [
        ["call_Lq3YhM2nX0aTg7c1", "call_8VvB5kPq1sRz0dEe", "call_Zt4uKc9wJm2yHa6F"],
        ["call_Qe7rNb3vXs5LpW2o", "call_Hc1mTz8aYd4GkU9j"],
        ["call_Hc1mTz8aYd4GkU9k"],
    ]
    assert [c["name"] for c in _calls(data)] == ["query_service_logs", "query_service_metrics",
                                                 "query_deployment_history", "create_ticket", "send_message",
                                                 "send_message"]
    assert "tools" not in data  # every tool is in the catalogue
    assert imported.warnings == ()


def test_chat_arguments_are_the_raw_strings_byte_for_byte_malformed_included() -> None:
    sent = [tc["function"]["arguments"] for m in _chat_messages() for tc in m.get("tool_calls") or []]
    calls = _calls(import_file("openai", DATA / "openai_chat.json").data)
    assert [c["arguments"] for c in calls] == sent
    assert calls[2]["arguments"] == '{\n  "service_name": "checkout"\n}'  # whitespace kept
    assert calls[4]["arguments"].endswith('(ticket to follow)')  # the closing quote and brace never came


def test_chat_tool_results_become_the_calls_recorded_results() -> None:
    calls = {c["id"]: c for c in _calls(import_file("openai", DATA / "openai_chat.json").data)}
    # A string result stays a string, even when it is JSON text.
    assert calls["call_Lq3YhM2nX0aTg7c1"]["recorded"] == (
        '{"error_count": 236, "main_error": "Database connection pool exhausted"}')
    # A list of text parts is joined with newlines.
    assert calls["call_8VvB5kPq1sRz0dEe"]["recorded"] == "cpu 68%, memory 74%\ndatabase_pool_usage 100%"
    # OpenAI has no error flag: a result that reads like an error is still the value the model saw.
    assert calls["call_Hc1mTz8aYd4GkU9j"]["recorded"] == "Error: could not parse tool arguments as JSON"
    # Every tool is in the catalogue: results are computed from the world, the transcript's only expected.
    assert not any({"failure", "result", "recorded_error"} & set(c) for c in calls.values())


def test_chat_accepts_a_bare_list_and_a_chat_completion_response() -> None:
    messages = _chat_messages()
    from_list = import_transcript("openai", messages, name="x")
    from_object = import_transcript("openai", {"messages": messages}, name="x")
    assert from_list.data["batches"] == from_object.data["batches"]
    completion = {"id": "chatcmpl-9", "object": "chat.completion",
                  "choices": [{"index": 0, "message": messages[2], "finish_reason": "tool_calls"}]}
    batches = import_transcript("openai", completion, name="x").data["batches"]
    assert [[c["id"] for c in b["calls"]] for b in batches] == [
        ["call_Lq3YhM2nX0aTg7c1", "call_8VvB5kPq1sRz0dEe", "call_Zt4uKc9wJm2yHa6F"]]
    assert all("recorded" not in c for c in batches[0]["calls"])  # a response holds no results


def test_chat_custom_tool_call_keeps_its_free_form_input() -> None:
    messages = [
        {"role": "user", "content": "list the repo"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_c1", "type": "custom", "custom": {"name": "terminal", "input": "ls -la /repo"}}]},
        {"role": "tool", "tool_call_id": "call_c1", "content": "total 0"},
    ]
    (call,) = _calls(import_transcript("openai", messages, name="x").data)
    assert call == {"id": "call_c1", "name": "terminal", "arguments": "ls -la /repo", "recorded": "total 0"}


def test_responses_consecutive_function_calls_form_one_batch_and_outputs_split_turns() -> None:
    imported = import_file("openai", DATA / "openai_responses.json", map_path=DATA / "openai_map.toml")
    data = imported.data
    assert [b["label"] for b in data["batches"]] == ["turn-1", "turn-2"]
    assert [[c["id"] for c in b["calls"]] for b in data["batches"]] == [
        ["call_pXw1Yl0Jq7K2bR4s", "call_Rt5nM8cV3dQ9wE1a"],  # call_id, not the fc_ item id
        ["call_Kd2sLw6tPz0xNc8v", "call_Mb9fGh3jRy7uTq2e"],
    ]
    assert [c["name"] for c in _calls(data)] == ["web_search", "web_search", "web_extract", "web_extract"]
    assert imported.warnings == ("hosted tool items skipped (the runtime does not schedule them): 1 web_search_call",
                                 # `max_chars`, which the mock's web_extract does not read: kept as sent, and said
                                 "1 call sends arguments its tool does not take (kept as sent, marked "
                                 "check_arguments = false): call_Kd2sLw6tPz0xNc8v")


def test_responses_map_renames_arguments_of_json_objects_and_keeps_malformed_ones_raw() -> None:
    calls = _calls(import_file("openai", DATA / "openai_responses.json", map_path=DATA / "openai_map.toml").data)
    assert json.loads(calls[0]["arguments"]) == {"query": "httpx 0.28 release notes breaking changes"}
    assert calls[2]["arguments"] == '{"url": "https://www.python-httpx.org/changelog/", "max_chars": 20000}'
    # Unparsable: no rename, the text the model sent is kept exactly.
    assert calls[3]["arguments"] == '{"link": "https://requests.readthedocs.io/en/latest/community/updates/"'
    # Output content parts are joined; a string output is kept.
    assert calls[2]["recorded"] == "## 0.28.0\n\n* The deprecated `proxies` argument has now been removed."
    assert calls[3]["recorded"] == "error: arguments were not valid JSON"


def test_responses_input_and_output_lists_are_read_in_that_order() -> None:
    items = json.loads((DATA / "openai_responses.json").read_text())
    tool_map = load_map(DATA / "openai_map.toml")
    whole = import_transcript("openai", items, name="r", tool_map=tool_map).data
    split = import_transcript("openai", {"input": items[:6], "output": items[6:]}, name="r", tool_map=tool_map).data
    assert split["batches"] == whole["batches"]
    response = {"object": "response", "output": items[1:4]}
    batches = import_transcript("openai", response, name="r").data["batches"]
    assert [[c["id"] for c in b["calls"]] for b in batches] == [["call_pXw1Yl0Jq7K2bR4s", "call_Rt5nM8cV3dQ9wE1a"]]


def test_responses_an_assistant_message_between_calls_splits_the_batch() -> None:
    items = [
        {"type": "function_call", "call_id": "a", "name": "web_search", "arguments": "{\"query\": \"x\"}"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "and also"}]},
        {"type": "function_call", "call_id": "b", "name": "web_search", "arguments": "{\"query\": \"y\"}"},
        {"type": "function_call_output", "call_id": "a", "output": "A"},
        {"type": "function_call_output", "call_id": "b", "output": "B"},
        {"type": "function_call", "call_id": "c", "name": "web_search", "arguments": "{\"query\": \"z\"}"},
    ]
    data = import_transcript("openai", items, name="r").data
    assert [(b["label"], [c["id"] for c in b["calls"]]) for b in data["batches"]] == [
        ("turn-1", ["a"]), ("turn-1.2", ["b"]), ("turn-2", ["c"])]
    assert [c.get("recorded") for c in _calls(data)] == ["A", "B", None]


def test_responses_custom_tool_calls_keep_their_free_form_input() -> None:
    items = [
        {"type": "custom_tool_call", "call_id": "call_k1", "name": "terminal", "input": "cd /repo && ls"},
        {"type": "function_call", "call_id": "call_k2", "name": "web_search", "arguments": "{\"query\": \"x\"}"},
        {"type": "custom_tool_call_output", "call_id": "call_k1", "output": "README.md"},
        {"type": "function_call_output", "call_id": "call_k2", "output": "results"},
    ]
    assert _calls(import_transcript("openai", {"input": "do it", "output": items}, name="x").data) == [
        {"id": "call_k1", "name": "terminal", "arguments": "cd /repo && ls", "recorded": "README.md"},
        {"id": "call_k2", "name": "web_search", "arguments": "{\"query\": \"x\"}", "recorded": "results"},
    ]
