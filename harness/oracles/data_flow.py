"""Data flow: did every consumer read what its producer returned?

Owns the `data-flow` oracle. A call with `args_from` reads its producers' values when an attempt
starts (the trace's `input` events). In model order every producer has ended before its consumer
starts, so the consumer must read exactly the value the producer returned (as reported), or nothing
when the producer failed or comes later in model order. Violations:

- `future-read`: the consumer started before its producer's result was settled (it ran on a value
  that did not exist yet: seed 003's notification sent before the ticket it announces);
- `missing-input`: it started after, but read something other than what the producer returned
  (typically nothing: the runtime never passed the value on).

A producer whose result was never reported (the runtime crashed mid-batch, hung, or dropped it: the
protocol and liveness oracles judge that) returned nothing anyone can compare with: what its consumer
read is then not judged, except that reading it before the producer's attempt ended is still a
`future-read`.

The witness names both calls, the argument and the virtual times. It reads the run; it never steers
one, and it never judges the effects (serializability compares them, on the resolved calls).
"""

from __future__ import annotations

from harness.model import CallResult
from harness.oracles.verdict import Verdict, Violation, passing
from harness.run import RunResult
from harness.sim.trace import value_digest
from harness.tools.inputs import Source, reference_lookup

NAME = "data-flow"

#: The passing verdict, made once: handed out without calling `Verdict.of` (a classmethod call per
#: oracle per checked run).
_PASSED = passing(NAME)


def check(result: RunResult) -> Verdict:
    scenario = result.scenario
    if not scenario.args_from:
        return _PASSED
    reported: dict[str, CallResult] = {}
    for r in result.results:
        reported.setdefault(r.call_id, r)
    order = [call.id for call in scenario.calls]
    position = {call_id: i for i, call_id in enumerate(order)}
    settled: dict[str, tuple[int, int]] = {}  # producer -> (t, seq) when its ok result was settled
    for e in result.trace:
        if e["ev"] == "end" and e.get("outcome") == "ok" and not e.get("detached"):
            settled[e["call"]] = (e["t"], e["seq"])
    violations: list[Violation] = []
    for e in result.trace:
        if e["ev"] != "input" or e["call"] not in position:
            continue
        consumer, arg = e["call"], e["arg"]
        sources = scenario.args_from.get(consumer, {})
        if arg not in sources:
            continue
        source = Source.parse(sources[arg])
        earlier = set(order[:position[consumer]])
        found, value = source.compute(reference_lookup(reported, earlier))
        read_found, read_digest = bool(e.get("found")), e.get("vd")
        # Producers with a value: reported ok, or never reported but ended ok in the trace.
        producers = [p for p in source.producers if p in earlier
                     and (reported[p].ok if p in reported else p in settled)]
        unreported = [p for p in source.producers if p in earlier and p not in reported]
        late = [p for p in producers if (e["t"], e["seq"]) < settled.get(p, (-1, -1))]
        witness = {"consumer": consumer, "producer": (late or producers or list(source.producers) or ["?"])[0],
                   "arg": arg, "reference": sources[arg], "attempt": e.get("attempt", 1), "started_at_ms": e["t"]}
        if late:
            producer = late[0]
            ended_ms = reported[producer].end_ms if producer in reported else settled[producer][0]
            witness["producer_ended_at_ms"] = ended_ms
            violations.append(Violation(
                "future-read", f"{consumer} started at {e['t']} ms, before its producer {producer} ended at "
                f"{ended_ms} ms: its argument {arg!r} ({sources[arg]}) read "
                + ("a value that did not exist yet" if not read_found else "a value from before the producer ended"),
                witness))
        elif unreported:
            continue  # no reported value to compare with: `reported` lacks it, which is not "it returned none"
        elif found != read_found or (found and value_digest(value) != read_digest):
            violations.append(Violation(
                "missing-input", f"{consumer}'s argument {arg!r} ({sources[arg]}) read "
                + ("nothing" if not read_found else "another value") + " although its producer "
                f"{witness['producer']} returned " + ("one" if found else "none"), witness))
    return Verdict.of(NAME, violations) if violations else _PASSED
