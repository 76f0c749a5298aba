"""How likely a finding is: which random draws a violation's witness rests on, and how probable
they are under the scenario's own distributions.

Owns the *needs* of a witness (one rule per label, below), their probabilities (the latency tails
come from `harness.faults.tails`) and the wording of the figure that `harness run`, `harness explore`
and `check_scheduler` print. It reads a finished run, its trace and its scenario; it never runs
anything and never steers.

A need is a fact of the run that the witness rests on and that a random draw decided:
- an attempt was still running at a moment T (it outlived its timeout; it had not ended when another
  call started, when its batch returned, when the grace period ended). Its work ends at most its
  latency after its start, so its drawn latency was at least T minus its start (never computed for
  a tool that holds file locks or delegates: waiting, not latency, may have kept it running);
- an attempt met an injected failure (the call's failure rate), or the transport delivered it twice
  (the fault plan's duplicate-delivery rate).

The rules, one sentence per label:
- ghost-effect: every attempt of the call up to the first whose effect landed ended without success,
  abandoned while still running or by an injected failure;
- duplicate-effect: the second attempt with an effect exists, so every attempt before it ended
  without success (as above); one attempt that landed twice was delivered twice;
- lost-update, stale-read, torn-read, future-read, reordered-effect (and cross-agent-*): a racing
  touch of the call that started later came before one of the call that started first, so the first
  was still running when the later one started (nothing, if they started together; a future-read of
  a result: the producer was still running when the consumer started); an attempt after the first
  adds how its predecessors ended;
- exclusivity: the call that started first was still running when the other started;
- cap-exceeded (exactly one call over the cap): every running call but the last to start was still
  running then;
- grace-exceeded: the call was still running when the grace period ended;
- orphaned-call: the call was still running when its batch returned.
Every other label: not computed. A retry is taken to exist because its predecessor failed or timed out.

The figure is the product of the needs' probabilities (each comes from its own named stream, so they
are independent): an upper bound on the share of the scenario's runs that meet every need, hence on
how often this witness can show — not an estimate of how often the label shows. A timeout counted
from the attempt's own start is the same in every run; a moment set by the rest of the run (another
call's start) makes the figure one *given this run's other timings*. Latency probabilities are the
distributions' exact values for the harness's whole-millisecond draws (`harness.faults.latency`).

Order-first runs draw no latencies: the explorer chose the order. Only needs that hold whatever
order realises the witness are kept there (a timeout counted from the attempt's start, injected
faults); the rest of the order's likelihood is said to be not computed. Swarm runs change the
scenario; given the user's `scenario`, needs are evaluated under its distributions, and a fault only
swarm switched on has no probability.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from harness.faults.failures import FailureModel
from harness.faults.latency import Fixed, LatencyModel
from harness.faults.tails import describe_model, in_ms, median, tail_at_least, tail_at_most
from harness.oracles.facts import Attempt, RunFacts
from harness.oracles.verdict import Violation
from harness.report.races import racing_touches
from harness.run import RunResult
from harness.scenario.spec import Scenario
from harness.sim.streams import RandomStreams

#: Below this per-run probability a finding is called unlikely in the text reports.
UNLIKELY_BELOW = 1e-3

#: The labels that have a rule (see the module docstring); others are not computed.
RACES = ("lost-update", "stale-read", "torn-read", "future-read", "reordered-effect", "cross-agent-lost-update",
         "cross-agent-stale-read")
RULED = ("ghost-effect", "duplicate-effect", *RACES, "exclusivity", "cap-exceeded", "grace-exceeded",
         "orphaned-call")

_TIMED_OUT = re.compile(r"timed out after (\d+) ms")


# -- needs ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Need:
    """One draw the witness rests on, and how probable it is under the scenario's distributions."""

    kind: str  # "latency", "failure" or "duplicate-delivery"
    call: str
    attempt: int
    tool: str
    because: str
    #: P(the draw meets the need); None where it cannot be justified (the note says why).
    probability: float | None
    #: The same in every run (a timeout from the attempt's own start, a fault rate); False: set by
    #: other moments of this run.
    fixed: bool
    at_least_ms: int | None = None
    median_ms: float | None = None
    model: str | None = None
    model_json: Mapping[str, Any] | None = None
    #: Random runs: what this run drew, and how unusual that draw is on its own side of the median.
    drawn_ms: int | None = None
    drawn_side: str | None = None
    drawn_tail: float | None = None
    rate: float | None = None
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "call": self.call, "attempt": self.attempt, "tool": self.tool,
                "because": self.because, "probability": self.probability, "fixed": self.fixed,
                "at_least_ms": self.at_least_ms, "median_ms": self.median_ms, "model": self.model,
                "model_json": dict(self.model_json) if self.model_json is not None else None,
                "drawn_ms": self.drawn_ms, "drawn_side": self.drawn_side, "drawn_tail": self.drawn_tail,
                "rate": self.rate, "note": self.note}

    def describe(self) -> str:
        who = f"{self.call} (attempt {self.attempt})"
        if self.kind == "latency":
            details = [self.model or "model unknown"]
            if self.drawn_ms is not None:
                details.append(f"drew {in_ms(self.drawn_ms)}")
            text = f"{who} >= {in_ms(self.at_least_ms or 0)}, as it {self.because} ({self.tool}: {'; '.join(details)})"
        elif self.kind == "failure":
            text = f"{who} to fail by an injected failure"
        else:
            text = f"{who} to be delivered twice"
        text += f": P {_p(self.probability)}" if self.probability is not None else ""
        return text + (f" [{self.note}]" if self.note else "")


@dataclass(frozen=True)
class Likelihood:
    """What a violation's witness rests on and how likely that is (see the module docstring)."""

    label: str
    computed: bool
    mode: str  # "random", "order-first" or "jittered"
    needs: tuple[Need, ...] = ()
    #: Upper bound on the share of runs meeting every need with a probability; None: not computed.
    probability: float | None = None
    conditional: bool = False
    #: Facts that needed no draw (calls that started together) and what was left out, in words.
    notes: tuple[str, ...] = ()
    explorer: str = ""

    @property
    def unlikely(self) -> bool:
        return self.probability is not None and self.probability < UNLIKELY_BELOW

    def to_json(self) -> dict[str, Any]:
        return {"computed": self.computed, "mode": self.mode, "probability": self.probability,
                "unlikely": self.unlikely, "unlikely_below": UNLIKELY_BELOW, "conditional": self.conditional,
                "needs": [need.to_json() for need in self.needs], "notes": list(self.notes),
                "summary": self.line()}

    def line(self) -> str | None:
        """One line for a person (what reports print after `likelihood: `), or None when nothing is
        computed for the label."""
        if not self.computed:
            return None
        parts: list[str] = []
        if self.needs:
            parts.append("needs " + "; and ".join(need.describe() for need in self.needs))
        if self.probability is not None and self.needs:
            that = "that" if len(self.needs) == 1 else "all of that"
            given = ", given this run's other timings" if self.conditional else ""
            if self.probability >= 1:
                parts.append(f"certain under the scenario's distributions{given}: no rare draw")
            elif self.probability <= 0:
                parts.append(f"UNLIKELY: no run of the scenario's own distributions meets {that}{given}")
            else:
                share = _share(self.probability)
                some = (f"{share} of the scenario's draws meets" if share.startswith("1 ")
                        else f"{share} of the scenario's runs meet")
                parts.append(("UNLIKELY: " if self.unlikely else "") + f"at most {some} {that}{given}")
        elif self.probability is not None:
            parts.append("no rare draw found in what the witness rests on")
        parts.extend(self.notes)
        # Parts joined, never capitalised: most begin with a call id, spelled as the scenario spells it.
        return "; ".join(parts) or None


def _p(p: float) -> str:
    return f"{p:.2g}" if p >= 1e-4 or p == 0 else f"{p:.1e}"


def _share(p: float) -> str:
    """A per-run probability as a share of runs, rounded so the bound is never understated."""
    if p <= 0:
        return "0 runs (never)"
    if p >= 0.01:
        return f"{min(100.0, math.ceil(p * 1000) / 10):g}%"
    inverse = 1 / p
    if inverse < 1e6:
        digits = 10 ** max(0, math.floor(math.log10(inverse)) - 1)  # two significant figures, rounded down
        return f"1 run in {math.floor(inverse / digits) * digits:,}"
    return f"1 run in 10^{math.floor(math.log10(inverse))}"


# -- what a witness rests on ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Running:
    attempt: Attempt
    until_t: int
    because: str
    fixed: bool


@dataclass(frozen=True, slots=True)
class _Fault:
    kind: str  # "failure" or "duplicate-delivery"
    attempt: Attempt
    because: str


@dataclass
class _Found:
    raw: list[_Running | _Fault] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class _View:
    """The run's attempts and abandonments, as the rules ask for them."""

    def __init__(self, result: RunResult) -> None:
        self.result = result
        self.facts = RunFacts.of(result)
        self.by_key: dict[tuple[str, int], Attempt] = {}
        for a in self.facts.attempts:
            if a.opened:
                self.by_key.setdefault((a.call, a.attempt), a)
        self.reasons = {(e["call"], e["attempt"]): str(e.get("reason") or "") for e in result.trace
                        if e["ev"] == "abandon"}

    def attempt(self, call: str, number: int) -> Attempt | None:
        return self.by_key.get((call, number))

    def running_at(self, call: str, t: int) -> Attempt | None:
        """The call's attempt that was running at `t` (the last started at or before it)."""
        started = [a for a in self.facts.attempts_of(call) if a.opened and a.start_t <= t]
        return max(started, key=lambda a: (a.start_t, a.start_seq)) if started else None

    def unsuccessful(self, found: _Found, call: str, upto: int) -> None:
        """How attempts 1..upto of `call` ended without success, as needs: abandoned while still
        running, or an injected failure (a tool's own error and a rate limit need no draw)."""
        for number in range(1, upto + 1):
            a = self.attempt(call, number)
            if a is None:
                continue
            if a.abandoned_t is not None and a.abandoned_seq is not None and a.abandoned_seq < a.end_seq:
                reason = self.reasons.get((call, number), "")
                timed = _TIMED_OUT.search(reason)
                if timed is not None and a.abandoned_t - a.start_t == int(timed.group(1)):
                    because = f"outlived its {in_ms(int(timed.group(1)))} timeout"
                    found.raw.append(_Running(a, a.abandoned_t, because, True))
                else:
                    because = (f"was still running when it was abandoned as {a.abandoned_as or 'failed'} at "
                               f"{in_ms(a.abandoned_t)}")
                    found.raw.append(_Running(a, a.abandoned_t, because, False))
            elif a.fault == "failure":
                found.raw.append(_Fault("failure", a, f"attempt {number + 1} exists: attempt {number} failed"))

    def overlap(self, found: _Found, a: Attempt, b: Attempt, interleaved: bool = True) -> None:
        """Two attempts' windows overlapped: the one that started first was still running when the
        other started (`interleaved`: a touch of the later one came before one of the first)."""
        first, later = (a, b) if (a.start_t, a.start_seq) <= (b.start_t, b.start_seq) else (b, a)
        if first.start_t == later.start_t:
            found.notes.append(f"{first.call} and {later.call} started together (at {in_ms(first.start_t)}): "
                               "their windows overlap whatever their latencies")
        elif not interleaved:
            found.notes.append(f"the racing touches came in the order {first.call} and {later.call} started: "
                               "the scheduler's order, no latency")
        else:
            found.raw.append(_Running(first, later.start_t,
                                      f"was still running when {later.call} started, "
                                      f"{in_ms(later.start_t - first.start_t)} after it", False))


def _effect_attempts(view: _View, call: str, target: str | None, effects: list[Mapping[str, Any]] | None
                     ) -> list[int]:
    """The attempt numbers of a call whose mutating touches the witness names, in order."""
    numbers: set[int] = set()
    for touch in view.facts.touches_of(call):
        if not touch.mutating:
            continue
        if effects is not None:
            if any(touch.t == e.get("t") and touch.target == e.get("target") and touch.op == e.get("op")
                   for e in effects):
                numbers.add(touch.attempt)
        elif touch.target == target and touch.op == "append":
            numbers.add(touch.attempt)
    return sorted(numbers)


def _rule(label: str, w: Mapping[str, Any], view: _View) -> _Found | str:
    """The needs of a witness, or why none are computed."""
    found = _Found()
    if label == "ghost-effect":
        numbers = _effect_attempts(view, w["call"], None, list(w["effects"]))
        if not numbers:
            return "the witness's effects are not in the trace"
        view.unsuccessful(found, w["call"], numbers[0])
        if not found.raw:
            found.notes.append(f"{w['call']} was reported {w.get('reported')} without being abandoned while running "
                               "or failing by an injected failure: no draw decided that")
        return found
    if label == "duplicate-effect":
        if "attempts" in w:
            call, numbers = w["call"], sorted(int(n) for n in w["attempts"])
        elif "ledger" in w or "duplicated" in w:
            call = w["duplicated"] if "duplicated" in w else w["call"]
            target = w["target"] if "duplicated" in w else f"ledger:{w['ledger']}"
            numbers = _effect_attempts(view, call, target, None)
        else:
            return "the witness names no attempts"
        if len(numbers) >= 2:
            view.unsuccessful(found, call, numbers[1] - 1)
        elif len(numbers) == 1:
            a = view.attempt(call, numbers[0])
            if a is None or "duplicate_delivery" not in a.injected:
                return "one attempt landed twice without a duplicate delivery"
            found.raw.append(_Fault("duplicate-delivery", a, "landed twice from one request"))
            view.unsuccessful(found, call, numbers[0] - 1)
        else:
            return "the witness's effects are not in the trace"
        return found
    if label in RACES:
        return _race(label, w, view, found)
    if label == "exclusivity":
        start = int(w["overlap_ms"][0])
        a, b = view.running_at(w["call"], start), view.running_at(w["other"], start)
        if a is None or b is None:
            return "the overlapping attempts are not in the trace"
        view.overlap(found, a, b)
        return found
    if label == "cap-exceeded":
        running, t = list(w["running"]), int(w["t"])
        if len(running) != int(w["cap"]) + 1:
            return f"{len(running)} calls ran at once, more than one over the cap: no single set of them is needed"
        attempts = [view.running_at(call, t) for call in running]
        if any(a is None for a in attempts):
            return "the running attempts are not in the trace"
        for a in attempts:
            assert a is not None
            if a.start_t < t:
                found.raw.append(_Running(a, t, f"was still running at {in_ms(t)}, when the cap was exceeded", False))
        if not found.raw:
            found.notes.append(f"all {len(running)} started at {in_ms(t)}: no latency decided that")
        return found
    if label == "grace-exceeded":
        end = int(w["interrupt_at_ms"]) + int(w["grace_ms"])
        a = view.running_at(w["call"], end)
        if a is None:
            return "the attempt is not in the trace"
        found.raw.append(_Running(a, end, f"was still running when the grace period ended ({in_ms(end)})", False))
        view.unsuccessful(found, a.call, a.attempt - 1)
        return found
    if label == "orphaned-call":
        returned = int(w["returned_at_ms"])
        a = view.running_at(w["call"], returned)
        if a is None:
            return "the attempt is not in the trace"
        found.raw.append(_Running(a, returned, f"was still running when batch {w['batch']} returned "
                                               f"({in_ms(returned)})", False))
        view.unsuccessful(found, a.call, a.attempt - 1)
        return found
    return f"not computed for {label}"


def _race(label: str, w: Mapping[str, Any], view: _View, found: _Found) -> _Found | str:
    """Two calls raced: the one that started first was still running when the other started."""
    if "consumer" in w:  # data flow: the consumer started before its producer had ended
        consumer = view.running_at(w["consumer"], int(w["started_at_ms"]))
        producer = view.running_at(w["producer"], int(w["started_at_ms"]))
        if consumer is None or producer is None:
            return "the racing attempts are not in the trace"
        view.overlap(found, producer, consumer)
        view.unsuccessful(found, producer.call, producer.attempt - 1)
        return found
    by_seq = {touch.seq: touch for touch in view.facts.touches}
    groups: dict[tuple[str, int], list[int]] = {}
    for picked in racing_touches(Violation(label, "", w), view.result):
        touch = by_seq.get(picked["seq"])
        if touch is not None:
            groups.setdefault((touch.call, touch.attempt), []).append(touch.seq)
    attempts = [(view.attempt(call, number), seqs) for (call, number), seqs in groups.items()]
    parties = [(a, seqs) for a, seqs in attempts if a is not None]
    if len({a.call for a, _ in parties}) < 2:
        return "the witness names no two racing calls"
    for i, (a, seqs_a) in enumerate(parties):
        view.unsuccessful(found, a.call, a.attempt - 1)
        for b, seqs_b in parties[i + 1:]:
            if a.call == b.call:
                continue
            first_seqs, later_seqs = ((seqs_a, seqs_b) if (a.start_t, a.start_seq) <= (b.start_t, b.start_seq)
                                      else (seqs_b, seqs_a))
            view.overlap(found, a, b, interleaved=min(later_seqs) < max(first_seqs))
    return found


# -- evaluation ---------------------------------------------------------------------------------------


def _latency_model(scenario: Scenario, call: str, tool: str) -> LatencyModel | None:
    model = scenario.call_latency.get(call)
    if model is None:
        spec = scenario.catalogue.get(tool)
        model = spec.latency if spec is not None else None
    return model


def _failure_model(scenario: Scenario, call: str, tool: str) -> FailureModel | None:
    return scenario.call_failures.get(call, scenario.tool_failures.get(tool))


def _drawn(result: RunResult, model: LatencyModel, call: str, attempt: int) -> int:
    """The latency this (random) run drew for the attempt: the stream the executor draws from."""
    if isinstance(model, Fixed):
        return model.ms
    return model.sample(RandomStreams(result.seed).stream("latency", call, attempt), attempt)


def _evaluate_running(raw: _Running, result: RunResult, scenario: Scenario, random_run: bool) -> Need | None:
    a = raw.attempt
    at_least = raw.until_t - a.start_t
    if at_least <= 0:
        return None
    base = Need("latency", a.call, a.attempt, a.tool, raw.because, None, raw.fixed, at_least_ms=at_least)
    spec = result.scenario.catalogue.get(a.tool)
    if spec is not None and (spec.file_lock or spec.delegates):
        return replace(base, note="it waits for " + ("file locks" if spec.file_lock else "a subagent")
                       + ", so its latency alone need not have kept it running: not computed")
    model = _latency_model(scenario, a.call, a.tool)
    if model is None:
        return replace(base, note="its latency model is unknown: not computed")
    probability = tail_at_least(model, a.attempt, at_least)
    middle = median(model, a.attempt)
    note = None if probability is not None else f"{type(model).__name__} has no known tail: not computed"
    ran = _latency_model(result.scenario, a.call, a.tool)
    drawn = side = tail = None
    if random_run and ran is not None:
        drawn = _drawn(result, ran, a.call, a.attempt)
        if ran.to_json() != model.to_json():
            note = f"this run drew from {describe_model(ran, a.attempt)} (swarm); the probability is the scenario's"
        elif middle is not None:
            side = ">=" if drawn >= middle else "<="
            tail = (tail_at_least(model, a.attempt, drawn) if side == ">=" else
                    tail_at_most(model, a.attempt, drawn))
    return replace(base, probability=probability, median_ms=middle, model=describe_model(model, a.attempt),
                   model_json=model.to_json(), drawn_ms=drawn, drawn_side=side, drawn_tail=tail, note=note)


def _evaluate_fault(raw: _Fault, scenario: Scenario) -> Need:
    a = raw.attempt
    base = Need(raw.kind, a.call, a.attempt, a.tool, raw.because, None, True)
    if raw.kind == "failure":
        model = _failure_model(scenario, a.call, a.tool)
        if model is not None and a.attempt in model.attempts:
            return replace(base, probability=1.0, rate=1.0, note=f"the scenario fails attempt {a.attempt}")
        rate = model.rate if model is not None else 0.0
        note = "a permanent failure: one draw for every attempt" if model is not None and model.permanent else None
    else:
        rate = scenario.faults.duplicate_delivery
        note = None
    if rate <= 0:
        return replace(base, rate=0.0, note="switched on by swarm: the scenario itself never injects it")
    return replace(base, probability=rate, rate=rate, note=note)


def _key(need: Need, scenario: Scenario) -> tuple[str, str, int]:
    """The random stream a need is about: needs on one stream are one draw."""
    if need.kind == "failure":
        model = _failure_model(scenario, need.call, need.tool)
        return ("failure", need.call, 0 if model is not None and model.permanent else need.attempt)
    return (need.kind, need.call, need.attempt)


def likelihood(result: RunResult, label: str, witness: Mapping[str, Any], *, scenario: Scenario | None = None,
               explorer: str = "") -> Likelihood:
    """What the witness of a `label` violation in `result` rests on, and how likely that is.

    `scenario`: whose distributions to evaluate the needs under (default: the run's own; pass the
    user's scenario for a swarm run, whose scenario swarm changed). `explorer`: how the run was made
    (e.g. 'pct(d=2)'), named where the order was the explorer's choice."""
    order_first = result.tape is not None
    mode = "order-first" if order_first else "jittered" if result.jitter else "random"
    if result.jitter:
        return Likelihood(label, False, mode, notes=("latencies were jittered (an exploration knob), not drawn from "
                                                     "the scenario's distributions: not computed",),
                          explorer=explorer)
    if label not in RULED:
        return Likelihood(label, False, mode, notes=(f"not computed for {label}",), explorer=explorer)
    view = _View(result)
    try:
        found = _rule(label, witness, view)
    except (KeyError, TypeError, ValueError, IndexError):
        found = "the witness cannot be read"
    if isinstance(found, str):
        return Likelihood(label, False, mode, notes=(found,), explorer=explorer)
    evaluating = scenario if scenario is not None else result.scenario
    needs: dict[tuple[str, str, int], Need] = {}
    dropped: list[str] = []
    for raw in found.raw:
        if isinstance(raw, _Running):
            need = _evaluate_running(raw, result, evaluating, not order_first)
            if need is None:
                continue
        else:
            need = _evaluate_fault(raw, evaluating)
        if order_first and not need.fixed:
            # Set by when other steps happened, which the explorer chose: no latency it implies is honest.
            dropped.append(f"{need.call} {need.because}")
            continue
        key = _key(need, evaluating)
        kept = needs.get(key)
        if kept is None or (need.at_least_ms or 0) > (kept.at_least_ms or 0):
            needs[key] = need
    kept_needs = tuple(needs.values())
    notes = list(found.notes)
    computable = [n.probability for n in kept_needs if n.probability is not None]
    probability: float | None = math.prod(computable) if computable else None
    if not kept_needs and not dropped:
        probability = 1.0  # nothing the witness rests on was decided by a draw
    if kept_needs and not computable:
        probability = None
    if order_first:
        notes = [f"the order of the calls' steps was chosen by the explorer{f' ({explorer})' if explorer else ''}"
                 + (f"; what it needs of the scenario's latencies ({'; '.join(dropped)}) is not computed" if dropped
                    else ": its likelihood under the scenario's latencies is not computed")
                 + (", beyond the needs above" if kept_needs else "")]
        if not kept_needs:
            probability = None
    if scenario is not None:
        notes.extend(_switched_on(result.scenario, scenario))
    conditional = any(not n.fixed for n in kept_needs if n.probability is not None)
    return Likelihood(label, True, mode, kept_needs, probability, conditional, tuple(notes), explorer)


def _switched_on(ran: Scenario, own: Scenario) -> list[str]:
    """What a swarm run had that the user's scenario has not: the figure is an upper bound either way,
    but a reader should know the moment a need was measured from came from swarm."""
    notes = []
    if ran.interrupt is not None and own.interrupt is None:
        notes.append("the user interrupt was switched on by swarm: the scenario itself has none")
    if ran.faults.crash_at_ms is not None and own.faults.crash_at_ms is None:
        notes.append("the crash was switched on by swarm: the scenario itself has none")
    return notes


def likelihood_of(result: RunResult, violation: Any, *, scenario: Scenario | None = None) -> Likelihood:
    """`likelihood` for a `Violation` or an explorer's `Finding` (anything with `label` and `witness`;
    a finding's `found_by` names the explorer)."""
    return likelihood(result, violation.label, violation.witness, scenario=scenario,
                      explorer=str(getattr(violation, "found_by", "") or ""))


def likelihood_line(result: RunResult, violation: Any, *, scenario: Scenario | None = None) -> str | None:
    """The one line a report prints next to a violation's `why`, or None when nothing is computed for
    its label. `violation`: a `Violation` or a `Finding`; `scenario`: the user's scenario when a swarm
    run changed it (its distributions are the ones that count)."""
    return likelihood_of(result, violation, scenario=scenario).line()
