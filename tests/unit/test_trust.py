"""One trust rule for every file (issue 26): a scenario file imports only the modules the user named
(`--trust-module`, `--tools`, `[tool.harness] trusted-modules`, `trust=` in Python), on every command
that loads one, and the refusal is one line naming the file, the field, the module and the flag;
reproducers follow the same rule; `python -m harness` never imports a module from the current
directory in place of the trusted one."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import get_scheduler, run
from harness.cli import main
from harness.reproducers.file import ReproducerError, loads, reproducer_of, to_json
from harness.scenario import ScenarioError, find_scenario, load_scenario
from harness.scenario.trust import Trust, UntrustedCode, project_modules
from harness.testing import SchedulerCheckFailed, check_scheduler

TOOLS = """
import pathlib
pathlib.Path(__file__).with_suffix(".imported").touch()  # the proof it was imported

from harness.tools import Declared, ToolSpec


def ping(args, io):
    yield 0.1
    return {"ok": True}


def decide(transcript):
    return {"type": "final_answer", "content": "done"}


TOOLS = [ToolSpec("ping", "Ping", Declared(read_only=True), ping)]
"""

SCENARIO = """
name = "own-tools"
tools_module = "{module}"
[[batches]]
[[batches.calls]]
id = "a"
name = "ping"
[[batches.calls]]
id = "b"
name = "ping"
"""


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A tools module of its own name (imported modules stay in sys.modules), importable from lib/."""
    name = "trusted_tools_" + "".join(c if c.isalnum() else "_" for c in tmp_path.name)
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / f"{name}.py").write_text(TOOLS)
    monkeypatch.syspath_prepend(str(lib))
    monkeypatch.chdir(tmp_path)  # no pyproject.toml of the checkout's above it
    return name


def imported(tmp_path: Path, module: str) -> bool:
    return (tmp_path / "lib" / f"{module}.imported").exists()


def scenario_file(tmp_path: Path, module: str, text: str = SCENARIO) -> Path:
    directory = tmp_path / "downloads"
    directory.mkdir(exist_ok=True)
    path = directory / "own.toml"
    path.write_text(text.format(module=module))
    return path


def invoke(*args: str) -> tuple[int, str, str]:
    done = CliRunner().invoke(main, list(args))
    return done.exit_code, done.stdout, done.stderr


def assert_refused(code: int, stdout: str, stderr: str, path: Path, field: str, module: str) -> None:
    assert code == 2, stdout + stderr
    assert stderr.startswith(f"harness: {path}: {field}: expected a module you trust, got {module!r}"), stderr
    assert f"--trust-module {module} if you trust that code" in stderr and stderr.count("\n") == 1


@pytest.mark.parametrize("command", [
    ["run", "{path}"],
    ["explore", "{path}", "--scheduler", "parallel", "--runs", "3", "--no-save"],
    ["sweep", "--scenarios", "{path}", "--runs", "2", "--processes", "1"],
    ["compare", "{path}", "--runs", "2", "--processes", "1"],
    ["matrix", "--scenarios", "{path}", "--schedulers", "serial"],
])
def test_every_command_runs_a_named_module_only_when_trusted(tmp_path: Path, module: str,
                                                             command: list[str]) -> None:
    path = scenario_file(tmp_path, module)
    args = [arg.format(path=path) for arg in command]
    assert_refused(*invoke(*args), path, "tools_module", module)
    assert not imported(tmp_path, module)
    code, stdout, stderr = invoke(*args, "--trust-module", module)
    assert code == 0 and stderr == "", stdout + stderr
    assert imported(tmp_path, module)


def test_tools_and_a_package_name_trust_too(tmp_path: Path, module: str) -> None:
    path = scenario_file(tmp_path, module)
    code, stdout, stderr = invoke("run", str(path), "--tools", module)
    assert code == 0 and stderr == "", stdout + stderr
    assert f"--tools {module}" in stdout  # the reproduce line carries it
    code, stdout, stderr = invoke("run", str(path), "--trust-module", module, "--seed", "4")
    assert code == 0 and f"--seed 4 --trust-module {module}" in stdout, stdout + stderr
    package = scenario_file(tmp_path, module, SCENARIO.replace('"{module}"', '"{module}.sub"'))
    assert Trust(("x",)).allows("x.sub") and not Trust(("x",)).allows("xy")
    with pytest.raises(UntrustedCode, match=rf"got '{module}.sub'"):
        load_scenario(package, trust=[f"{module}.other"])


def test_check_scheduler_takes_trust_names_or_modules(tmp_path: Path, module: str) -> None:
    path = scenario_file(tmp_path, module)
    with pytest.raises(ScenarioError, match=rf"tools_module: expected a module you trust, got '{module}'.*trust="):
        check_scheduler("serial", scenarios=[path], generated=False)
    assert not imported(tmp_path, module)
    assert check_scheduler("serial", scenarios=[path], generated=False, trust=[module]).scenarios
    assert check_scheduler("serial", scenarios=[str(path)], generated=False,
                           trust=importlib.import_module(module)).scenarios


RACY = """
name = "own-racy"
tools_module = "{module}"
[world]
files = {{ "/c" = "a b" }}
[[batches]]
[[batches.calls]]
id = "x"
name = "patch"
arguments = '{{"path": "/c", "old": "a", "new": "A"}}'
[[batches.calls]]
id = "y"
name = "patch"
arguments = '{{"path": "/c", "old": "b", "new": "B"}}'
"""


def test_check_scheduler_s_explore_line_carries_the_trust_it_needed(tmp_path: Path, module: str) -> None:
    racy = scenario_file(tmp_path, module, RACY)
    with pytest.raises(SchedulerCheckFailed) as info:
        check_scheduler("parallel", scenarios=[racy], generated=False, trust=[module])
    lines = [line for line in str(info.value).splitlines() if "harness explore" in line]
    assert lines and all(f"--trust-module {module}" in line for line in lines), str(info.value)


@pytest.mark.parametrize(("snippet", "field"), [
    ('model = "{module}:decide"\n', "model"),
    ('[model]\npython = "{module}:decide"\n', "model.python"),
    ('loop = "{module}:Loop"\n[model]\nrules = [{{ action = "final_answer", text = "x" }}]\n', "loop"),
    ('loop = {{ policy = "{module}:Loop" }}\n[model]\nrules = [{{ action = "final_answer", text = "x" }}]\n',
     "loop.policy"),
    ('[[agents]]\nname = "a"\nmodel = "{module}:decide"\n', "agents[0].model"),
    ('[[agents]]\nname = "a"\nloop = "{module}:Loop"\n[agents.model]\nrules = [{{ action = "final_answer", '
     'text = "x" }}]\n', "agents[0].loop"),
    ('tools_module = ["json", "{module}"]\n[[batches]]\ncalls = [{{ id = "a", name = "read_file", arguments = '
     '\'{{"path": "/x"}}\' }}]\n', "tools_module[0]"),
])
def test_every_field_that_names_code_is_held_to_the_rule(tmp_path: Path, module: str, snippet: str,
                                                         field: str) -> None:
    path = scenario_file(tmp_path, module, 'name = "s"\n' + snippet)
    with pytest.raises(UntrustedCode) as info:
        load_scenario(path)
    assert info.value.field == field and str(info.value).startswith(f"{path}: {field}: expected a module you trust")
    assert not imported(tmp_path, module)


def test_the_project_pyproject_trusts_for_every_command(tmp_path: Path, module: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    path = scenario_file(tmp_path, module)
    project = tmp_path / "project"
    (project / "src" / "deep").mkdir(parents=True)
    (project / "pyproject.toml").write_text(f'[project]\nname = "p"\n[tool.harness]\ntrusted-modules = ["{module}"]\n')
    monkeypatch.chdir(project / "src" / "deep")  # the nearest pyproject.toml above the current directory
    assert project_modules() == (module,)
    assert load_scenario(path).tools_modules == (module,)
    code, stdout, stderr = invoke("sweep", "--scenarios", str(path), "--runs", "1", "--processes", "1")
    assert code == 0 and stderr == "", stdout + stderr
    (project / "src" / "pyproject.toml").write_text("[project]\nname = \"inner\"\n")  # nearer, trusts nothing
    with pytest.raises(UntrustedCode):
        load_scenario(path)
    (project / "src" / "pyproject.toml").write_text('[tool.harness]\ntrusted-modules = "oops"\n')
    code, _, stderr = invoke("run", str(path))
    assert code == 2 and "pyproject.toml: tool.harness.trusted-modules: expected a list of module" in stderr, stderr


def test_a_reproducer_follows_the_same_rule(tmp_path: Path, module: str, monkeypatch: pytest.MonkeyPatch) -> None:
    scenario = load_scenario(scenario_file(tmp_path, module), trust=[module])
    result = run(scenario, get_scheduler("parallel"), 1)
    text = to_json(reproducer_of(result, "parallel", "x", "y", "test"), version="t")
    with pytest.raises(ReproducerError, match=rf"scenario.tools_module(\[0\])?: expected a module you trust, got "
                                              rf"'{module}'"):
        loads(text, "r.json")
    assert loads(text, "r.json", trust=[module]).run().fingerprint == result.fingerprint
    (tmp_path / "pyproject.toml").write_text(f'[tool.harness]\ntrusted-modules = ["{module}"]\n')
    assert loads(text, "r.json").run().fingerprint == result.fingerprint


def test_built_in_scenarios_need_no_trust() -> None:
    assert find_scenario("incident-ticket-notify").agent is not None


def test_python_m_harness_never_imports_from_the_current_directory(tmp_path: Path) -> None:
    """The trusted module is the one on PYTHONPATH; a same-named file beside a downloaded scenario
    (the current directory of `python -m harness`) is never imported in its place."""
    name = "shadowed_tools"
    lib, downloads = tmp_path / "lib", tmp_path / "downloads"
    lib.mkdir()
    downloads.mkdir()
    (lib / f"{name}.py").write_text(TOOLS)
    (downloads / f"{name}.py").write_text(TOOLS.replace('with_suffix(".imported")', 'with_suffix(".shadow")'))
    (downloads / "s.toml").write_text(SCENARIO.format(module=name))
    env = {**os.environ, "PYTHONPATH": str(lib)}
    for args in (["s.toml"], ["s.toml", "--trust-module", name]):
        done = subprocess.run([sys.executable, "-m", "harness", "run", *args], cwd=downloads, env=env,
                              capture_output=True, text=True, timeout=120)
        assert not (downloads / f"{name}.shadow").exists(), done.stdout + done.stderr
    assert done.returncode == 0 and (lib / f"{name}.imported").exists(), done.stdout + done.stderr


def test_a_trusted_sweep_imports_in_its_worker_processes(tmp_path: Path, module: str) -> None:
    path = scenario_file(tmp_path, module)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "lib")}
    base = [sys.executable, "-m", "harness", "sweep", "--scenarios", f"{path},{path}", "--schedulers",
            "serial,parallel", "--runs", "3", "--processes", "2", "--out", str(tmp_path / "rows.jsonl")]
    done = subprocess.run(base, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and f"--trust-module {module}" in done.stderr, done.stdout + done.stderr
    done = subprocess.run([*base, "--trust-module", module], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and done.stderr == "", done.stdout + done.stderr
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and all(row["passed"] for row in rows if row["scheduler"] == "serial")
