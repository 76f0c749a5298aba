"""Public Hypothesis strategies: `tool_calls`, `batches`, `scenarios`, `fault_plans`.

Owns how random-but-valid (and deliberately invalid) model turns are generated, in the style of
`hypothesis.strategies`: functions that return strategies, keyword arguments to narrow them, and
values that shrink toward short batches of simple calls. It never runs a simulation.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from harness.faults.plan import FaultPlan, RateLimit
from harness.model import Batch, ToolCall
from harness.scenario.spec import Interrupt, Scenario
from harness.world import World

#: Tools whose arguments these strategies know how to fill in.
FILE_TOOLS = ("read_file", "write_file", "write_file_atomic", "patch", "search_files", "run_tests")
DEFAULT_PATHS = ("/repo/a.txt", "/repo/b.txt", "/repo/src/c.txt")
DEFAULT_WORDS = ("alpha", "beta", "gamma")


class _Parts:
    """The strategies `_arguments` draws from, built once per `tool_calls` (see there)."""

    def __init__(self, paths: Sequence[str], words: Sequence[str]) -> None:
        self.paths = paths
        self.path = st.sampled_from(paths)
        self.word = st.sampled_from(words)
        self.content = st.lists(self.word, min_size=1, max_size=3)
        self.command = st.sampled_from(["pwd", "ls", "cd src", "cd /repo", "echo hi > note.txt"])


@st.composite
def _arguments(draw: st.DrawFn, name: str, parts: _Parts) -> dict[str, Any]:
    path = draw(parts.path)
    if name in ("read_file",):
        return {"path": path}
    if name in ("write_file", "write_file_atomic"):
        return {"path": path, "content": " ".join(draw(parts.content))}
    if name == "patch":
        return {"path": path, "old": draw(parts.word), "new": draw(parts.word).upper()}
    if name == "search_files":
        return {"pattern": draw(parts.word), "path": "/repo"}
    if name == "run_tests":
        return {"path": "/repo"}
    if name in ("web_search",):
        return {"query": draw(parts.word)}
    if name == "clarify":
        return {"question": "which file?", "choices": list(parts.paths[:2])}
    if name == "create_ticket":
        return {"title": draw(parts.word)}
    if name == "terminal":
        return {"command": draw(parts.command)}
    return {}


def tool_calls(*, tools: Sequence[str] = FILE_TOOLS, paths: Sequence[str] = DEFAULT_PATHS,
               words: Sequence[str] = DEFAULT_WORDS, malformed: bool = False) -> st.SearchStrategy[tuple[str, str]]:
    """`(name, raw JSON arguments)` pairs; with `malformed=True`, sometimes broken JSON or a non-object."""
    # Built once, not per draw: a strategy made inside a draw is a new object, which Hypothesis
    # validates on its first draw at about the cost of the draw itself. The draws (and so the
    # examples for a seed) are the same.
    names = st.sampled_from(tools)
    parts = _Parts(paths, words)
    arguments = {name: _arguments(name, parts) for name in dict.fromkeys(tools)}

    @st.composite
    def build(draw: st.DrawFn) -> tuple[str, str]:
        name = draw(names)
        raw = json.dumps(draw(arguments[name]))
        if malformed and draw(st.booleans()):
            raw = draw(st.sampled_from([raw[:-1], "[1, 2]", "", "null", raw + "}"]))
        return name, raw

    return build()


def batches(*, min_size: int = 1, max_size: int = 6, **call_options: Any) -> st.SearchStrategy[Batch]:
    """Batches of `tool_calls(**call_options)` with ids `call-1`, `call-2`, ... in model order."""
    return st.lists(tool_calls(**call_options), min_size=min_size, max_size=max_size).map(
        lambda pairs: Batch(tuple(ToolCall(f"call-{i + 1}", name, raw, i) for i, (name, raw) in enumerate(pairs)))
    )


DEFAULT_FILES = {"/repo/a.txt": "alpha beta\n", "/repo/b.txt": "beta gamma\n", "/repo/src/c.txt": "gamma\n",
                 "/repo/tests/test_a.txt": "requires a.txt alpha\n"}


def fault_plans(*, duplicate_delivery: bool = True, torn_writes: bool = True,
                rate_limits: Sequence[str] = ("web_search",)) -> st.SearchStrategy[FaultPlan]:
    """Fault plans (harness.faults.plan); shrinks toward no faults."""
    rate = st.sampled_from([0.0, 0.5, 1.0])
    limits = st.lists(st.builds(RateLimit, st.sampled_from(list(rate_limits)), st.integers(1, 3),
                                st.sampled_from([100, 1000])), max_size=1) if rate_limits else st.just([])
    return st.builds(FaultPlan, rate if duplicate_delivery else st.just(0.0), rate if torn_writes else st.just(0.0),
                     limits.map(tuple))


def scenarios(*, batch_strategy: st.SearchStrategy[Batch] | None = None, max_batches: int = 2,
              files: dict[str, str] | None = None, faults: st.SearchStrategy[FaultPlan] | None = None,
              interrupts: bool = False) -> st.SearchStrategy[Scenario]:
    """Scenarios of 1..max_batches generated batches over a small repository, optionally with a
    fault plan and a user interrupt. Call ids are unique across batches."""
    tree = dict(DEFAULT_FILES if files is None else files)
    world = World(cwd="/repo")
    world.populate(files=sorted(tree.items()))
    state = world.state()
    one_batch = batch_strategy if batch_strategy is not None else batches(max_size=4)

    @st.composite
    def build(draw: st.DrawFn) -> Scenario:
        drawn = draw(st.lists(one_batch, min_size=1, max_size=max_batches))
        renamed = tuple(Batch.of([(f"b{b + 1}-{call.id}", call.name, call.arguments) for call in batch],
                                 f"batch-{b + 1}") for b, batch in enumerate(drawn))
        plan = draw(faults) if faults is not None else FaultPlan()
        interrupt = None
        if interrupts and draw(st.booleans()):
            interrupt = Interrupt(draw(st.integers(0, 3000)), draw(st.sampled_from([0, 300, 3000])))
        return Scenario(name="generated", batches=renamed, world=state, faults=plan, interrupt=interrupt)

    return build()
