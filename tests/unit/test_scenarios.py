"""Scenario files: every built-in loads; a malformed file names the file, the field and what was
expected; files are data and are never executed."""

from pathlib import Path

import pytest

from harness import find_scenario, get_scheduler, run, scenario_names
from harness.scenario import ScenarioError, UnknownScenarioError, load_scenario

REQUIRED = {"incident-triage", "compare-three-files", "config-clobber", "edit-then-test", "code-review"}


def test_required_scenarios_exist_and_load() -> None:
    assert set(scenario_names()) >= REQUIRED
    for name in scenario_names():
        sc = find_scenario(name)
        assert sc.name == name, "a scenario's name must match its file name"
        assert sc.description and sc.source


def test_code_review_has_two_batches() -> None:
    assert [b.label for b in find_scenario("code-review").batches] == ["review", "fix"]


def test_config_clobber_parallel_loses_an_update_that_serial_keeps() -> None:
    sc = find_scenario("config-clobber")
    serial = run(sc, get_scheduler("serial"), 1).final_files()
    differing = [s for s in range(1, 6) if run(sc, get_scheduler("parallel"), s).final_files() != serial]
    assert differing, "parallel should lose one of the two patches on some seed"


def test_unknown_scenario_lists_valid_names() -> None:
    with pytest.raises(UnknownScenarioError) as info:
        find_scenario("no-such")
    assert "config-clobber" in str(info.value) and "\n" not in str(info.value)


BASE = '''
name = "t"
[[batches]]
[[batches.calls]]
id = "a"
name = "read_file"
arguments = '{"path": "/x"}'
'''


@pytest.mark.parametrize("text, field, expected", [
    ("name = 5\n" + BASE.replace('name = "t"', ""), "name", "a non-empty string"),
    ("time_bound_ms = -1\n" + BASE, "time_bound_ms", "a positive integer"),
    ('name = "t"\nbatches = []\n', "batches", "a non-empty array of tables"),
    ('name = "t"\n', "batches", "a non-empty array of tables"),
    ("surprise = 1\n" + BASE, "surprise", "one of the keys"),
    (BASE + "surprise = 1\n", "batches[0].calls[0].surprise",
     "one of the keys args_from, arguments, check_arguments, depends_on, failure, id, latency, name"),
    (BASE.replace("arguments = '{\"path\": \"/x\"}'", "arguments = 42"), "batches[0].calls[0].arguments",
     "the raw JSON string"),
    (BASE.replace('id = "a"\n', ""), "batches[0].calls[0].id", "a non-empty string"),
    (BASE + '[[batches]]\n[[batches.calls]]\nid = "a"\nname = "x"\n', "batches[1].calls[0].id", "not used by another"),
    (BASE + '[world]\ncwd = "relative"\n', "world.cwd", "an absolute path"),
    (BASE + '[world.files]\n"/a" = 3\n', 'world.files."/a"', "a string"),
    (BASE + '[world]\nhardlinks = [["/nope", "/b"]]\n', "world.hardlinks[0][0]", "a path listed in world.files"),
    (BASE + '[world.files]\n"/a" = "x"\n"/a/b" = "y"\n', "world", "a consistent file tree"),
    (BASE + "[tools.read_file]\nlatency = { gaussian = 3 }\n", "tools.read_file.latency.gaussian",
     "one of the keys bimodal, choice, fixed"),
    (BASE + "[tools.read_file]\nlatency = { uniform = [9, 1] }\n", "tools.read_file.latency", "LOW <= HIGH"),
    (BASE + "[tools.read_file.declared]\nread_only = \"yes\"\n", "tools.read_file.declared.read_only", "true or false"),
    (BASE + "[tools.nonexistent_tool]\n", "tools.nonexistent_tool", "a new tool declared with its behaviour"),
    (BASE + "[tools.read_fiel]\nlatency = { fixed = 5 }\n", "tools.read_fiel", "did you mean 'read_file'"),
    (BASE + "[tools.audit_log]\ndoes = []\n[tools.audit_lgo]\nlatency = { fixed = 5 }\n", "tools.audit_lgo",
     "did you mean 'audit_log'"),  # a tool the same file declares is suggested too
    (BASE + "[tools.q]\ndoes = [{ op = \"sing\" }]\n", "tools.q.does[0].op", "one of read, write"),
    (BASE + "[tools.q]\ndoes = [{ op = \"read\" }]\n", "tools.q.does[0].path", "op 'read' needs path"),
    (BASE + "[tools.q]\ndoes = [{ op = \"read\", path = \"{p\" }]\n", "tools.q.does[0].path", "braces"),
    (BASE + "[tools.q]\ndoes = [{ op = \"wait\", at = 0.9 }, { op = \"wait\", at = 0.2 }]\n", "tools.q.does[1].at",
     "steps run in order"),
    (BASE + "[tools.q]\ndoes = [{ op = \"write\", path = \"/x\", content = \"c\", as = \"v\" }]\n",
     "tools.q.does[0].as", "no binding"),
    (BASE + "[tools.q]\ndoes = []\n[tools.q.declared]\nresource_keys = \"db\"\n", "tools.q.declared.resource_keys",
     "a list of key templates"),
    (BASE + "[tools.read_file]\ndoes = []\n", "tools.read_file.does", "keeps its behaviour"),
    # Named code is refused unless trusted, before it is imported (tests/unit/test_trust.py)...
    ("tools_module = \"no_such_module_xyz\"\n" + BASE, "tools_module", "run it with --trust-module no_such_module_xyz"),
    (BASE + "[tools.read_file.declared]\nside_effect = \"cosmic\"\n", "tools.read_file.declared.side_effect",
     "one of none, local, external"),
    ("name = [unclosed\n", "(syntax)", "valid TOML"),
    ("import os\nos.system('touch /tmp/pwned')\n", "(syntax)", "valid TOML"),
])
def test_malformed_file_names_file_field_and_expectation(tmp_path: Path, text: str, field: str, expected: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {field}: expected"), message
    assert expected in message
    assert "\n" not in message


def test_a_file_that_looks_like_code_is_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "executed"
    path = tmp_path / "evil.toml"
    path.write_text(f"__import__('pathlib').Path('{marker}').touch()\n")
    with pytest.raises(ScenarioError):
        load_scenario(path)
    assert not marker.exists()


def test_inline_table_arguments_and_per_call_latency(tmp_path: Path) -> None:
    path = tmp_path / "ok.toml"
    path.write_text('name = "ok"\n[[batches]]\n[[batches.calls]]\nid = "a"\nname = "web_search"\n'
                    'arguments = { query = "q" }\nlatency = { fixed = 7 }\n')
    sc = load_scenario(path)
    assert sc.calls[0].parsed_arguments() == {"query": "q"}
    assert run(sc, get_scheduler("serial"), 1).makespan_ms == 7


def test_declared_override_makes_a_tool_lie_without_changing_behaviour(tmp_path: Path) -> None:
    path = tmp_path / "lie.toml"
    path.write_text('name = "lie"\n[tools.terminal.declared]\nread_only = true\n'
                    '[[batches]]\n[[batches.calls]]\nid = "a"\nname = "terminal"\n'
                    'arguments = \'{"command": "echo x > /f"}\'\n')
    sc = load_scenario(path)
    assert sc.catalogue["terminal"].declared.read_only is True
    assert "/f" in run(sc, get_scheduler("serial"), 1).final.file_map


def test_a_typo_in_a_tool_name_is_a_load_error_naming_the_tool(tmp_path: Path) -> None:
    """It used to run, every call erroring, and pass."""
    from click.testing import CliRunner

    from harness.cli import main

    typo = tmp_path / "typo.toml"
    typo.write_text('name = "typo"\n[[batches]]\n[[batches.calls]]\nid = "a"\nname = "pacth"\n'
                    "arguments = '{\"path\": \"/x\"}'\n")
    result = CliRunner().invoke(main, ["run", str(typo)])
    assert result.exit_code == 2
    assert "typo.toml: batches[0].calls[0].name" in result.stderr and "did you mean 'patch'?" in result.stderr
    meant = tmp_path / "meant.toml"
    meant.write_text(typo.read_text().replace('name = "typo"', 'name = "meant"\nunknown_tools = ["pacth"]'))
    result = CliRunner().invoke(main, ["run", str(meant), "--format", "json"])
    assert result.exit_code == 0 and "unknown tool 'pacth'" in result.stdout
    with pytest.raises(ScenarioError, match="unknown_tools: expected names of tools the catalogue does not have"):
        load_scenario(_with(typo, 'unknown_tools = ["patch"]\n'))


def _with(path: Path, line: str) -> Path:
    changed = path.with_name("changed.toml")
    changed.write_text(line + path.read_text())
    return changed
