"""A user's own tools, from outside the repository: a package with a Python tool (named by
`tools_module`, by `--tools`, or shipped through the `harness.tools` entry-point group) and a scenario
file that declares a second tool in TOML. `harness explore` finds the race between them, the printed
commands reproduce it, and a saved reproducer replays in a fresh process, or names the missing module."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from harness import find_scenario, get_scheduler, run
from harness.reproducers.replay import ReproducerError, load, reproducer_of, to_json
from harness.scenario import ScenarioError
from harness.scenario.dump import NotSerializable, scenario_to_data
from harness.tools import BUILTIN, Declared, ToolSpec
from tests.helpers import harness_process

TOOLS_PY = '''
"""acme's deploy tool: a read-modify-write of the manifest."""
from harness.faults.latency import Fixed
from harness.tools import Declared, ResourceKeys, SideEffect, ToolSpec


def deploy(args, io):
    manifest = io.read("/srv/manifest.txt")
    yield 1.0
    io.write("/srv/manifest.txt", manifest + f"{args['service']}={args['version']}\\n")
    return {"deployed": args["service"]}


TOOLS = [ToolSpec("deploy", "Deploy a service version",
                  Declared(read_only=False, side_effect=SideEffect.LOCAL, idempotent=True,
                           resource_keys=ResourceKeys(templates=("service:{service}",))),
                  deploy, Fixed(400))]
'''

SCENARIO = '''
name = "acme-deploy"
{module_line}

[world]
files = {{ "/srv/manifest.txt" = "db=1\\n" }}

[tools.status]
description = "Show what is deployed"
latency = {{ fixed = 200 }}
result = {{ manifest = "{{text}}" }}
[tools.status.declared]
read_only = true
side_effect = "none"
[[tools.status.does]]
op = "read"
path = "/srv/manifest.txt"
as = "text"

[[batches]]
[[batches.calls]]
id = "deploy-api"
name = "deploy"
arguments = '{{"service": "api", "version": "2"}}'
[[batches.calls]]
id = "check"
name = "status"
arguments = '{{}}'
'''


@pytest.fixture
def package(tmp_path: Path) -> Path:
    """`acme` in its own tree (not installed), and a dist-info that registers it as a catalogue."""
    src = tmp_path / "src"
    (src / "acme").mkdir(parents=True)
    (src / "acme" / "__init__.py").write_text("")
    (src / "acme" / "tools.py").write_text(TOOLS_PY)
    info = src / "acme_tools-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-tools\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[harness.tools]\nacme = acme.tools\n")
    return src


harness = harness_process


@pytest.mark.slow
@pytest.mark.parametrize("how", ["tools_module", "--tools", "entry point"])
def test_explore_finds_the_race_between_a_python_and_a_declared_tool_and_it_replays(
        package: Path, tmp_path: Path, how: str) -> None:
    module_line = {"tools_module": 'tools_module = "acme.tools"', "--tools": "",
                   "entry point": 'tools_module = "acme"'}[how]
    scenario_file = tmp_path / "work" / "acme.toml"
    scenario_file.parent.mkdir()
    scenario_file.write_text(SCENARIO.format(module_line=module_line))
    # A module the file names runs only trusted (an installed catalogue is trusted by being installed).
    extra = {"tools_module": ["--trust-module", "acme.tools"], "--tools": ["--tools", "acme.tools"],
             "entry point": []}[how]
    if how == "tools_module":
        refused = harness("explore", str(scenario_file), "--scheduler", "parallel", "--no-save", cwd=tmp_path,
                          pythonpath=package)
        assert refused.returncode == 2 and "run it with --trust-module acme.tools" in refused.stderr
    found = harness("explore", str(scenario_file), "--scheduler", "parallel", "--save-dir", str(tmp_path / "fx"),
                    "--check-determinism", *extra, cwd=tmp_path, pythonpath=package)
    assert found.returncode == 1, found.stdout + found.stderr
    assert "FOUND stale-read" in found.stdout and found.stderr == ""
    assert "self-check: replays in this process and in a fresh one" in found.stdout
    # The header line is itself a command that finds it again.
    header = found.stdout.splitlines()[0].split(":")[0].split()
    again = harness(*header[1:], "--save-dir", str(tmp_path / "fx2"), cwd=tmp_path, pythonpath=package)
    assert "FOUND stale-read" in again.stdout, again.stdout + again.stderr
    saved = re.search(r"^replay: (?:PYTHONPATH=(\S+) )?(harness replay (\S+).*)$", found.stdout, re.M)
    assert saved is not None
    printed_path, command, file = saved.group(1), saved.group(2).split(), saved.group(3)
    # The reproducer imports nothing by itself: the printed command trusts the one module it needs,
    # and names the PYTHONPATH it came from (an installed entry point needs neither).
    assert command[3:] == ([] if how == "entry point" else ["--trust-module", "acme.tools"])
    assert printed_path == (None if how == "entry point" else str(package))
    replayed = harness(*command[1:], cwd=tmp_path, pythonpath=Path(printed_path) if printed_path else package)
    recorded = json.loads(Path(file).read_text())
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr  # it reproduces the violation
    assert f"reproduced: same fingerprint {recorded['fingerprint'][:16]}" in replayed.stdout
    assert recorded["scenario"]["tools"]["status"]["does"][0]["path"] == "/srv/manifest.txt"
    assert recorded["scenario"]["tools_module"] == (["acme"] if how == "entry point" else ["acme.tools"])
    # A run's reproduce line carries --tools when the module came from the command line.
    ran = harness("run", str(scenario_file), "--scheduler", "parallel", *extra, cwd=tmp_path, pythonpath=package)
    line = re.search(r"^reproduce: (?:PYTHONPATH=(\S+) )?(harness .+)$", ran.stdout, re.M)
    assert line is not None and ran.returncode == 1
    assert line.group(1) == (None if how == "entry point" else str(package))  # as the replay line
    rerun = harness(*line.group(2).split()[1:], cwd=tmp_path, pythonpath=package)
    assert rerun.returncode == 1 and "stale-read" in rerun.stdout
    # Without the package, replay says which module is missing (exit 2, no traceback).
    missing = harness("replay", file, "--trust-module", "acme", cwd=tmp_path, pythonpath=None)
    assert missing.returncode == 2
    assert "tools_module" in missing.stderr and "no module named 'acme'" in missing.stderr
    assert "Traceback" not in missing.stderr
    if how != "entry point":  # an installed catalogue is trusted; a module the file names is not
        untrusted = harness("replay", file, cwd=tmp_path, pythonpath=package)
        assert untrusted.returncode == 2 and "--trust-module acme.tools" in untrusted.stderr


def test_the_installed_catalogue_is_listed_and_usable_by_name(package: Path, tmp_path: Path) -> None:
    listed = harness("list", "tools", "--tools", "acme", cwd=tmp_path, pythonpath=package)
    assert listed.returncode == 0, listed.stderr
    assert re.search(r"^deploy\s+Deploy a service version$", listed.stdout, re.M)
    assert "(installed catalogue: acme; list it with --tools acme)" in listed.stdout


def test_a_scenario_built_in_python_from_a_module_names_that_module(package: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    monkeypatch.syspath_prepend(str(package))
    from acme.tools import TOOLS  # type: ignore[import-not-found]

    scenario_file = tmp_path / "s.toml"
    scenario_file.write_text(SCENARIO.format(module_line=""))
    with pytest.raises(ScenarioError, match="a known tool"):
        find_scenario(str(scenario_file))  # `deploy` is nobody's until a module is named
    base = find_scenario(str(scenario_file), tools_modules=("acme.tools",))
    # The same workload assembled by hand in Python, with the module's ToolSpec put in directly.
    handmade = type(base)(**{**base.__dict__, "tools_modules": (),
                              "catalogue": base.catalogue.replace_tool(TOOLS[0])})
    assert scenario_to_data(handmade)["tools_module"] == ["acme.tools"]
    result = run(handmade, get_scheduler("parallel"), 3)
    reproducer = reproducer_of(result, "parallel", "stale-read", "serializability", "test")
    path = tmp_path / "r.json"
    path.write_text(to_json(reproducer, version="test"))
    with pytest.raises(ReproducerError, match=r"--trust-module acme\.tools"):
        load(path)
    assert load(path, trust=("acme",)).run().fingerprint == result.fingerprint


def test_a_python_tool_outside_any_module_cannot_be_saved_and_says_why() -> None:
    def adhoc(args, io):  # type: ignore[no-untyped-def]
        yield 1.0
        return None

    spec = ToolSpec("adhoc", "defined in a test", Declared(read_only=True), adhoc)
    base = find_scenario("config-clobber")
    scenario = type(base)(**{**base.__dict__, "catalogue": BUILTIN.replace_tool(spec)})
    with pytest.raises(NotSerializable, match="outside a tools module"):
        scenario_to_data(scenario)


def test_a_module_without_tools_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "empty_tools_mod.py").write_text(textwrap.dedent("VALUE = 1\n"))
    monkeypatch.syspath_prepend(str(tmp_path))
    from harness.scenario import scenario_from_data

    data = {"name": "t", "tools_module": "empty_tools_mod",
            "batches": [{"calls": [{"id": "a", "name": "read_file", "arguments": "{}"}]}]}
    with pytest.raises(ScenarioError, match="expected a TOOLS attribute"):
        scenario_from_data(data, "s.toml", trust=["empty_tools_mod"])
    with pytest.raises(ReproducerError, match="format"):
        from harness.reproducers.replay import loads

        loads("{}")
