"""`harness import anthropic`: Messages API transcripts become scenarios."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.transcripts import import_file, import_transcript

DATA = Path(__file__).parent / "data"


def _calls(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [call for batch in data["batches"] for call in batch["calls"]]


def test_tool_use_blocks_of_one_assistant_message_are_one_batch_in_block_order() -> None:
    imported = import_file("anthropic", DATA / "anthropic_ops.json", map_path=DATA / "anthropic_map.json")
    data = imported.data
    assert [(b["label"], [c["id"] for c in b["calls"]]) for b in data["batches"]] == [
        ("turn-1", ["toolu_01A09q90qw90lq917835lq9", "toolu_01B4Yw7Nv2kTq8sLp3RmX6c"]),
        ("turn-2", ["toolu_01C7pXq2Lm5Rv9Tn4Kb8Wd1", "toolu_01D3hGf6Js8Ye2Wc5Qa9Nz4"]),
    ]  # the last assistant message is text only: no batch
    assert [c["name"] for c in _calls(data)] == ["query_service_logs", "query_service_metrics", "restart_service",
                                                 "query_service_logs"]
    # The model sent a `note` the mock's query_service_logs does not read: kept as sent, and said.
    assert imported.warnings == ("1 call sends arguments its tool does not take (kept as sent, marked "
                                 "check_arguments = false): toolu_01D3hGf6Js8Ye2Wc5Qa9Nz4",)


def test_input_objects_are_serialised_with_the_map_renames_applied() -> None:
    calls = _calls(import_file("anthropic", DATA / "anthropic_ops.json", map_path=DATA / "anthropic_map.json").data)
    assert calls[0]["arguments"] == '{"service_name": "search-api", "minutes": 15}'
    assert calls[2]["arguments"] == '{"service_name": "search-api"}'  # restart_service is in the catalogue
    assert calls[3]["arguments"] == '{"service_name": "search-api", "minutes": 1, "note": "après redémarrage"}'


def test_without_a_map_arguments_are_json_dumps_of_the_input() -> None:
    messages = json.loads((DATA / "anthropic_ops.json").read_text())["messages"]
    calls = _calls(import_transcript("anthropic", messages, name="ops").data)
    inputs = [b["input"] for m in messages if m["role"] == "assistant" for b in m["content"] if b["type"] == "tool_use"]
    assert [c["arguments"] for c in calls] == [json.dumps(i, ensure_ascii=False) for i in inputs]


def test_results_of_known_tools_are_recorded_expectations_and_is_error_a_recorded_error() -> None:
    calls = {c["id"]: c for c in
             _calls(import_file("anthropic", DATA / "anthropic_ops.json", map_path=DATA / "anthropic_map.json").data)}
    assert calls["toolu_01A09q90qw90lq917835lq9"]["recorded"] == (
        "312 errors: upstream connect error or disconnect/reset before headers (pod search-api-7f9c)")
    assert calls["toolu_01B4Yw7Nv2kTq8sLp3RmX6c"]["recorded"] == "cpu 97% (pod search-api-7f9c)\nmemory 88%"
    restart = calls["toolu_01C7pXq2Lm5Rv9Tn4Kb8Wd1"]
    # restart_service's behaviour is known: it runs in the world; the transcript's error is what to expect.
    assert restart["recorded_error"] == "permission denied: restart requires the oncall-admin role"
    assert not {"result", "recorded", "failure"} & set(restart)
    assert calls["toolu_01D3hGf6Js8Ye2Wc5Qa9Nz4"]["recorded"] == "41 errors in the last minute"  # is_error: false
    assert not any("result" in c for c in calls.values())


def test_is_error_of_a_tool_of_unknown_behaviour_is_a_permanent_failure() -> None:
    messages = [{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "lookup", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True,
                                              "content": "no such record"}]}]
    (call,) = _calls(import_transcript("anthropic", messages, name="x").data)
    assert call["failure"] == {"rate": 1.0, "permanent": True, "message": "no such record"}
    assert not {"result", "recorded", "recorded_error"} & set(call)


def test_unmapped_tools_get_generic_declared_specs_and_one_warning_naming_them() -> None:
    imported = import_file("anthropic", DATA / "anthropic_coding.json", map_path=DATA / "anthropic_coding_map.toml")
    data = imported.data
    assert [c["name"] for c in _calls(data)] == ["read_file", "search_files", "query_db", "patch",
                                                 "mcp__ci__rerun_job"]
    generic = {"description": "imported from transcript; behaviour unknown", "does": [], "latency": {"fixed": 100},
               "declared": {"read_only": False, "side_effect": "external", "idempotent": False}}
    assert data["tools"] == {"query_db": generic, "mcp__ci__rerun_job": generic}
    assert imported.warnings == (
        "2 tools of unknown behaviour given a generic spec: query_db, mcp__ci__rerun_job; a generic tool returns "
        "the transcript's result and touches nothing in the simulated world, so a stale or torn read or a lost "
        "update through it cannot be seen (only how a scheduler orders it by its declared metadata); map them with "
        "--map onto a tool of the catalogue, of a --tools module or one the map declares",)
    calls = _calls(data)
    assert [("result" in c, "recorded" in c) for c in calls] == [
        (False, True), (False, True), (True, False), (False, True), (True, False)]


def test_claude_code_map_renames_read_and_edit_arguments() -> None:
    calls = _calls(import_file("anthropic", DATA / "anthropic_coding.json",
                               map_path=DATA / "anthropic_coding_map.toml").data)
    assert json.loads(calls[0]["arguments"]) == {"path": "/repo/dates.py"}
    assert calls[1]["arguments"] == '{"pattern": "def test_.*leap", "path": "/repo/tests"}'  # no renames: as is
    assert json.loads(calls[3]["arguments"]) == {
        "path": "/repo/dates.py", "old": "y % 4", "new": "not (y % 4 == 0 and (y % 100 != 0 or y % 400 == 0))"}
    assert calls[0]["recorded"].startswith("     1\tdef parse_date(s):\n")


def test_a_single_tool_is_named_in_the_singular() -> None:
    messages = [{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "lookup", "input": {}}]}]
    imported = import_transcript("anthropic", messages, name="x")
    assert imported.data["tools"]["lookup"]["does"] == []
    assert imported.warnings[0].startswith("1 tool of unknown behaviour given a generic spec: lookup; ")
    assert imported.warnings[0].endswith("map it with --map onto a tool of the catalogue, of a --tools module or one "
                                         "the map declares")
    assert imported.warnings[1:] == ("1 call without a result in the transcript (the tool's own value is used): t1",)


def test_one_assistant_message_response_and_non_text_results() -> None:
    response = {"id": "msg_01", "type": "message", "role": "assistant", "stop_reason": "tool_use",
                "content": [{"type": "text", "text": "Searching."},
                            {"type": "tool_use", "id": "toolu_x", "name": "web_search", "input": {"query": "q"}}]}
    (call,) = _calls(import_transcript("anthropic", response, name="x").data)
    assert call["arguments"] == '{"query": "q"}'
    image = [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]
    messages = [response, {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_x", "content": image}]}]
    (call,) = _calls(import_transcript("anthropic", messages, name="x").data)
    assert json.loads(call["recorded"]) == image  # non-text content: its JSON text
