"""Public Hypothesis strategies: `tool_calls`, `batches`, `scenarios`, `fault_plans`.

Owns how random-but-valid (and deliberately invalid) model turns are generated, in the style of
`hypothesis.strategies`: functions that return strategies, keyword arguments to narrow them, and
values that shrink toward short batches of simple calls. A batch may move the shell with a
`terminal` `cd DIR` and then name files relative to the directory it moved to, as a model does
after a `cd` (a planner that resolves a batch's relative paths once, against the cwd the batch
started in, gets them wrong). It never runs a simulation.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from harness.faults.plan import FaultPlan, RateLimit
from harness.model import Batch, ToolCall
from harness.scenario.spec import Interrupt, Scenario
from harness.world import World

#: Tools whose arguments these strategies know how to fill in.
FILE_TOOLS = ("read_file", "write_file", "write_file_atomic", "patch", "search_files", "run_tests")
#: What `tool_calls` and `batches` draw from by default: the file tools and the shell.
DEFAULT_TOOLS = (*FILE_TOOLS, "terminal")
#: The tools whose `path` argument names one of `paths`: the work a model does in a directory.
PATH_TOOLS = ("read_file", "write_file", "write_file_atomic", "patch")
DEFAULT_PATHS = ("/repo/a.txt", "/repo/b.txt", "/repo/src/c.txt")
DEFAULT_WORDS = ("alpha", "beta", "gamma")
#: Where a generated `cd` goes: relative to the shell's cwd, or absolute.
DEFAULT_DIRS = ("src", "/repo")
#: The shell's cwd when a generated batch starts (the generated worlds' `/repo`).
DEFAULT_CWD = "/repo"
#: Shell commands other than `cd` (`echo` writes a file relative to the cwd).
COMMANDS = ("pwd", "ls", "echo hi > note.txt")


class _Parts:
    """The strategies `_arguments` draws from, built once per strategy (see `_CallDraws`)."""

    def __init__(self, paths: Sequence[str], words: Sequence[str], dirs: Sequence[str]) -> None:
        self.paths = paths
        self.path = st.sampled_from(paths)
        self.word = st.sampled_from(words)
        self.content = st.lists(self.word, min_size=1, max_size=3)
        # Half of the shell commands move it: a `cd` is what makes later relative paths mean another file.
        others = st.sampled_from(COMMANDS)
        self.command = others | st.sampled_from([f"cd {d}" for d in dirs]) if dirs else others
        self._after_cd: dict[str, st.SearchStrategy[str]] = {}

    def path_in(self, cwd: str | None) -> st.SearchStrategy[str]:
        """Paths for a call made with the shell in `cwd` (None: wherever it started). After a `cd` a
        model works in the directory it moved to: the draws name the files of `paths` under the new
        cwd, relative to it or by their absolute paths (two spellings of one file, which a planner
        must see as one); any path when none is under it."""
        if cwd is None:
            return self.path
        if cwd not in self._after_cd:
            prefix = cwd.rstrip("/") + "/"
            under = [p for p in self.paths if p.startswith(prefix)]
            spellings = [*dict.fromkeys([*(p[len(prefix):] for p in under), *under])]
            self._after_cd[cwd] = st.sampled_from(spellings) if spellings else self.path
        return self._after_cd[cwd]


def moved(cwd: str, name: str, raw: str) -> str | None:
    """Where a `terminal` `cd DIR` (DIR relative to `cwd`, or absolute) moves the shell, if it
    succeeds; None for any other call."""
    if name != "terminal":
        return None
    try:
        command = json.loads(raw).get("command")
    except (ValueError, AttributeError):
        return None
    if not isinstance(command, str) or not command.startswith("cd "):
        return None
    return posixpath.normpath(posixpath.join(cwd, command[3:].strip()))


@st.composite
def _arguments(draw: st.DrawFn, name: str, parts: _Parts, cwd: str | None = None) -> dict[str, Any]:
    path = draw(parts.path_in(cwd))
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


class _CallDraws:
    """One call's draws, for a shell in a given cwd. Built once per strategy, not per draw: a
    strategy made inside a draw is a new object, which Hypothesis validates on its first draw at
    about the cost of the draw itself. The draws (and so the examples for a seed) are the same."""

    def __init__(self, tools: Sequence[str], paths: Sequence[str], words: Sequence[str], malformed: bool,
                 dirs: Sequence[str]) -> None:
        self.tools, self.malformed = tools, malformed
        self.parts = _Parts(paths, words, dirs if "terminal" in tools else ())
        self._built: dict[tuple[str | None, bool], st.SearchStrategy[tuple[str, str]]] = {}

    def strategy(self, cwd: str | None = None, work: bool = False) -> st.SearchStrategy[tuple[str, str]]:
        """Calls made with the shell in `cwd` (None: the cwd is not followed); `work`: only the tools
        of `PATH_TOOLS` (all of `tools` when it has none of them)."""
        key = (cwd, work)
        if key not in self._built:
            tools = [t for t in self.tools if t in PATH_TOOLS] if work else []
            names = st.sampled_from(tools or self.tools)
            arguments = {name: _arguments(name, self.parts, cwd) for name in dict.fromkeys(tools or self.tools)}
            malformed = self.malformed

            @st.composite
            def build(draw: st.DrawFn) -> tuple[str, str]:
                name = draw(names)
                raw = json.dumps(draw(arguments[name]))
                if malformed and draw(st.booleans()):
                    raw = draw(st.sampled_from([raw[:-1], "[1, 2]", "", "null", raw + "}"]))
                return name, raw

            self._built[key] = build()
        return self._built[key]


def tool_calls(*, tools: Sequence[str] = DEFAULT_TOOLS, paths: Sequence[str] = DEFAULT_PATHS,
               words: Sequence[str] = DEFAULT_WORDS, malformed: bool = False,
               dirs: Sequence[str] = DEFAULT_DIRS) -> st.SearchStrategy[tuple[str, str]]:
    """`(name, raw JSON arguments)` pairs; with `malformed=True`, sometimes broken JSON or a non-object.
    A `terminal` call runs `pwd`, `ls`, `echo hi > note.txt` or `cd DIR` for a DIR of `dirs`."""
    return _CallDraws(tools, paths, words, malformed, dirs).strategy()


def batches(*, min_size: int = 1, max_size: int = 6, cwd: str = DEFAULT_CWD, tools: Sequence[str] = DEFAULT_TOOLS,
            paths: Sequence[str] = DEFAULT_PATHS, words: Sequence[str] = DEFAULT_WORDS, malformed: bool = False,
            dirs: Sequence[str] = DEFAULT_DIRS) -> st.SearchStrategy[Batch]:
    """Batches of `tool_calls(...)` with ids `call-1`, `call-2`, ... in model order.

    When the batch may hold a `terminal` `cd` (the default tools do), each call is drawn knowing where
    the shell will be by then (it starts in `cwd`), and half the batches open with `cd DIR` to another
    directory followed by at least two file calls (`PATH_TOOLS`) there: after `cd src`, one turn names
    `/repo/src/c.txt` as `c.txt` and by its absolute path, as a model that moved there does. A planner
    that resolves a turn's relative paths once, against the cwd the turn started in, sees two files."""

    def numbered(pairs: Sequence[tuple[str, str]]) -> Batch:
        return Batch(tuple(ToolCall(f"call-{i + 1}", name, raw, i) for i, (name, raw) in enumerate(pairs)))

    draws = _CallDraws(tools, paths, words, malformed, dirs)
    if "terminal" not in tools or not dirs:
        return st.lists(draws.strategy(), min_size=min_size, max_size=max_size).map(numbered)
    # Another call follows with probability 0.7 (batches of about three, like `st.lists`); the draw
    # shrinks to 0, "no more", so a failing batch shrinks toward fewer calls.
    more = st.integers(0, 9).map(lambda n: n >= 3)
    away = [d for d in dirs if posixpath.normpath(posixpath.join(cwd, d)) != posixpath.normpath(cwd)]
    opening = st.booleans() if away and max_size >= 1 else st.just(False)
    cds = st.sampled_from([f"cd {d}" for d in away or dirs])

    @st.composite
    def build(draw: st.DrawFn) -> Batch:
        pairs: list[tuple[str, str]] = []
        shell = cwd
        followed: str | None = None  # where the shell is, once a `cd` has moved it
        work = 0  # calls still owed to the work after an opening `cd`
        if draw(opening):
            raw = json.dumps({"command": draw(cds)})
            pairs.append(("terminal", raw))
            shell = followed = moved(shell, "terminal", raw) or shell
            work = min(2, max_size - 1)
        # One call at a time, each drawn knowing the cwd the calls before it leave.
        while work or len(pairs) < min_size or (len(pairs) < max_size and draw(more)):
            name, raw = draw(draws.strategy(followed, work=work > 0))
            work = max(0, work - 1)
            pairs.append((name, raw))
            after = moved(shell, name, raw)
            if after is not None:
                shell = followed = after
        return numbered(pairs)

    return build()


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
