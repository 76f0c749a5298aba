"""Fuzzing the trust rule (issue 26): built-in scenarios with code-naming fields set to modules nobody
trusted never import them, and `from_dir` paths built from `..`, absolute paths and symlinks never
read outside the scenario file's directory. Every outcome is a load or a clean `ScenarioError`.
The CI profile runs a bounded number of examples; `nox -s fuzz` (HARNESS_FUZZ_EXAMPLES=10000) more.
"""

from __future__ import annotations

import copy
import json
import os
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.scenario import ScenarioError, load_scenario, scenario_from_data
from harness.scenario.library import builtin_dir
from harness.scenario.trust import Trust, UntrustedCode

EXAMPLES = int(os.environ.get("HARNESS_FUZZ_EXAMPLES", "40"))
SCENARIOS = {p.stem: tomllib.loads(p.read_text()) for p in sorted(builtin_dir().glob("*.toml"))}
#: Modules that say so when imported: none may be, however a file names it.
BAITS = [f"fuzz_bait_{i}" for i in range(4)]
SECRET = "SECRET-fuzz-outside"


@pytest.fixture(scope="module")
def baits(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    lib = tmp_path_factory.mktemp("baits")
    (lib / "fuzz_bait_pkg").mkdir()
    for name in [*BAITS, "fuzz_bait_pkg/__init__", "fuzz_bait_pkg/tools"]:
        (lib / f"{name}.py").write_text(f"import pathlib\npathlib.Path({str(lib)!r}, 'imported').touch()\n"
                                        "TOOLS = []\ndef decide(t):\n    return {}\nLoop = decide\n")
    sys.path.insert(0, str(lib))
    yield lib
    sys.path.remove(str(lib))


MODULES = st.sampled_from([*BAITS, "fuzz_bait_pkg", "fuzz_bait_pkg.tools"])


@st.composite
def naming_code(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    """A built-in scenario with one field set to name a bait module (models and loops are imported
    when the scenario runs, tool modules when it loads: each is refused when it loads)."""
    data = copy.deepcopy(SCENARIOS[draw(st.sampled_from(sorted(SCENARIOS)))])
    module = draw(MODULES)
    spec = f"{module}:{draw(st.sampled_from(['decide', 'Loop', 'x']))}"
    where = draw(st.sampled_from(["tools_module", "tools_list", "model", "model.python", "loop", "loop.policy",
                                  "agents.model", "agents.loop"]))
    if where == "tools_module":
        data["tools_module"] = module
    elif where == "tools_list":
        data["tools_module"] = [*draw(st.lists(st.sampled_from(["", " "]), max_size=2)), module]  # blanks: not code
    elif where == "model":
        data["model"] = spec
    elif where == "model.python":
        data["model"] = {"python": spec, "task": "t"}
    elif where.startswith("loop"):
        data["model"] = data.get("model") or {"rules": [{"action": "final_answer", "text": "x"}]}
        data["loop"] = spec if where == "loop" else {"policy": spec}
    else:
        agent: dict[str, Any] = {"name": "a", "model": spec if where == "agents.model" else
                                 {"rules": [{"action": "final_answer", "text": "x"}]}}
        if where == "agents.loop":
            agent["loop"] = spec
        data["agents"] = [agent]
    return data, module


@settings(max_examples=EXAMPLES)
@given(naming_code())
def test_a_file_naming_code_nobody_trusted_imports_nothing(baits: Path, case: tuple[dict[str, Any], str]) -> None:
    data, module = case
    with pytest.raises(UntrustedCode) as info:  # refused before anything is imported, naming the module
        scenario_from_data(data, "fuzz.toml", trust=Trust(("harness_unrelated",)))
    assert str(info.value).startswith("fuzz.toml: ") and info.value.module == module, info.value
    assert not (baits / "imported").exists(), f"{module} was imported from {data}"
    assert not any(name.startswith("fuzz_bait") for name in sys.modules)


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """root/outside/secret.txt, root/a/b/ (the scenario's directory) with tree/ and links out of it."""
    root = tmp_path_factory.mktemp("layout")
    (root / "outside").mkdir()
    (root / "outside" / "secret.txt").write_text(SECRET)
    home = root / "a" / "b"
    (home / "tree" / "sub").mkdir(parents=True)
    (home / "tree" / "sub" / "ok.txt").write_text("inside\n")
    os.symlink(root / "outside", home / "out-link")
    os.symlink("../../outside", home / "tree" / "rel-link")
    os.symlink(home / "tree", home / "in-link")
    return home


BATCH = '[[batches]]\ncalls = [{ id = "a", name = "read_file", arguments = \'{"path": "/t"}\' }]\n'
PARTS = st.sampled_from(["..", ".", "tree", "sub", "out-link", "in-link", "rel-link", "outside", "a", "b", ""])


@st.composite
def from_dirs(draw: st.DrawFn, home: Path) -> str:
    parts = draw(st.lists(PARTS, min_size=1, max_size=6))
    start = draw(st.sampled_from(["", "", "/", str(home) + "/", str(home.parent.parent) + "/"]))
    return start + "/".join(parts)


@settings(max_examples=EXAMPLES)
@given(st.data())
def test_from_dir_never_reads_outside_the_file_s_directory(layout: Path, data: st.DataObject) -> None:
    path_text = data.draw(from_dirs(layout))
    scenario_file = layout / "s.toml"
    scenario_file.write_text(f'name = "s"\n[world]\nfrom_dir = {{ path = {json.dumps(path_text)}, into = "/t" }}\n'
                             + BATCH)
    try:
        scenario = load_scenario(scenario_file)
    except ScenarioError as exc:
        assert str(exc).startswith(f"{scenario_file}: "), exc
        return
    assert SECRET not in "".join(content for _, content in scenario.world.files), path_text
    assert scenario.embedded is not None and Path(scenario.embedded.root).is_relative_to(layout.resolve())
