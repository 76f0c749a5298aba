"""`harness import --tools MODULE` and `--map` onto a user's own tools: a tool of a Python module, or
one the map declares (a scenario's `[tools.NAME]` table). Calls of those tools compute their results
from the world like any other, so a race on them shows; unknown targets list the valid names."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import get_scheduler, run
from harness.cli.transcripts import import_command
from harness.oracles import check
from harness.scenario import Scenario, ScenarioError, load_scenario
from harness.transcripts import TranscriptError, import_transcript, parse_map
from tests.transcripts.shapes import SHAPES, Done, kind, transcript

MODULE = '''
from harness.tools import Declared, ToolSpec


def kv_put(args, io):
    path = "/kv/" + args["key"]
    io.truncate(path)
    yield 1.0
    io.write(path, args["value"])
    return "stored " + args["key"]


def kv_get(args, io):
    yield 0.5
    return io.read("/kv/" + args["key"])


TOOLS = [ToolSpec("kv_put", "store a value", Declared(read_only=False), kv_put),
         ToolSpec("kv_get", "read a value", Declared(read_only=True), kv_get)]
'''

#: The runtime calls its tools `kv_put` and `Get` (with `name` for the key).
TURN = [Done("c1", "kv_put", {"key": "mode", "value": "fast"}, "stored mode"),
        Done("c2", "Get", {"name": "mode"}, "fast")]


@pytest.fixture
def tools_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A tools module written into tmp_path, importable under a name no other test uses (modules
    are imported once per name)."""
    name = f"acme_tools_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def _invoke(tmp_path: Path, shape: str, *args: str) -> tuple[int, Path, list[str]]:
    source = tmp_path / f"{shape}.json"
    source.write_text(json.dumps(transcript(shape, TURN)))
    out = tmp_path / f"{shape}.toml"
    done = CliRunner().invoke(import_command, [kind(shape), str(source), "--out", str(out), *args])
    return done.exit_code, out, done.stderr.splitlines()


def _labels(scenario: Scenario, policy: str, seed: int) -> set[str]:
    return {v.label for verdict in check(run(scenario, get_scheduler(policy), seed)) for v in verdict.violations}


@pytest.mark.parametrize("shape", SHAPES)
def test_tools_and_map_onto_a_module_tool(tmp_path: Path, tools_module: str, shape: str) -> None:
    (tmp_path / "map.toml").write_text('Get = { tool = "kv_get", arguments = { name = "key" } }\n')
    code, out, stderr = _invoke(tmp_path, shape, "--tools", tools_module, "--map", str(tmp_path / "map.toml"))
    assert code == 0, stderr
    assert stderr == [f"harness: wrote {out}: 1 batch, 2 calls"]  # known tools, results reproduced: no warning
    data = tomllib.loads(out.read_text())
    assert data["tools_module"] == tools_module and "tools" not in data
    assert [(c["name"], c["arguments"], c["recorded"]) for c in data["batches"][0]["calls"]] == [
        ("kv_put", '{"key": "mode", "value": "fast"}', "stored mode"), ("kv_get", '{"key": "mode"}', "fast")]
    # The file names its module: no --tools needed to run it, but the module must be trusted.
    with pytest.raises(ScenarioError, match=f"run it with --trust-module {tools_module}"):
        load_scenario(out)
    scenario = load_scenario(out, trust=[tools_module])
    assert any(_labels(scenario, "parallel", seed) & {"stale-read", "torn-read"} for seed in (1, 2, 3))
    assert all(_labels(scenario, "serial", seed) == set() for seed in (1, 2, 3))


def test_a_map_target_nobody_has_lists_the_valid_tools(tmp_path: Path, tools_module: str) -> None:
    (tmp_path / "map.toml").write_text('Get = { tool = "kv_gte", arguments = { name = "key" } }\n')
    code, _, stderr = _invoke(tmp_path, "chat", "--tools", tools_module, "--map", str(tmp_path / "map.toml"))
    assert code == 2
    (line,) = stderr
    assert line.startswith(f"harness: {tmp_path / 'map.toml'}: Get.tool: expected a tool of the catalogue, of a "
                           "--tools module or declared in this map (did you mean 'kv_get'? valid: ")
    assert "kv_get, kv_put, patch" in line and line.endswith("got 'kv_gte'")
    # Without --tools the module's tools are not known: the same map is an error naming what is valid.
    (tmp_path / "map.toml").write_text('Get = { tool = "kv_get" }\n')
    code, _, stderr = _invoke(tmp_path, "chat", "--map", str(tmp_path / "map.toml"))
    assert code == 2 and "kv_get, " not in stderr[0] and stderr[0].endswith("got 'kv_get'")


def test_a_tools_module_that_cannot_be_imported_is_one_line_exit_2(tmp_path: Path) -> None:
    code, _, stderr = _invoke(tmp_path, "chat", "--tools", "no_such_tools_module_here")
    assert code == 2
    assert stderr == ["harness: --tools: tools module 'no_such_tools_module_here': no module named "
                      "'no_such_tools_module_here' (is it installed or on PYTHONPATH?)"]


def test_a_module_tool_named_as_in_the_transcript_needs_no_map(tmp_path: Path, tools_module: str) -> None:
    code, out, stderr = _invoke(tmp_path, "anthropic", "--tools", tools_module)
    assert code == 0
    # kv_put is the module's; Get is nobody's: a generic spec, and the warning says which races it hides.
    assert any(line.startswith("harness: warning: 1 tool of unknown behaviour given a generic spec: Get; ")
               for line in stderr)
    calls = tomllib.loads(out.read_text())["batches"][0]["calls"]
    assert [(c["name"], "recorded" in c, "result" in c) for c in calls] == [("kv_put", True, False),
                                                                            ("Get", False, True)]


DECLARING_MAP = '''
[kv_put]
tool = "put"
[kv_put.declare]
declared = { read_only = false, resource_keys = ["kv:{key}"] }
does = [{ op = "write", path = "/kv/{key}", content = "{value}", at = 1.0 }]
result = "stored {key}"

[Get]
tool = "get"
arguments = { name = "key" }
[Get.declare]
declared = { read_only = true, resource_keys = ["kv:{key}"] }
does = [{ op = "read", path = "/kv/{key}", at = 0.5, as = "v" }]
result = "{v}"

[Lookup]
tool = "get"
'''


@pytest.mark.parametrize("shape", SHAPES)
def test_map_onto_tools_the_map_declares(tmp_path: Path, shape: str) -> None:
    (tmp_path / "map.toml").write_text(DECLARING_MAP)
    code, out, stderr = _invoke(tmp_path, shape, "--map", str(tmp_path / "map.toml"))
    assert code == 0, stderr
    assert stderr == [f"harness: wrote {out}: 1 batch, 2 calls"]
    data = tomllib.loads(out.read_text())
    assert sorted(data["tools"]) == ["get", "put"]
    assert data["tools"]["get"]["does"] == [{"op": "read", "path": "/kv/{key}", "at": 0.5, "as": "v"}]
    assert [c["name"] for c in data["batches"][0]["calls"]] == ["put", "get"]
    scenario = load_scenario(out)
    assert any("stale-read" in _labels(scenario, "parallel", seed) for seed in (1, 2, 3))
    assert all(_labels(scenario, "serial", seed) == set() for seed in (1, 2, 3))
    # A scheduler that honours the declared resource keys keeps model order on them.
    assert all(_labels(scenario, "resource_keys", seed) == set() for seed in (1, 2, 3))


def test_a_declaration_error_is_the_map_files() -> None:
    bad = tomllib.loads(DECLARING_MAP.replace('op = "read"', 'op = "raed"'))
    tool_map = parse_map(bad, "map.toml")
    with pytest.raises(TranscriptError) as info:
        import_transcript("openai", transcript("chat", TURN), name="x", tool_map=tool_map)
    assert str(info.value) == ("map.toml: Get.declare.does[0].op: expected one of read, write, write_atomic, append, "
                               "truncate, delete, rename, ledger, cd, wait, got 'raed'")
    cases = [
        ({"Read": {"tool": "read_file", "declare": {"does": []}}},
         "map.toml: Read.tool: expected a new name for the tool the entry declares (a tool of the catalogue or of a "
         "--tools module keeps its behaviour; map onto it without declare), got 'read_file'"),
        ({"Read": {"tool": "my read", "declare": {"does": []}}},
         "map.toml: Read.tool: expected a tool name of letters, digits, '_', '-' or '.' for the declared tool, got "
         "'my read'"),
        ({"A": {"tool": "t", "declare": {"does": []}}, "B": {"tool": "t", "declare": {"does": []}}},
         "map.toml: B.tool: expected a tool declared once (entry A declares 't' too; map this entry onto it without "
         "declare), got 't'"),
        ({"A": {"declare": []}}, "map.toml: A.declare: expected the tool's declaration, as a scenario's [tools.NAME] "
                                 "table (does = [...], result, declared, latency), got a list of 0 items"),
    ]
    for data, expected in cases:
        with pytest.raises(TranscriptError) as info:
            parse_map(data, "map.toml")
        assert str(info.value) == expected
    # Another entry maps onto a declared tool by its name.
    lookup = [Done("c9", "Lookup", {"key": "mode"}, "fast")]
    imported = import_transcript("openai", transcript("chat", lookup), name="x",
                                 tool_map=parse_map(tomllib.loads(DECLARING_MAP), "map.toml"))
    assert imported.data["batches"][0]["calls"][0]["name"] == "get" and list(imported.data["tools"]) == ["get"]
    # Declared under the transcript's own name when the entry gives no `tool`.
    own = parse_map({"lookup": {"declare": {"does": []}}}, "map.toml")
    assert own.targets["lookup"].tool == "lookup" and "lookup" in own.declared
