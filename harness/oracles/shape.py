"""What the oracles read of a scenario itself, worked out once per scenario instead of once per run.

Owns `shape_of(scenario)`: the calls in model order, each call's tool, position and batch, and the
catalogue's tools that give MCP hints or may not overlap others. An exploration judges thousands of
runs of one scenario object; these are the same for all of them, and building them each time was a
few microseconds of every run's check. Scenarios are matched by identity (they are immutable; a
changed one is a new object), and an entry holds its scenario, so its id cannot be reused while the
entry lives; the memo is small and only keeps scenarios of modest size. A larger scenario's shape
is kept beside it for only as long as the scenario itself lives (the last two: the runs of a
100,000-call batch are judged one after another, each asked for its shape twice, some 65 ms a
time, and for the shape of its scenario in reference order as well when it is judged against
writes-first: `harness.oracles.reference`). It never reads a run and never judges.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING

from harness.model import ToolCall

if TYPE_CHECKING:
    from harness.scenario.spec import Scenario
    from harness.tools.hints import McpHints
    from harness.tools.spec import ToolSpec

#: Scenarios remembered at once (an exploration uses one; a sweep moves from one to the next).
MAX_ENTRIES = 32
#: Scenarios with more calls than this are not remembered (their shape weighs as much as a run).
MAX_CALLS = 4096


class ScenarioShape:
    """The per-scenario facts every run of it shares. Read only."""

    __slots__ = ("batch_of", "calls", "derived", "exclusive", "hinted", "ids", "position", "tools")

    def __init__(self, scenario: Scenario) -> None:
        #: The calls in model order (what `scenario.calls` builds anew each time it is asked).
        self.calls: tuple[ToolCall, ...] = scenario.calls
        self.ids: tuple[str, ...] = tuple(call.id for call in self.calls)
        #: Call id -> its tool's name.
        self.tools: dict[str, str] = {call.id: call.name for call in self.calls}
        #: Call id -> its place in model order (batch by batch, call by call).
        self.position: dict[str, int] = {call_id: i for i, call_id in enumerate(self.ids)}
        #: Call id -> the index of its batch.
        self.batch_of: dict[str, int] = {call.id: b for b, batch in enumerate(scenario.batches) for call in batch}
        #: Tool name -> its MCP hints, for the catalogue's tools that declare some; and the catalogue's
        #: tools that may not overlap another call (interactive or declared exclusive).
        self.hinted, self.exclusive = _of_catalogue(scenario.catalogue)
        #: What an oracle works out from these once and keeps for the next run, by the oracle's own
        #: name for it (e.g. `harness.oracles.model_order.certain_steps`). Lives and dies with the shape.
        self.derived: dict[str, object] = {}


_memo: dict[int, tuple[Scenario, ScenarioShape]] = {}
#: The shape of the last scenario with more than MAX_CALLS calls, by a weak reference to it: the
#: entry goes when the scenario does (the shape holds none of it), so no large scenario is kept alive.
_large: tuple[weakref.ref[Scenario], ScenarioShape] | None = None
#: The one before it, kept the same way: a run judged against writes-first asks for its scenario's
#: shape and for its reordered scenario's in turn, and one slot would make both anew each time.
_large_before: tuple[weakref.ref[Scenario], ScenarioShape] | None = None
_lock = threading.Lock()
#: The same per catalogue: scenarios made one per run (generated batches) share the built-in one.
_catalogues: dict[int, tuple[Mapping[str, ToolSpec], dict[str, McpHints], frozenset[str]]] = {}


def _of_catalogue(catalogue: Mapping[str, ToolSpec]) -> tuple[dict[str, McpHints], frozenset[str]]:
    entry = _catalogues.get(id(catalogue))
    if entry is not None and entry[0] is catalogue:
        return entry[1], entry[2]
    hinted = {name: spec.declared.hints for name, spec in catalogue.items() if spec.declared.hints is not None}
    exclusive = frozenset(name for name, spec in catalogue.items()
                          if spec.declared.interactive or spec.declared.exclusive)
    with _lock:
        if len(_catalogues) >= MAX_ENTRIES:
            _catalogues.clear()
        _catalogues[id(catalogue)] = (catalogue, hinted, exclusive)
    return hinted, exclusive


def shape_of(scenario: Scenario) -> ScenarioShape:
    """The shape of `scenario`, remembered for the next run of the same scenario object."""
    entry = _memo.get(id(scenario))
    if entry is not None and entry[0] is scenario:
        return entry[1]
    for large in (_large, _large_before):
        if large is not None and large[0]() is scenario:
            return large[1]
    shape = ScenarioShape(scenario)
    with _lock:
        if len(shape.calls) <= MAX_CALLS:
            if len(_memo) >= MAX_ENTRIES:
                _memo.clear()  # a sweep has moved on: start again rather than keep old scenarios alive
            _memo[id(scenario)] = (scenario, shape)
        else:
            _remember_large(scenario, shape)
    return shape


def _remember_large(scenario: Scenario, shape: ScenarioShape) -> None:
    global _large, _large_before

    def forget(gone: weakref.ref[Scenario]) -> None:
        global _large, _large_before
        entry, before = _large, _large_before
        if entry is not None and entry[0] is gone:
            _large = None
        if before is not None and before[0] is gone:
            _large_before = None

    _large, _large_before = (weakref.ref(scenario, forget), shape), _large
