"""docs/recipes/: each page shows its runtime's glue exactly as the tests run it (no runtime needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = {"openai-agents": "openai_agents_glue", "langgraph": "langgraph_glue", "pydantic-ai": "pydantic_ai_glue",
         "smolagents": "smolagents_glue"}


@pytest.mark.parametrize("page", sorted(PAGES))
def test_the_page_shows_the_glue_the_tests_run(page: str) -> None:
    text = (ROOT / "docs" / "recipes" / f"{page}.md").read_text()
    block = text.split("```python\n", 1)[1].split("```", 1)[0]
    assert block == (ROOT / "tests" / "runtimes" / f"{PAGES[page]}.py").read_text()


@pytest.mark.parametrize("module", sorted(PAGES.values()))
def test_the_glue_is_at_most_about_60_lines_of_code(module: str) -> None:
    text = (ROOT / "tests" / "runtimes" / f"{module}.py").read_text()
    body = text.split('"""', 2)[2]  # after the module docstring
    assert len([line for line in body.splitlines() if line.strip()]) <= 60
