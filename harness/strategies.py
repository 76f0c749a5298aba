"""Public Hypothesis strategies for tool calls and batches.

Owns how random-but-valid (and deliberately invalid) model turns are generated, in the style of
`hypothesis.strategies`: functions that return strategies, keyword arguments to narrow them, and
values that shrink toward short batches of simple calls. It never runs a simulation.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from harness.model import Batch, ToolCall

#: Tools whose arguments these strategies know how to fill in.
FILE_TOOLS = ("read_file", "write_file", "write_file_atomic", "patch", "search_files", "run_tests")
DEFAULT_PATHS = ("/repo/a.txt", "/repo/b.txt", "/repo/src/c.txt")
DEFAULT_WORDS = ("alpha", "beta", "gamma")


@st.composite
def _arguments(draw: st.DrawFn, name: str, paths: Sequence[str], words: Sequence[str]) -> dict[str, Any]:
    path = draw(st.sampled_from(paths))
    if name in ("read_file",):
        return {"path": path}
    if name in ("write_file", "write_file_atomic"):
        return {"path": path, "content": " ".join(draw(st.lists(st.sampled_from(words), min_size=1, max_size=3)))}
    if name == "patch":
        return {"path": path, "old": draw(st.sampled_from(words)), "new": draw(st.sampled_from(words)).upper()}
    if name == "search_files":
        return {"pattern": draw(st.sampled_from(words)), "path": "/repo"}
    if name == "run_tests":
        return {"path": "/repo"}
    if name in ("web_search",):
        return {"query": draw(st.sampled_from(words))}
    if name == "clarify":
        return {"question": "which file?", "choices": list(paths[:2])}
    if name == "create_ticket":
        return {"title": draw(st.sampled_from(words))}
    if name == "terminal":
        return {"command": draw(st.sampled_from(["pwd", "ls", "cd src", "cd /repo", "echo hi > note.txt"]))}
    return {}


def tool_calls(*, tools: Sequence[str] = FILE_TOOLS, paths: Sequence[str] = DEFAULT_PATHS,
               words: Sequence[str] = DEFAULT_WORDS, malformed: bool = False) -> st.SearchStrategy[tuple[str, str]]:
    """`(name, raw JSON arguments)` pairs; with `malformed=True`, sometimes broken JSON or a non-object."""

    @st.composite
    def build(draw: st.DrawFn) -> tuple[str, str]:
        name = draw(st.sampled_from(tools))
        raw = json.dumps(draw(_arguments(name, paths, words)))
        if malformed and draw(st.booleans()):
            raw = draw(st.sampled_from([raw[:-1], "[1, 2]", "", "null", raw + "}"]))
        return name, raw

    return build()


def batches(*, min_size: int = 1, max_size: int = 6, **call_options: Any) -> st.SearchStrategy[Batch]:
    """Batches of `tool_calls(**call_options)` with ids `call-1`, `call-2`, ... in model order."""
    return st.lists(tool_calls(**call_options), min_size=min_size, max_size=max_size).map(
        lambda pairs: Batch(tuple(ToolCall(f"call-{i + 1}", name, raw, i) for i, (name, raw) in enumerate(pairs)))
    )
