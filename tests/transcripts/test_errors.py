"""Malformed transcripts and map files: one-line errors naming the file, the location and what was
expected; recoverable oddities (repeated ids, orphan results) are warnings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.transcripts import TranscriptError, import_file, import_transcript, load_map, parse_map
from harness.transcripts.mapping import Target


def _error(kind: str, data: Any) -> str:
    with pytest.raises(TranscriptError) as info:
        import_transcript(kind, data, name="x", file="t.json")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("t.json: ")
    return message


def _assistant(*tool_calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": list(tool_calls)}


def _fn(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_not_json_names_the_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"messages": [\n  {"role": "user",}\n]}')
    with pytest.raises(TranscriptError) as info:
        import_file("openai", path)
    assert str(info.value) == (f"{path}: line 2 column 19: expected valid JSON (Expecting property name enclosed "
                               "in double quotes)")
    path.write_text("")
    with pytest.raises(TranscriptError, match=r"broken\.json: expected a JSON transcript, got an empty file$"):
        import_file("openai", path)
    missing = r"missing\.json: expected a readable file, got 'No such file or directory'$"
    with pytest.raises(TranscriptError, match=missing):
        import_file("openai", tmp_path / "missing.json")


def test_wrong_top_level_shape() -> None:
    assert _error("openai", {"conversation": []}).startswith(
        "t.json: (top level): expected a Chat Completions transcript ({\"messages\": [...]}")
    assert _error("openai", {"conversation": []}).endswith("got an object with keys 'conversation'")
    assert _error("anthropic", "hello") == (
        "t.json: (top level): expected a Messages API transcript ({\"messages\": [...]}, a list of messages or one "
        "assistant message), got 'hello'")
    assert _error("anthropic", {"messages": {"role": "user"}}) == (
        "t.json: messages: expected a list of messages, got an object with keys 'role'")


def test_openai_tool_call_without_id_or_name() -> None:
    no_id = {"type": "function", "function": {"name": "web_search", "arguments": "{}"}}
    assert _error("openai", {"messages": [{"role": "user", "content": "hi"}, _assistant(no_id)]}) == (
        "t.json: messages[1].tool_calls[0].id: expected the call id (a non-empty string), "
        "got nothing (the key is missing)")
    no_name = {"id": "call_2", "type": "function", "function": {"name": "", "arguments": "{}"}}
    assert _error("openai", [_assistant(_fn("call_1", "web_search", "{}"), no_name)]) == (
        "t.json: [0].tool_calls[1].function.name: expected the tool name (a non-empty string), got ''")


def test_openai_arguments_must_be_the_raw_string() -> None:
    assert _error("openai", {"messages": [_assistant(_fn("c1", "web_search", {"query": "x"}))]}) == (
        "t.json: messages[0].tool_calls[0].function.arguments: expected the raw string the model emitted "
        "(OpenAI sends arguments as a JSON string), got an object with keys 'query'")
    items = [{"type": "function_call", "call_id": "c1", "name": "web_search"}]
    assert _error("openai", items) == (
        "t.json: [0].arguments: expected the raw string the model emitted, got nothing (the key is missing)")
    assert _error("openai", [{"type": "function_call", "name": "web_search", "arguments": "{}"}]) == (
        "t.json: [0].call_id: expected the call id (a non-empty string), got nothing (the key is missing)")


def test_openai_other_malformed_messages() -> None:
    assert _error("openai", {"messages": [{"content": "hi"}]}) == (
        "t.json: messages[0].role: expected a role (system, developer, user, assistant or tool), "
        "got nothing (the key is missing)")
    assert _error("openai", {"messages": [{"role": "tool", "content": "x"}]}) == (
        "t.json: messages[0].tool_call_id: expected the id of the call this result answers (a non-empty string), "
        "got nothing (the key is missing)")
    assert _error("openai", {"messages": [_assistant({"id": "c", "type": "web_search"})]}) == (
        "t.json: messages[0].tool_calls[0].type: expected \"function\" or \"custom\", got 'web_search'")


def test_anthropic_input_must_be_an_object() -> None:
    block = {"type": "tool_use", "id": "toolu_1", "name": "web_search", "input": '{"query": "x"}'}
    assert _error("anthropic", {"messages": [{"role": "assistant", "content": [block]}]}) == (
        "t.json: messages[0].content[0].input: expected the arguments as an object (Anthropic sends tool_use "
        "input parsed), got '{\"query\": \"x\"}'")
    no_id = {"type": "tool_use", "name": "web_search", "input": {}}
    assert _error("anthropic", [{"role": "assistant", "content": [{"type": "text", "text": "hi"}, no_id]}]) == (
        "t.json: [0].content[1].id: expected the tool_use id (a non-empty string), got nothing (the key is missing)")


def test_anthropic_other_malformed_messages() -> None:
    use = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "web_search", "input": {}}]}
    bad_flag = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": "yes"}]}
    assert _error("anthropic", [use, bad_flag]) == "t.json: [1].content[0].is_error: expected true or false, got 'yes'"
    assert _error("anthropic", [{"role": "system", "content": "x"}]) == (
        "t.json: [0].role: expected \"user\" or \"assistant\" (roles system and tool are OpenAI's: import it with "
        "`harness import openai`), got 'system'")
    assert _error("anthropic", [{"role": "assistant", "content": [{"text": "hi"}]}]) == (
        "t.json: [0].content[0].type: expected a block type (text, tool_use, tool_result, ...), "
        "got nothing (the key is missing)")


def test_a_transcript_without_tool_calls_is_an_error() -> None:
    assert _error("anthropic", [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]) == (
        "t.json: (top level): expected at least one assistant turn with tool calls (read as Anthropic Messages "
        "API), found none; if it is an openai transcript, import it with `harness import openai`")
    anthropic = json.loads((Path(__file__).parent / "data" / "anthropic_coding.json").read_text())
    assert _error("openai", anthropic).endswith(
        "(read as OpenAI Chat Completions), found none; if it is an anthropic transcript, import it with "
        "`harness import anthropic`")


def test_a_result_for_an_unknown_call_id_is_ignored_with_a_warning() -> None:
    messages = [_assistant(_fn("c1", "web_search", '{"query": "x"}')),
                {"role": "tool", "tool_call_id": "c1", "content": "one"},
                {"role": "tool", "tool_call_id": "c9", "content": "stray"},
                {"role": "tool", "tool_call_id": "c1", "content": "again"}]
    imported = import_transcript("openai", {"messages": messages}, name="x")
    assert imported.data["batches"][0]["calls"][0]["recorded"] == "one"
    assert imported.warnings == (
        "messages[2]: tool result for call id 'c9' ignored (no call in the transcript has that id)",
        "messages[3]: tool result for call id 'c1' ignored (a second result for that call)",
    )


def test_reused_call_ids_are_disambiguated_and_results_pair_with_their_own_turn() -> None:
    # Some OpenAI-compatible servers number calls per message (call_0, call_1, ...): ids repeat.
    messages = [
        _assistant(_fn("call_0", "web_search", '{"query": "a"}'), _fn("call_1", "web_search", '{"query": "b"}')),
        {"role": "tool", "tool_call_id": "call_0", "content": "A"},
        {"role": "tool", "tool_call_id": "call_1", "content": "B"},
        _assistant(_fn("call_0", "web_search", '{"query": "c"}'), _fn("call_0", "web_search", '{"query": "d"}')),
        {"role": "tool", "tool_call_id": "call_0", "content": "C"},
        {"role": "tool", "tool_call_id": "call_0", "content": "D"},
    ]
    imported = import_transcript("openai", messages, name="x")
    rows = [(c["id"], json.loads(c["arguments"])["query"], c["recorded"])
            for b in imported.data["batches"] for c in b["calls"]]
    assert rows == [("call_0", "a", "A"), ("call_1", "b", "B"), ("call_0#2", "c", "C"), ("call_0#3", "d", "D")]
    assert imported.warnings == ("call id 'call_0' is used by 3 calls; the later ones are renamed call_0#2, "
                                 "call_0#3 (results pair with the latest earlier turn's unanswered call)",)


def test_map_file_errors_name_the_file_the_key_and_the_valid_tools(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError) as info:
        parse_map({"Read": "reed_file"}, "map.toml")
    message = str(info.value)
    assert message.startswith("map.toml: Read: expected a tool of the catalogue, of a --tools module or declared "
                              "in this map (did you mean 'read_file'? valid: calc_growth_rate, clarify, "
                              "create_ticket, ")
    assert message.endswith("write_file, write_file_atomic), got 'reed_file'")
    cases = [
        ({"Read": {"tool": "read_file", "args": {}}}, "map.toml: Read.args: expected only the keys tool, "
                                                      "arguments and declare (unknown key)"),
        ({"Read": {"arguments": {}}}, "map.toml: Read.tool: expected the tool to map to, got nothing "
                                      "(the key is missing)"),
        ({"Read": {"tool": "read_file", "arguments": {"file_path": 1}}},
         "map.toml: Read.arguments.file_path: expected the tool's argument name (a non-empty string), got 1"),
        ({"mcp.fs.read": 3}, 'map.toml: "mcp.fs.read": expected a tool name or a table { tool = ..., '
                             'arguments = { old = "new" }, declare = { does = [...], ... } }, got 3'),
        ([], "map.toml: (top level): expected a table of transcript tool name = tool to run, got a list of 0 "
             "items"),
    ]
    for data, expected in cases:
        with pytest.raises(TranscriptError) as info:
            parse_map(data, "map.toml")
        assert str(info.value) == expected
    bad = tmp_path / "map.toml"
    bad.write_text("Read = read_file\n")
    with pytest.raises(TranscriptError, match=r"map\.toml: expected valid TOML \(Invalid value"):
        load_map(bad)
    bad_json = tmp_path / "map.json"
    bad_json.write_text('{"Read": "read_file",}')
    with pytest.raises(TranscriptError, match=r"map\.json: line 1 column 22: expected valid JSON"):
        load_map(bad_json)


def test_map_files_in_either_format_give_the_same_map(tmp_path: Path) -> None:
    (tmp_path / "m.toml").write_text('Read = { tool = "read_file", arguments = { file_path = "path" } }\n'
                                     'Bash = "terminal"\n')
    (tmp_path / "m.json").write_text('{"Read": {"tool": "read_file", "arguments": {"file_path": "path"}}, '
                                     '"Bash": "terminal"}')
    (tmp_path / "m.map").write_text('Bash = "terminal"\n')
    assert load_map(tmp_path / "m.toml").targets == load_map(tmp_path / "m.json").targets == {
        "Read": Target("read_file", {"file_path": "path"}), "Bash": Target("terminal")}
    assert load_map(tmp_path / "m.map").targets == {"Bash": Target("terminal")}


def test_renames_apply_to_json_objects_only_and_never_clobber_an_argument() -> None:
    target = Target("read_file", {"file_path": "path"})
    assert target.arguments('{"file_path": "a.txt", "limit": 5}') == ('{"path": "a.txt", "limit": 5}', None)
    assert target.arguments('{"path":"a.txt"}') == ('{"path":"a.txt"}', None)  # nothing to rename: bytes kept
    assert target.arguments('{"file_path": "a.txt"') == ('{"file_path": "a.txt"', None)
    assert target.arguments('["file_path"]') == ('["file_path"]', None)
    raw = '{"file_path": "a", "path": "b"}'
    assert target.arguments(raw) == (raw, "argument 'path' would be given twice by the renames; arguments kept as sent")


def test_an_unmapped_tool_name_the_scenario_cannot_declare_is_an_error_unless_mapped() -> None:
    messages = [{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read file", "input": {}}]}]
    assert _error("anthropic", messages) == (
        "t.json: [0].content[0]: expected a tool name of letters, digits, '_', '-' or '.' for a generic spec, "
        "or a --map entry for it, got 'read file'")
    mapped = import_transcript("anthropic", messages, name="x", tool_map=parse_map({"read file": "read_file"}))
    assert mapped.data["batches"][0]["calls"][0]["name"] == "read_file"


def test_calls_without_results_are_listed_in_transcript_order() -> None:
    messages = [_assistant(_fn("z", "web_search", "{}"), _fn("a", "web_search", "{}"), _fn("m", "web_search", "{}")),
                {"role": "tool", "tool_call_id": "a", "content": "A"},
                _assistant(_fn("z", "web_search", "{}"))]
    assert import_transcript("openai", messages, name="x").warnings[-1] == (
        "3 calls without a result in the transcript (the tool's own value is used): z, m, z#2")
