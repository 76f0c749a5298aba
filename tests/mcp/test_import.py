"""`harness tools import mcp`: a real stdio MCP server (tests/mcp/server_fixture.py, the SDK's FastMCP)
listed into a catalogue whose hints match, which a scenario runs over; bad input is one line, exit 2."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import run
from harness.cli import main
from harness.oracles import check
from harness.policies import get_scheduler
from harness.scenario import load_scenario
from harness.tools.hints import McpHints

pytest.importorskip("mcp")

SERVER = Path(__file__).with_name("server_fixture.py")
SCENARIO = """\
name = "notes"
tools_from = "catalogue.toml"
[world]
cwd = "/notes"
files = { "/notes/a.md" = "hello\\n", "/mcp/ticket/T-1" = "" }
[tools.read_note]
latency = 300
[[batches]]
[[batches.calls]]
id = "read-a"
name = "read_note"
arguments = '{"path": "a.md"}'
[[batches.calls]]
id = "status"
name = "set_status"
arguments = '{"ticket_id": "T-1", "status": "done"}'
[[batches.calls]]
id = "post"
name = "send_message"
arguments = '{"channel": "ops", "text": "deployed"}'
"""


def _import(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["tools", "import", "mcp", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("mcp") / "catalogue.toml"
    code, _, err = _import("--out", str(out), "--timeout", "120", "--", sys.executable, str(SERVER))
    assert code == 0, err
    assert err == f"harness: wrote {out}: 4 tools\n"
    return out


def test_the_hints_are_the_servers_and_absent_ones_stay_absent(catalogue: Path) -> None:
    tools = tomllib.loads(catalogue.read_text())["tools"]
    assert list(tools) == ["read_note", "delete_note", "set_status", "send_message"]
    assert tools["read_note"]["annotations"] == {"readOnlyHint": True, "openWorldHint": False}
    assert tools["delete_note"]["annotations"] == {"readOnlyHint": False, "destructiveHint": True,
                                                   "idempotentHint": False}
    assert tools["set_status"]["annotations"] == {"readOnlyHint": False, "destructiveHint": False,
                                                  "idempotentHint": True, "openWorldHint": False}
    assert tools["send_message"]["annotations"] == {}
    assert {tool["server"] for tool in tools.values()} == {"fixture-files"}  # its serverInfo name, for MCP faults
    schema = json.loads(tools["delete_note"]["input_schema"])
    assert schema["required"] == ["path"] and set(schema["properties"]) == {"path", "recursive"}


def test_the_behaviour_skeleton_is_guessed_from_argument_names_and_says_so(catalogue: Path) -> None:
    text = catalogue.read_text()
    tools = tomllib.loads(text)["tools"]
    assert tools["read_note"]["does"] == [{"op": "read", "path": "{path}", "as": "path_content"}]
    assert tools["delete_note"]["does"][0] == {"op": "delete", "path": "{path}"}
    assert tools["set_status"]["does"] == [{"op": "write", "path": "/mcp/ticket/{ticket_id}",
                                            "content": "set_status {status}\n"}]
    # No hints: open world by the spec's default, so its guess is an external effect.
    assert tools["send_message"]["does"][0]["op"] == "ledger"
    assert text.count("# guess:") == sum(len(t["does"]) for t in tools.values())


def test_a_scenario_over_the_catalogue_runs_and_reads_the_hints(catalogue: Path, tmp_path: Path) -> None:
    (tmp_path / "catalogue.toml").write_text(catalogue.read_text())
    (tmp_path / "notes.toml").write_text(SCENARIO)
    scenario = load_scenario(tmp_path / "notes.toml")
    read_note = scenario.catalogue["read_note"]
    assert read_note.declared.hints == McpHints(read_only=True, open_world=False)
    assert read_note.declared.read_only and read_note.latency.to_json() == {"fixed": 300}
    assert scenario.catalogue["send_message"].declared.hints == McpHints()
    assert not scenario.catalogue["send_message"].declared.read_only  # absent: the worst case
    result = run(scenario, get_scheduler("parallel"), seed=5)
    assert result.status == "completed" and result.makespan_ms == 300
    assert all(verdict.ok for verdict in check(result))
    assert scenario.catalogue["read_note"].parameters is not None


def test_a_streamable_http_server_is_listed_by_url() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, str(SERVER), str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:  # the server takes a moment to listen: a refused connection is exit 2 until it does
            code, out, err = _import("--url", f"http://127.0.0.1:{port}/mcp", "--timeout", "5")
            if code == 0 or time.monotonic() > deadline:
                break
            assert "All connection attempts failed" in err
            time.sleep(0.5)
        assert code == 0, err
        assert list(tomllib.loads(out)["tools"]) == ["read_note", "delete_note", "set_status", "send_message"]
    finally:
        server.terminate()
        server.wait(10)


def test_from_a_saved_listing_needs_no_server(tmp_path: Path) -> None:
    listing = {"jsonrpc": "2.0", "id": 1, "result": {"tools": [
        {"name": "search", "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}},
                                           "required": ["query"]},
         "annotations": {"readOnlyHint": True}}]}}
    saved = tmp_path / "tools.json"
    saved.write_text(json.dumps(listing))
    code, out, err = _import("--from", str(saved))
    assert (code, err) == (0, "")
    assert tomllib.loads(out)["tools"]["search"] == {
        "input_schema": '{"properties": {"query": {"type": "string"}}, "required": ["query"], "type": "object"}',
        "annotations": {"readOnlyHint": True}, "does": []}


@pytest.mark.parametrize(("args", "message"), [
    (["--", "no-such-mcp-server"], "harness: no-such-mcp-server: cannot start the server ("),
    (["--", sys.executable, "-c", "import sys; print('no config', file=sys.stderr); sys.exit(3)"],
     "the server did not list its tools (MCPError: Connection closed); its stderr ends: no config"),
    (["--timeout", "1", "--", sys.executable, "-c", "import time; time.sleep(60)"],
     "no tools/list answer within 1 s"),
    ([], "harness: give one source: -- COMMAND ARGS... (a stdio server), --url URL or --from FILE"),
])
def test_a_server_that_fails_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    code, out, err = _import(*args)
    assert code == 2 and out == ""
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(("text", "message"), [
    ('{"tools": [', "expected the JSON of a tools/list result, got invalid JSON"),
    ('{"tools": 3}', 'expected a tools/list result ({"tools": [...]}), got {"tools": 3}'),
    ('{"tools": [{"description": "x"}]}', "tools[0]: expected a tool with a name"),
])
def test_a_malformed_listing_is_one_line_and_exit_2(tmp_path: Path, text: str, message: str) -> None:
    saved = tmp_path / "tools.json"
    saved.write_text(text)
    code, _, err = _import("--from", str(saved))
    assert code == 2 and message in err and err.count("\n") == 1


def test_a_stalled_server_is_stopped_when_the_import_gives_up(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    stall = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    code, _, _ = _import("--timeout", "1", "--", sys.executable, "-c", stall)
    assert code == 2
    pid = int(pid_file.read_text())
    alive = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True).stdout.strip()
    assert alive in ("", "Z"), f"the server {pid} outlived the import ({alive})"


def test_out_refuses_a_file_it_did_not_write(tmp_path: Path) -> None:
    out = tmp_path / "mine.toml"
    out.write_text("name = 'mine'\n")
    saved = tmp_path / "tools.json"
    saved.write_text('{"tools": []}')
    code, _, err = _import("--from", str(saved), "--out", str(out))
    assert code == 2 and "did not write it; refusing to overwrite it" in err
    assert out.read_text() == "name = 'mine'\n"


def test_importing_harness_does_not_import_the_sdk() -> None:
    code = "import sys, harness, harness.scenario, harness.tools.mcp_catalogue; print('mcp' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


def test_a_saved_listing_gives_the_catalogue_the_live_server_gives(catalogue: Path) -> None:
    code, out, _ = _import("--from", str(SERVER.with_name("tools.json")), "--server", "fixture-files")
    assert code == 0
    live = catalogue.read_text().splitlines()[2:]  # after the header and the line naming the source
    assert out.splitlines()[1:] == live


@pytest.mark.parametrize(("name", "guessed"), [
    ("path", True), ("file_path", True), ("filePath", True), ("ticket_id", True), ("ticketId", True),
    ("profile", False), ("valid", False), ("paid", False), ("monkey", False), ("username", False),
])
def test_only_a_word_at_a_name_boundary_makes_a_guess(name: str, guessed: bool) -> None:
    # With the whole pattern case-insensitive, the camelCase boundary held between any two letters:
    # `profile` was guessed a file and `valid` a record.
    from harness.tools.hints import McpHints
    from harness.tools.mcp_catalogue import _guess

    schema = {"properties": {name: {"type": "string"}}, "required": [name]}
    assert bool(_guess("tool", schema, McpHints(read_only=True, open_world=False))) is guessed
