"""A call's arguments checked against its tool's parameters when the scenario loads (issue 23, item 8).

A misspelt argument used to load, end in the tool error "missing argument 'key'" and pass: the
scenario tested nothing. Now it is a load error naming the file, the field, the tool, what it takes
and the closest name; malformed arguments, a call or file that opts out, and names `args_from` fills
stay allowed. Reproducers keep what ran loadable. Also: an unknown key anywhere in a scenario file is
named by its exact path, with the valid keys and the closest.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness import find_scenario, get_scheduler, run
from harness.model import Batch, ToolCall
from harness.scenario import Scenario, ScenarioError, load_scenario, scenario_from_data
from harness.scenario.arguments import fits, parameters_of
from harness.scenario.dump import scenario_to_data
from harness.tools import BUILTIN
from harness.tools.params import Parameter, Parameters

ROOT = Path(__file__).resolve().parents[2]

NOTIFY = {"description": "tell the owner of a key",
          "does": [{"op": "read", "path": "/repo/{key}", "as": "owner"}],
          "declared": {"read_only": True, "side_effect": "none"}}


def load(data: dict[str, Any]) -> Scenario:
    return scenario_from_data({"name": "t", "world": {"cwd": "/repo", "files": {"/repo/owner": "alice\n"}}, **data},
                              "t.toml")


def calls(*rows: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"batches": [{"calls": list(rows)}], **top}


def error(data: dict[str, Any]) -> str:
    with pytest.raises(ScenarioError) as info:
        load(data)
    message = str(info.value)
    assert "\n" not in message and message.startswith("t.toml: "), message
    return message


# -- the issue: a misspelt argument --------------------------------------------------------------------


def test_a_misspelt_argument_of_a_declared_tool_is_a_load_error_naming_the_closest() -> None:
    message = error(calls({"id": "a", "name": "notify", "arguments": '{"kye": "owner"}'}, tools={"notify": NOTIFY}))
    assert message == ("t.toml: batches[0].calls[0].arguments: expected the arguments notify takes (key, ...), got "
                       "unknown argument 'kye' (did you mean 'key'?); check_arguments = false on the call sends "
                       "them on purpose")


def test_the_same_call_sent_on_purpose_loads_and_fails_as_the_tool_would() -> None:
    """A model does emit wrong argument names: a call (or the file) can say the call is meant."""
    wrong = {"id": "a", "name": "notify", "arguments": '{"kye": "owner"}'}
    for data in (calls({**wrong, "check_arguments": False}, tools={"notify": NOTIFY}),
                 calls(wrong, tools={"notify": NOTIFY}, check_arguments=False)):
        result = run(load(data), get_scheduler("serial"), 3)
        assert result.results[0].error == "missing argument 'key'"
    assert load(calls(wrong, tools={"notify": NOTIFY}, check_arguments=False)).check_arguments is False


@pytest.mark.parametrize(("row", "field", "problem"), [
    ({"name": "read_file", "arguments": {"paht": "a"}}, "arguments",
     "the arguments read_file takes (path: string, offset?: integer, limit?: integer), got unknown argument 'paht' "
     "(did you mean 'path'?);"),
    ({"name": "read_file", "arguments": {"path": "a", "encoding": "utf-8"}}, "arguments",
     "got unknown argument 'encoding';"),
    ({"name": "read_file", "arguments": {}}, "arguments", "got no argument 'path';"),
    ({"name": "read_file", "arguments": {"path": "a", "offset": "3"}}, "arguments",
     "got argument 'offset' = \"3\", not an integer;"),
    ({"name": "write_file", "arguments": '{"path": 7}'}, "arguments",
     "got no argument 'content'; argument 'path' = 7, not a string;"),
    ({"name": "ha_list_services", "arguments": {"domain": "light"}}, "arguments",
     "the arguments ha_list_services takes (no arguments), got unknown argument 'domain';"),
    ({"name": "create_ticket", "arguments": {"title": "t", "idempotency_kye": "k"}}, "arguments",
     "(did you mean 'idempotency_key'?)"),
])
def test_catalogue_tools_know_their_arguments(row: dict[str, Any], field: str, problem: str) -> None:
    message = error(calls({"id": "a", **row}))
    assert message.startswith(f"t.toml: batches[0].calls[0].{field}: expected the arguments {row['name']} takes ")
    assert problem in message


def test_arguments_that_are_not_a_json_object_stay_a_test_input() -> None:
    for raw in ('{"path": "a.txt"', '["b.txt", "overwrite"]', "", "null", "42"):
        assert load(calls({"id": "a", "name": "write_file", "arguments": raw})).calls[0].arguments == raw
    assert find_scenario("malformed-args").calls[1].arguments == '{"path": "b.txt"'


def test_a_null_optional_argument_counts_as_left_out_as_models_send_it() -> None:
    load(calls({"id": "q", "name": "query_sales_data",
                "arguments": {"start_date": "2025-05-12", "end_date": "2025-05-18", "category": None}}))
    assert "got argument 'start_date' = null, not a string" in error(calls(
        {"id": "q", "name": "query_sales_data", "arguments": '{"start_date": null, "end_date": "x"}'}))


def test_args_from_fills_arguments_at_run_time_and_its_names_are_checked_too() -> None:
    produce = {"id": "q", "name": "query_sales_data", "arguments": {"start_date": "a", "end_date": "b"}}
    growth = {"id": "g", "name": "calc_growth_rate", "arguments": {"previous": 1},
              "args_from": {"current": "q.value.total_amount"}}
    load({"batches": [{"calls": [produce]}, {"calls": [growth]}]})  # `current` is given by args_from
    misspelt = {**growth, "args_from": {"curent": "q.value.total_amount"}}
    message = error({"batches": [{"calls": [produce]}, {"calls": [misspelt]}]})
    assert message.startswith("t.toml: batches[1].calls[0].args_from.curent: expected the arguments "
                              "calc_growth_rate takes (current: number, previous: number), got unknown argument "
                              "'curent' (did you mean 'current'?)")


def test_calls_a_model_emits_are_checked_where_they_are_scripted() -> None:
    rules = [{"name": "go", "when": {"round": 1}, "action": "tool_call",
              "calls": [{"id": "s", "name": "web_search", "arguments": '{"qeury": "x"}'}]}]
    message = error({"model": {"task": "t", "rules": rules}})
    assert message.startswith("t.toml: model.rules[0].calls[0].arguments: expected the arguments web_search takes "
                              "(query: string), got unknown argument 'qeury' (did you mean 'query'?)")
    rules[0]["calls"][0]["check_arguments"] = False
    load({"model": {"task": "t", "rules": rules}})
    agents = [{"name": "lead", "model": {"task": "t", "rules": [
        {"name": "go", "when": {"round": 1}, "action": "tool_call",
         "calls": [{"id": "d", "name": "delegate", "arguments": '{"agnet": "helper"}'}]}]}},
        {"name": "helper", "delegated": True, "model": {"task": "h", "rules": [
            {"name": "done", "action": "final_answer", "text": "ok"}]}}]
    assert error({"agents": agents}).startswith(
        "t.toml: agents[0].model.rules[0].calls[0].arguments: expected the arguments delegate takes (agent: string, "
        "task?: string), got unknown argument 'agnet' (did you mean 'agent'?)")


def test_a_declared_tool_takes_what_its_script_reads_and_may_be_sent_more() -> None:
    """Without `parameters`, the names its steps and result read are required; others are accepted
    (a tool that only waits may be sent anything), but not a misspelling of one it reads."""
    wait = {"does": [{"op": "wait"}]}
    load(calls({"id": "a", "name": "crm", "arguments": {"customer": "acme"}}, tools={"crm": wait}))
    notify = load(calls({"id": "a", "name": "notify", "arguments": {"key": "owner"}}, tools={"notify": NOTIFY}))
    assert parameters_of(notify.catalogue["notify"]) == Parameters((Parameter("key"),), closed=False)
    reads = {"does": [{"op": "read", "path": "{dir}/x", "as": "x"}, {"op": "write", "path": "{x}", "content": "{c}"}],
             "result": {"n": "{n}", "x": "{x}"}, "declared": {"resource_keys": ["db:{table}"]}}
    message = error(calls({"id": "a", "name": "rw", "arguments": {"dir": "/", "c": "", "n": 1, "tabel": "t"}},
                          tools={"rw": reads}))
    assert "takes (dir, c, n, table?, ...), got unknown argument 'tabel' (did you mean 'table'?)" in message


def test_a_declared_tool_may_list_its_parameters_and_is_then_closed() -> None:
    tool = {**NOTIFY, "parameters": {"key": "string", "note": "string?"}}
    load(calls({"id": "a", "name": "notify", "arguments": {"key": "owner"}}, tools={"notify": tool}))
    assert "got unknown argument 'channel'" in error(calls(
        {"id": "a", "name": "notify", "arguments": {"key": "owner", "channel": "#x"}}, tools={"notify": tool}))
    assert "got argument 'note' = 3, not a string" in error(calls(
        {"id": "a", "name": "notify", "arguments": {"key": "owner", "note": 3}}, tools={"notify": tool}))


@pytest.mark.parametrize(("tool", "field", "expected"), [
    ({"parameters": {"key": "str"}}, "tools.notify.parameters.key", "one of string, integer, number, boolean"),
    ({"parameters": ["key"]}, "tools.notify.parameters", "a table of argument = type"),
    ({"parameters": {"kye": "string"}}, "tools.notify.does[0].path",
     "a template over the tool's parameters (did you mean 'kye'? kye: string)"),
    ({"parameters": {"key": "string"}, "declared": {"resource_keys": ["db:{kye}"]}},
     "tools.notify.declared.resource_keys[0]", "did you mean"),
])
def test_declared_parameters_are_validated_against_what_the_tool_reads(tool: dict[str, Any], field: str,
                                                                      expected: str) -> None:
    message = error(calls({"id": "a", "name": "notify", "arguments": {"key": "owner"}},
                          tools={"notify": {**NOTIFY, **tool}}))
    assert message.startswith(f"t.toml: {field}: expected"), message
    assert expected in message


def test_parameters_belong_to_declared_tools() -> None:
    assert "tools.read_file.parameters: expected no parameters: 'read_file' is a tool of the catalogue" in error(
        calls({"id": "a", "name": "read_file", "arguments": {"path": "a"}},
              tools={"read_file": {"parameters": {"file": "string"}}}))


def test_a_recorded_result_allows_arguments_the_tool_does_not_read_but_not_a_missing_one() -> None:
    """The value is recorded, so an argument the mock ignores cannot change it (a transcript's model
    sends `max_chars`); an argument it needs and lacks would still fail the call."""
    load(calls({"id": "a", "name": "web_extract", "arguments": {"url": "u", "max_chars": 9}, "result": "text"}))
    assert "got no argument 'url'" in error(calls(
        {"id": "a", "name": "web_extract", "arguments": {"link": "u"}, "result": "text"}))
    assert "did you mean 'url'" in error(calls(
        {"id": "a", "name": "web_extract", "arguments": {"ulr": "u"}, "result": "text"}))


def test_the_opt_out_must_be_a_boolean() -> None:
    assert error(calls({"id": "a", "name": "read_file", "check_arguments": "no"})).startswith(
        "t.toml: batches[0].calls[0].check_arguments: expected true or false")
    assert error(calls({"id": "a", "name": "read_file", "arguments": {"path": "a"}}, check_arguments=1)).startswith(
        "t.toml: check_arguments: expected true or false")


# -- reproducers keep what ran loadable --------------------------------------------------------------


def test_a_scenario_built_in_python_with_wrong_arguments_dumps_marked_and_loads_back() -> None:
    built = Scenario("py", (Batch((ToolCall("a", "read_file", '{"file": "x"}', 0),
                                   ToolCall("b", "read_file", '{"path": "x"}', 1))),))
    data = json.loads(json.dumps(scenario_to_data(built)))
    assert [c.get("check_arguments") for c in data["batches"][0]["calls"]] == [False, None]
    assert scenario_from_data(data).calls == built.calls
    loop = load({"check_arguments": False, "model": {"task": "t", "rules": [
        {"name": "go", "when": {"round": 1}, "action": "tool_call",
         "calls": [{"id": "s", "name": "web_search", "arguments": "{}"}]}]}})
    assert scenario_from_data(json.loads(json.dumps(scenario_to_data(loop)))).check_arguments is False


def test_declared_parameters_survive_a_reproducer() -> None:
    sc = load(calls({"id": "a", "name": "notify", "arguments": {"key": "owner"}},
                    tools={"notify": {**NOTIFY, "parameters": {"key": "string", "n": "integer?"}}}))
    data = scenario_to_data(sc)
    assert data["tools"]["notify"]["parameters"] == {"key": "string", "n": "integer?"}
    assert scenario_from_data(data).catalogue["notify"].parameters == sc.catalogue["notify"].parameters


def test_open_parameters_are_not_silently_closed_in_a_reproducer() -> None:
    """The short form cannot say "and others too": a reproducer spells open parameters as input_schema."""
    from dataclasses import replace

    sc = load(calls({"id": "a", "name": "notify", "arguments": {"key": "owner", "extra": 1}},
                    tools={"notify": {**NOTIFY, "parameters": {"key": "string", "extra": "integer"}}}))
    opened = replace(sc.catalogue["notify"], parameters=Parameters.from_json_schema(
        {"properties": {"key": {"type": "string"}}, "additionalProperties": True}))
    data = scenario_to_data(replace(sc, catalogue=sc.catalogue.replace_tool(opened)))
    assert "parameters" not in data["tools"]["notify"]
    again = scenario_from_data(data).catalogue["notify"].parameters
    assert again == opened.parameters and again is not None and not again.closed


def test_json_schema_parameters_as_mcp_and_openai_spell_them() -> None:
    schema = {"type": "object", "properties": {"start_date": {"type": "string"}, "category": {"type": "string",
              "enum": ["A"]}, "limit": {"type": ["integer", "null"]}}, "required": ["start_date"],
              "additionalProperties": False}
    parameters = Parameters.from_json_schema(schema)
    assert parameters.to_data() == {"start_date": "string", "category": "string?", "limit": "any?"}
    assert parameters.closed and not Parameters.from_json_schema({**schema, "additionalProperties": True}).closed
    assert not Parameters.from_json_schema({"type": "object"}).items
    with pytest.raises(ValueError, match="a JSON Schema of an object"):
        Parameters.from_json_schema({"type": "string"})


# -- every scenario we ship or test with still loads ----------------------------------------------


def test_every_built_in_and_test_scenario_file_loads() -> None:
    files = sorted((ROOT / "scenarios").glob("*.toml")) + sorted((ROOT / "tests").rglob("*.toml"))
    scenarios = [p for p in files if {"name"} <= set(tomllib.loads(p.read_text()))
                 and {"batches", "model", "agents"} & set(tomllib.loads(p.read_text()))]
    assert len(scenarios) > 40
    for path in scenarios:
        load_scenario(path)


def test_every_built_in_tool_says_what_it_takes() -> None:
    assert [name for name, spec in BUILTIN.items() if spec.parameters is None] == []


# -- a property: any one-letter slip in a required argument is caught and the argument named ----------


def _slips(name: str) -> st.SearchStrategy[str]:
    """A name with one letter dropped, doubled or swapped with its neighbour."""
    cuts = st.integers(min_value=0, max_value=len(name) - 1)
    return st.one_of(cuts.map(lambda i: name[:i] + name[i + 1:]), cuts.map(lambda i: name[:i] + name[i] + name[i:]),
                     st.integers(min_value=0, max_value=len(name) - 2).map(
                         lambda i: name[:i] + name[i + 1] + name[i] + name[i + 2:]))


REQUIRED = sorted((name, p.name) for name, spec in BUILTIN.items() if spec.parameters is not None
                  for p in spec.parameters.items if p.required)


@given(st.sampled_from(REQUIRED).flatmap(lambda pair: st.tuples(st.just(pair), _slips(pair[1]))))
def test_a_one_letter_slip_in_a_required_argument_is_named(case: tuple[tuple[str, str], str]) -> None:
    (tool, argument), slip = case
    spec = BUILTIN[tool]
    assert spec.parameters is not None
    if slip in spec.parameters.names:  # swapping equal letters, or a slip onto another argument
        return
    args = {p.name: "x" if p.type == "string" else 1 for p in spec.parameters.items if p.required}
    args[slip] = args.pop(argument)
    assert not fits(spec, json.dumps(args))
    with pytest.raises(ScenarioError) as info:
        scenario_from_data(calls({"id": "a", "name": tool, "arguments": args}, name="p"), "p.toml")
    assert f"unknown argument {slip!r} (did you mean {argument!r}?)" in str(info.value)


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=4), inner, max_size=2),
                    max_leaves=4)


@given(st.sampled_from(sorted(BUILTIN)), st.dictionaries(
    st.sampled_from(["path", "paht", "content", "query", "command", "title", "pattern", "offset", "x", ""]), JSON,
    max_size=4), st.booleans())
def test_any_arguments_load_exactly_when_they_fit_and_are_otherwise_a_clean_error(
        tool: str, args: dict[str, Any], recorded: bool) -> None:
    row: dict[str, Any] = {"id": "a", "name": tool, "arguments": json.dumps(args)}
    if recorded:
        row["result"] = "r"
    try:
        scenario_from_data(calls(row, name="p"), "p.toml")
    except ScenarioError as exc:
        assert str(exc).startswith(f"p.toml: batches[0].calls[0].arguments: expected the arguments {tool} takes (")
        assert not fits(BUILTIN[tool], row["arguments"], recorded=recorded)
    else:
        assert fits(BUILTIN[tool], row["arguments"], recorded=recorded)


# -- unknown keys, anywhere in the file -----------------------------------------------------------------


CALL = {"id": "a", "name": "read_file", "arguments": {"path": "a"}}
RULES = [{"name": "go", "when": {"round": 1}, "action": "tool_call", "calls": [CALL]}]


@pytest.mark.parametrize(("data", "field", "close"), [
    (calls(CALL, nmae="x"), "nmae", "name"),
    (calls(CALL, world={"cdw": "/"}), "world.cdw", "cwd"),
    (calls(CALL, world={"from_dir": {"path": "x", "exclud": []}}), "world.from_dir.exclud", "exclude"),
    (calls(CALL, tools={"read_file": {"latncy": {"fixed": 1}}}), "tools.read_file.latncy", "latency"),
    (calls(CALL, tools={"notify": {"doe": []}}), "tools.notify.doe", "does"),
    (calls(CALL, tools={"notify": {**NOTIFY, "parameter": {}}}), "tools.notify.parameter", "parameters"),
    (calls(CALL, tools={"read_file": {"declared": {"read_onyl": True}}}), "tools.read_file.declared.read_onyl",
     "read_only"),
    (calls(CALL, tools={"notify": {"does": [{"op": "read", "path": "/x", "ass": "y"}]}}), "tools.notify.does[0].ass",
     "as"),
    (calls(CALL, tools={"read_file": {"latency": {"fixd": 1}}}), "tools.read_file.latency.fixd", "fixed"),
    (calls(CALL, tools={"read_file": {"latency": {"lognormal": {"median": 1, "sigm": 1}}}}),
     "tools.read_file.latency.lognormal.sigm", "sigma"),
    (calls(CALL, tools={"read_file": {"failure": {"rat": 1}}}), "tools.read_file.failure.rat", "rate"),
    (calls({**CALL, "latency": {"unifrom": [1, 2]}}), "batches[0].calls[0].latency.unifrom", "uniform"),
    (calls({**CALL, "check_argument": False}), "batches[0].calls[0].check_argument", "check_arguments"),
    ({"batches": [{"calls": [CALL], "lable": "x"}]}, "batches[0].lable", "label"),
    (calls(CALL, execution={"retires": 1}), "execution.retires", "retries"),
    (calls(CALL, interrupt={"at_ms": 1, "grace": 1}), "interrupt.grace", "grace_ms"),
    (calls(CALL, faults={"torn_write": {"rate": 1}}), "faults.torn_write", "torn_writes"),
    (calls(CALL, faults={"torn_writes": {"rate": 1, "rates": 2}}), "faults.torn_writes.rates", "rate"),
    (calls(CALL, faults={"rate_limit": [{"tool": "read_file", "limit": 1, "window": 1}]}),
     "faults.rate_limit[0].window", "window_ms"),
    (calls(CALL, faults={"crash": {"atms": 1}}), "faults.crash.atms", "at_ms"),
    (calls(CALL, approvals={"defualt": {}}), "approvals.defualt", "default"),
    (calls(CALL, approvals={"default": {"answer": "approve", "latency": {"fixd": 1}}}),
     "approvals.default.latency.fixd", "fixed"),
    ({"model": {"task": "t", "rule": RULES}}, "model.rule", "rules"),
    ({"model": {"task": "t", "rules": [{**RULES[0], "wehn": {}}]}}, "model.rules[0].wehn", "when"),
    ({"model": {"task": "t", "rules": [{**RULES[0], "calls": [{**CALL, "args_form": {}}]}]}},
     "model.rules[0].calls[0].args_form", "args_from"),
    ({"model": {"task": "t", "think": {"fixd": 1}, "rules": RULES}}, "model.think.fixd", "fixed"),
    ({"model": {"task": "t", "rules": RULES}, "loop": {"polcy": "taskloop"}}, "loop.polcy", "policy"),
    ({"agents": [{"name": "a", "model": {"task": "t", "rules": RULES}, "schedular": "serial"}]},
     "agents[0].schedular", "scheduler"),
])
def test_an_unknown_key_is_named_by_its_path_with_the_valid_keys_and_the_closest(data: dict[str, Any], field: str,
                                                                                 close: str) -> None:
    message = error(data)
    assert message.startswith(f"t.toml: {field}: expected one of the keys "), message
    assert f"(unknown key; did you mean {close!r}?)" in message


def test_an_unknown_key_nothing_like_a_valid_one_lists_the_valid_ones() -> None:
    assert error(calls(CALL, faults={"earthquake": {}})) == (
        "t.toml: faults.earthquake: expected one of the keys crash, duplicate_delivery, mcp_ignores_cancel, "
        "mcp_progress_only, mcp_server_death, mcp_stall, rate_limit, torn_writes (unknown key)")


# -- the command line ------------------------------------------------------------------------------------


def test_harness_run_of_a_misspelt_argument_exits_2_with_one_line_on_stderr(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\n[tools.notify]\ndoes = [{ op = "read", path = "/{key}" }]\n'
                   '[[batches]]\n[[batches.calls]]\nid = "b"\nname = "notify"\narguments = \'{"kye": "x"}\'\n')
    done = subprocess.run([sys.executable, "-m", "harness", "run", str(bad), "--seed", "7"], capture_output=True,
                          text=True, cwd=tmp_path, check=False)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (f"harness: {bad}: batches[0].calls[0].arguments: expected the arguments notify takes "
                           "(key, ...), got unknown argument 'kye' (did you mean 'key'?); check_arguments = false on "
                           "the call sends them on purpose\n")


def test_the_errors_docs_tools_shows_are_the_ones_given() -> None:
    doc = (ROOT / "docs" / "tools.md").read_text()
    (block,) = [b for b in re.findall(r"```toml\n(.*?)```", doc, flags=re.S) if b.startswith('name = "db-report"')]
    spans = [" ".join(s.split()) for s in re.findall(r"`(db-report\.toml: [^`]+)`", doc)]
    (argument,) = [s for s in spans if ".arguments:" in s]
    data = tomllib.loads(block)
    data["batches"][0]["calls"][1]["arguments"] = '{"tabel": "users"}'
    with pytest.raises(ScenarioError) as info:
        scenario_from_data(data, "db-report.toml")
    assert str(info.value) == argument
    (key,) = [s for s in spans if ".doe:" in s]
    data = tomllib.loads(block)
    data["tools"]["query_db"]["doe"] = []
    with pytest.raises(ScenarioError) as info:
        scenario_from_data(data, "db-report.toml")
    head, tail = key.split(" ... ")
    assert str(info.value).startswith(head.removesuffix(",")) and str(info.value).endswith(tail)
