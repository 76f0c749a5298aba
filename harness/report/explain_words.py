"""What the sentences of a violation are made of: how a reader calls a target, a list, a value, an
effect, and what a template may ask of the run beyond the witness (`RunView`).

Shared by the templates (`harness.report.explain_effects`, `explain_results`, `explain_runtime`) and
by `harness.report.races`. Owns these words and the run view only: it holds no template, never
judges, and every answer of the run view is None when there is no run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harness.oracles.facts import spelled
from harness.report import plural
from harness.run import RunResult
from harness.sim.trace import TraceEvent, canonical_json

MUTATING = frozenset({"write", "truncate", "append", "remove", "mkdir"})


def thing_of(target: str) -> str:
    """A touch target as a reader calls it."""
    if target == "session:cwd":
        return "the shell's working directory"
    if target.startswith("session:env:"):
        return f"the shell variable {target.removeprefix('session:env:')}"
    if target.startswith("ledger:"):
        return f"the {target.removeprefix('ledger:')} ledger"
    return target


def listed(items: Sequence[object]) -> str:
    """'a', 'a and b', 'a, b and c' ('none' for no item)."""
    words = [str(item) for item in items]
    if not words:
        return "none"
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def brief(value: object, limit: int = 80) -> str:
    text = value if isinstance(value, str) else canonical_json(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


EFFECT_VERBS = {"append": "added an entry to", "write": "wrote", "truncate": "truncated", "remove": "removed",
                "mkdir": "created"}


class RunView:
    """What a template may ask of the run beyond the witness; every answer is None without one."""

    def __init__(self, result: RunResult | None) -> None:
        self.result = result
        calls = result.scenario.calls if result is not None else ()
        self.position = {call.id: i for i, call in enumerate(calls)}
        self.tools = {call.id: call.name for call in calls}
        self.touches: list[TraceEvent] = [e for e in result.trace if e["ev"] == "touch"] if result else []

    def earlier(self, a: str, b: str) -> bool | None:
        """Whether `a` comes before `b` in model order (None if unknown)."""
        if a not in self.position or b not in self.position:
            return None
        return self.position[a] < self.position[b]

    def touch(self, call: str, target: str, t: int | None, ops: Callable[[str], bool] = lambda op: True,
              last: bool = False) -> TraceEvent | None:
        """The touch of `call` on `target` at `t` (any time if None) whose op passes `ops`."""
        found = [e for e in self.touches if e["call"] == call and e["target"] == target
                 and (t is None or e["t"] == t) and ops(e["op"])]
        if not found:
            return None
        return found[-1] if last else found[0]

    def named(self, call: str, target: str) -> str:
        """`target` as `call` named it (its first touch of it), with the file it reached when that is
        another of its names; a shell value or ledger as a reader calls it."""
        alias = next((e["as"] for e in self.touches if e["call"] == call and e["target"] == target and e.get("as")),
                     None)
        return spelled(target, alias) if alias else thing_of(target)

    def read_before(self, call: str, target: str, t: int) -> TraceEvent | None:
        found = [e for e in self.touches if e["call"] == call and e["target"] == target
                 and e["op"] not in MUTATING and e["t"] <= t]
        return found[-1] if found else None

    def interactive(self, tool: str) -> bool:
        if self.result is None:
            return tool == "clarify"
        spec = self.result.scenario.catalogue.get(tool)
        return bool(spec is not None and spec.declared.interactive)


def effects_phrase(effects: Sequence[Mapping[str, Any]]) -> str:
    """'it wrote /repo/a at 12 ms (and 2 more changes)': a call's first effect, and how many followed."""
    first = effects[0]
    text = f"it {EFFECT_VERBS.get(first['op'], first['op'])} {thing_of(first['target'])} at {first['t']} ms"
    return text + (f" (and {plural.count(len(effects) - 1, 'more change')})" if len(effects) > 1 else "")


Template = Callable[[Mapping[str, Any], RunView], str]
