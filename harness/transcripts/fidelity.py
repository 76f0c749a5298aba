"""Fidelity: does the simulated scenario reproduce what an imported transcript recorded?

Owns the check of a scenario's recorded results (`Scenario.recorded`: the transcript's tool results
of calls whose tool has a known behaviour) against the serial reference run: every call alone, one
after another in model order, from the scenario's initial world, with the tools' own behaviour
(`harness.tools.semantics.apply`, the replay the serializability oracle uses; no latency, no fault,
no concurrency). A call whose computed result there differs from its recorded one is a `Disagreement`:
the scenario's world, the `--map` or the tool does not model what happened in production. That is a
warning about the scenario, the same under every seed and scheduler; it is never a verdict on a
scheduler. It never runs a schedule and never changes what a call returns.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from harness.model import JSONValue, Outcome
from harness.scenario.spec import Recorded, Scenario
from harness.tools.inputs import resolve
from harness.tools.semantics import Observation, apply
from harness.world.world import World


@dataclass(frozen=True, slots=True)
class Disagreement:
    """A call whose recorded (production) result is not what the serial reference computes for it."""

    call: str
    tool: str
    batch: str
    recorded: Recorded
    computed: Observation

    def line(self) -> str:
        """One line for a warning: the call, what production returned and what the scenario computes."""
        where = f", {self.batch}" if self.batch else ""
        return (f"fidelity: {self.call} ({self.tool}{where}) returned {_recorded(self.recorded)} in production; "
                f"the serial reference run computes {_computed(self.computed)}")

    def to_json(self) -> dict[str, object]:
        return {"call": self.call, "tool": self.tool, "batch": self.batch,
                "recorded": {"value": self.recorded.value, "error": self.recorded.error},
                "computed": {"outcome": self.computed.outcome.value, "value": self.computed.value,
                             "error": self.computed.error}}


def summary(disagreements: int) -> str:
    """The line that follows the fidelity warnings: what they mean, said once."""
    n = disagreements
    return (f"fidelity: the serial reference run (every call alone, in model order, from the scenario's world) does "
            f"not reproduce {n} production result{'' if n == 1 else 's'}: the scenario's world (add the files "
            "production had to [world]), the mapping or the tool does not model what happened; a warning about the "
            "scenario, not a verdict on a scheduler")


@dataclass(frozen=True)
class Fidelity:
    """What a run's header says about production results a scenario carries: `recorded`, the calls
    whose recorded result is an expectation (their values are computed); `fixed`, the calls that
    return a fixed `result` instead (a tool of unknown behaviour: what it read is not computed, so a
    stale or torn read by it cannot be seen); `disagreements`, the recorded results the serial
    reference run does not reproduce."""

    recorded: tuple[str, ...]
    fixed: tuple[str, ...]
    disagreements: tuple[Disagreement, ...]

    def rows(self) -> list[tuple[str, str]]:
        """(key, text) rows for a run's header."""
        rows = []
        if self.recorded:
            n = len(self.recorded)
            verdict = (f"{len(self.disagreements)} disagree{'s' if len(self.disagreements) == 1 else ''} (below): "
                       "the scenario's world, the mapping or the tool does not model what happened"
                       if self.disagreements else "all agree")
            rows.append(("recorded", f"{n} call{'' if n == 1 else 's'} carry a production result as an expectation "
                         f"(values computed from the world; checked by the serial reference run): {verdict}"))
        if self.fixed:
            n = len(self.fixed)
            rows.append(("fixed", f"{n} call{'' if n == 1 else 's'} return{'s' if n == 1 else ''} a fixed result "
                         f"(result = ...), not a computed one: a stale or torn read by "
                         f"{'it' if n == 1 else 'them'} cannot be seen ({_listing(self.fixed)})"))
        rows.extend(("fidelity", d.line().removeprefix("fidelity: ")) for d in self.disagreements)
        return rows

    def to_json(self) -> dict[str, object]:
        return {"recorded": list(self.recorded), "fixed": list(self.fixed),
                "disagreements": [d.to_json() for d in self.disagreements]}


def of(scenario: Scenario) -> Fidelity | None:
    """The fidelity summary of a scenario that carries production results, else None."""
    fixed = tuple(call.id for call in scenario.calls if call.id in scenario.catalogue.results)
    recorded = tuple(call.id for call in scenario.calls if call.id in scenario.recorded)
    if not fixed and not recorded:
        return None
    return Fidelity(recorded, fixed, tuple(check(scenario)))


def reference(scenario: Scenario) -> dict[str, Observation]:
    """What each call of the scenario's fixed batches returns in the serial reference run: alone, in
    model order, from the initial world (arguments taken from earlier results, `args_from`, read
    what those calls returned there). A call with a fixed `result` returns it, as in any run."""
    world = World.from_state(scenario.world)
    observed: dict[str, Observation] = {}

    def lookup(call_id: str) -> tuple[bool, JSONValue]:
        found = observed.get(call_id)  # only earlier calls are in it yet
        if found is None or found.outcome is not Outcome.OK:
            return False, None
        return True, found.value

    for call in scenario.calls:
        resolved, _ = resolve(call, scenario.args_from.get(call.id), lookup)
        _, observed[call.id] = apply(world, resolved, scenario.catalogue, in_place=True)
    return observed


def check(scenario: Scenario) -> list[Disagreement]:
    """The calls whose recorded result the serial reference does not reproduce, in model order;
    empty (and nothing run) for a scenario with no recorded results."""
    if not scenario.recorded:
        return []
    computed = reference(scenario)
    batch_of = {call.id: batch.label for batch in scenario.batches for call in batch}
    return [Disagreement(call.id, call.name, batch_of[call.id], scenario.recorded[call.id], computed[call.id])
            for call in scenario.calls
            if call.id in scenario.recorded and not agrees(scenario.recorded[call.id], computed[call.id])]


def agrees(recorded: Recorded, computed: Observation) -> bool:
    """Whether a computed result is the recorded one.

    A recorded error agrees with any computed error (the runtime's words and the mock's differ); a
    recorded value agrees with a successful result that is equal to it, whose JSON text it is, or
    (a runtime often shows the model only a tool's text) which is an object holding it as one of its
    string fields, like `read_file`'s `content`."""
    if recorded.failed:
        return computed.outcome is Outcome.ERROR
    if computed.outcome is not Outcome.OK:
        return False
    value, result = recorded.value, computed.value
    if _same(value, result):
        return True
    if not isinstance(value, str):
        return False
    try:
        if _same(json.loads(value), result):
            return True
    except (ValueError, RecursionError):
        pass
    return isinstance(result, Mapping) and any(isinstance(field, str) and field == value for field in result.values())


def _same(a: object, b: object) -> bool:
    """Equal as JSON values: `True` is not `1`, and `1` is `1.0`."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _listing(ids: tuple[str, ...], limit: int = 6) -> str:
    return ", ".join(ids[:limit]) + (f", ... ({len(ids) - limit} more)" if len(ids) > limit else "")


def _recorded(recorded: Recorded) -> str:
    return f"the error {_brief(recorded.error)}" if recorded.failed else _brief(recorded.value)


def _computed(computed: Observation) -> str:
    if computed.outcome is Outcome.OK:
        return _brief(computed.value)
    return f"the error {_brief(computed.error)}"


def _brief(value: object, limit: int = 100) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    shown = json.dumps(text, ensure_ascii=False) if isinstance(value, str) else text
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."
