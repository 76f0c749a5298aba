"""Turn-level serializability: for several agents on one world (`[[agents]]`), is there an order of
whole turns, each agent's turns in its own order, that explains every observed result and the final
world?

Owns the search over those orders and the cross-agent labels. Each candidate order is judged by the
model-order check (`harness.oracles.serializability`) on the run with its batches in that order, so
everything that check accepts (calls of unknown effect, ghost effects, data flow) holds per turn too.
The order the turns started in is tried first; then every other merge of the agents' turn sequences,
once per distinct order of conflicting turns: two turns of different agents conflict when the trace
shows one writing a target (file, directory listing, ledger, shell state) the other touches, and
orders that differ only in how non-conflicting turns interleave are the same history (they are tried
once). Past `MAX_ORDERS` distinct orders the verdict says the check was limited instead of claiming
more than it tried.

When no order explains the run, the violations are those of the order the turns started in; a
lost update or stale read between two agents' calls is labelled `cross-agent-lost-update` /
`cross-agent-stale-read` and its witness names both agents. It reads the run; it never steers one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace

from harness.oracles.facts import RunFacts
from harness.oracles.verdict import Verdict, Violation
from harness.run import BatchRun, RunResult
from harness.tools.spec import MUTATING_OPS

NAME = "serializability"
#: How many distinct orders of conflicting turns the search judges at most.
MAX_ORDERS = 256
#: Labels that become cross-agent ones when their witness names calls of two agents.
CROSS_AGENT = {"lost-update": "cross-agent-lost-update", "stale-read": "cross-agent-stale-read"}


def check(result: RunResult, model_order: Callable[[RunResult], Verdict]) -> Verdict:
    """The turn-level verdict on a crew run; `model_order` judges one order of the batches."""
    runs = sorted(result.batches, key=lambda b: b.index)
    first = model_order(result)
    agents = list(dict.fromkeys(b.agent or "" for b in runs))
    if first.ok:
        return Verdict.of(NAME, [], _note(first, f"turn-level: the {len(runs)} turns of {len(agents)} agents, in "
                                         "the order they started, explain every result and the final world"))
    conflicts = _conflicts(result, runs)
    tried = 1
    seen = {_signature(runs, conflicts)}
    limited = False
    for order in _merges(runs, agents, conflicts):
        signature = _signature(order, conflicts)
        if signature in seen:
            continue
        seen.add(signature)
        if tried >= MAX_ORDERS:
            limited = True
            break
        tried += 1
        verdict = model_order(_reordered(result, order))
        if verdict.ok:
            return Verdict.of(NAME, [], _note(verdict, "turn-level: the turns in the order "
                                              f"{', '.join(b.batch.label for b in order)} explain every result "
                                              "and the final world"))
    call_agents = {call.id: run.agent or "" for run in runs for call in run.batch}
    violations = [_cross_agent(v, call_agents) for v in first.violations]
    # What one agent did to another first: a misread downstream of it is a consequence.
    violations.sort(key=lambda v: not v.label.startswith("cross-agent-"))
    note = (f"no order of whole turns explains the run ({tried} distinct orders of conflicting turns tried)"
            if not limited else
            f"check limited: {tried} of more than {MAX_ORDERS} distinct orders of conflicting turns tried, none "
            "explains the run; the violations are those of the order the turns started in")
    return Verdict.of(NAME, violations, "; ".join(n for n in (first.note, note) if n))


def _note(verdict: Verdict, text: str) -> str:
    return f"{text}; {verdict.note}" if verdict.note else text


def _reordered(result: RunResult, order: Sequence[BatchRun]) -> RunResult:
    return replace(result, scenario=replace(result.scenario, batches=tuple(b.batch for b in order)))


def _conflicts(result: RunResult, runs: Sequence[BatchRun]) -> frozenset[tuple[int, int]]:
    """Pairs (i, j), i < j, of batch indices of different agents whose traced touches conflict."""
    facts = RunFacts(result)
    reads: dict[int, set[str]] = {}
    writes: dict[int, set[str]] = {}
    for run in runs:
        touched_r, touched_w = reads.setdefault(run.index, set()), writes.setdefault(run.index, set())
        for call in run.batch:
            for touch in facts.touches_of(call.id):
                target = touch.target.partition("\x00")[0]
                if touch.op in MUTATING_OPS:
                    touched_w.add(target)
                    touched_w.update(f"dir:{p}" for p in _ancestors(target))
                else:
                    touched_r.add(target)
                    if touch.op == "list":
                        touched_r.add(f"dir:{target}")
    pairs = set()
    for a in runs:
        for b in runs:
            if a.index < b.index and a.agent != b.agent:
                wa, wb = writes[a.index], writes[b.index]
                if wa & (wb | reads[b.index]) or wb & reads[a.index]:
                    pairs.add((a.index, b.index))
    return frozenset(pairs)


def _ancestors(path: str) -> list[str]:
    if not path.startswith("/"):
        return []
    found = []
    while path not in ("/", ""):
        path = path.rsplit("/", 1)[0] or "/"
        found.append(path)
    return found


def _signature(order: Sequence[BatchRun], conflicts: frozenset[tuple[int, int]]) -> frozenset[tuple[int, int]]:
    """Which turn of each conflicting pair comes first: orders with the same signature are one history."""
    position = {b.index: i for i, b in enumerate(order)}
    return frozenset((a, b) if position[a] < position[b] else (b, a) for a, b in conflicts)


def _merges(runs: Sequence[BatchRun], agents: Sequence[str],
            conflicts: frozenset[tuple[int, int]]) -> Iterator[list[BatchRun]]:
    """Every merge of the agents' turn sequences that moves a conflicting turn: the turns no conflict
    involves ride along before their agent's next conflicting turn (where they sit cannot change
    the history), so only the conflicting turns are merged."""
    involved = {i for pair in conflicts for i in pair}
    lanes = [[b for b in runs if (b.agent or "") == agent] for agent in agents]
    heads = [[i for i, b in enumerate(lane) if b.index in involved] for lane in lanes]

    def walk(done: list[int], prefix: list[BatchRun]) -> Iterator[list[BatchRun]]:
        if all(done[k] >= len(heads[k]) for k in range(len(lanes))):
            yield prefix + [b for k, lane in enumerate(lanes) for b in lane[_upto(heads[k], done[k]):]]
            return
        for k, lane in enumerate(lanes):
            if done[k] >= len(heads[k]):
                continue
            start = _upto(heads[k], done[k])
            end = heads[k][done[k]] + 1
            done[k] += 1
            yield from walk(done, prefix + lane[start:end])
            done[k] -= 1

    yield from walk([0] * len(lanes), [])


def _upto(heads: Sequence[int], done: int) -> int:
    """Where an agent's turns not yet placed begin, once `done` of its conflicting turns are placed."""
    return heads[done - 1] + 1 if done else 0


def _cross_agent(violation: Violation, call_agents: Mapping[str, str]) -> Violation:
    named = [value for value in violation.witness.values() if isinstance(value, str) and value in call_agents]
    agents = list(dict.fromkeys(call_agents[call] for call in named))
    if len(agents) < 2:
        return violation
    label = CROSS_AGENT.get(violation.label, violation.label)
    return replace(violation, label=label, message=f"across agents {' and '.join(agents)}: {violation.message}",
                   witness={**violation.witness, "agents": agents})
