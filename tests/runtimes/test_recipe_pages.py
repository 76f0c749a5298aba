"""docs/recipes/ and harness/recipes/: each page shows its runtime's glue exactly as the package ships it,
and a recipe whose runtime is missing says what to install (no runtime needed)."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: page -> (module of harness.recipes, the runtime's top-level import names)
RECIPES = {"openai-agents": ("openai_agents", ("agents",)), "langgraph": ("langgraph", ("langchain_core", "langgraph")),
           "pydantic-ai": ("pydantic_ai", ("pydantic_ai",)), "smolagents": ("smolagents", ("smolagents",)),
           "autogen": ("autogen", ("autogen_agentchat", "autogen_core", "autogen_ext"))}

#: Recipe pages that ship no glue: their code is on the page whole, run by tests/docs/test_examples.py.
WHOLE_PAGES = {"mcp"}


def source(module: str) -> str:
    return (ROOT / "harness" / "recipes" / f"{module}.py").read_text()


def requirements(module: str) -> list[str]:
    """What the recipe's ImportError asks for: `runtime_missing(__name__, error, "pkg>=x", ...)`."""
    (asked,) = re.findall(r"runtime_missing\(__name__, error, ([^)]*)\)", source(module))
    return re.findall(r'"([^"]+)"', asked)


@pytest.mark.parametrize("page", sorted(RECIPES))
def test_the_page_shows_the_glue_the_package_ships(page: str) -> None:
    module = RECIPES[page][0]
    text = (ROOT / "docs" / "recipes" / f"{page}.md").read_text()
    block = text.split("```python\n", 1)[1].split("```", 1)[0]
    assert block == source(module)
    assert f"`harness/recipes/{module}.py`" in text and f"harness.recipes.{module}" in text


@pytest.mark.parametrize("module", sorted(m for m, _ in RECIPES.values()))
def test_the_glue_is_at_most_about_60_lines_of_code(module: str) -> None:
    body = source(module).split('"""', 2)[2]  # after the module docstring
    assert len([line for line in body.splitlines() if line.strip()]) <= 60


def test_every_recipe_has_a_page_and_the_package_no_other_module() -> None:
    shipped = {p.stem for p in (ROOT / "harness" / "recipes").glob("*.py")} - {"__init__"}
    assert shipped == {m for m, _ in RECIPES.values()}
    assert {p.stem for p in (ROOT / "docs" / "recipes").glob("*.md")} == set(RECIPES) | WHOLE_PAGES


@pytest.mark.parametrize("module", sorted(m for m, _ in RECIPES.values()))
def test_each_recipe_asks_for_a_runtime_the_runtimes_extra_installs(module: str) -> None:
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["runtimes"]
    asked = requirements(module)
    assert asked and set(asked) <= set(extra)


@pytest.mark.parametrize("page", sorted(RECIPES))
def test_a_missing_runtime_is_an_import_error_naming_the_extra(page: str, monkeypatch: pytest.MonkeyPatch) -> None:
    module, runtime = RECIPES[page]
    for name in [m for m in sys.modules if m.split(".")[0] in runtime] + list(runtime):
        monkeypatch.setitem(sys.modules, name, None)  # `import name` fails, as when it is not installed
    monkeypatch.delitem(sys.modules, f"harness.recipes.{module}", raising=False)
    with pytest.raises(ImportError) as raised:
        importlib.import_module(f"harness.recipes.{module}")
    asked = requirements(module)
    cause = raised.value.__cause__
    assert type(raised.value) is ImportError and isinstance(cause, ModuleNotFoundError)  # not a missing recipe
    assert str(raised.value) == (f"harness.recipes.{module} needs {' and '.join(asked)}, which could not be "
                                 f"imported ({cause}): pip install 'harness[runtimes]' (or pip install "
                                 f"{' '.join(repr(r) for r in asked)})")


def test_importing_harness_imports_no_recipe_and_no_runtime() -> None:
    code = ("import sys, harness, harness.recipes, harness.scheduling, harness.policies, harness.bridges, harness.cli\n"
            "print(sorted(m for m in sys.modules if m.startswith('harness.recipes.') or m.split('.')[0] in "
            f"{sorted({n for _, names in RECIPES.values() for n in names})!r}))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "[]\n", "")


def test_json_object_reads_the_models_arguments_and_leaves_anything_else_to_the_runtime() -> None:
    from harness.recipes import json_object

    assert json_object('{"service_name": "order-service", "minutes": 30}') == {"service_name": "order-service",
                                                                                 "minutes": 30}
    assert json_object("[1, 2]") == json_object('{"service_name": ') == json_object("null") == {}
