"""How likely a finding is: which random draws a violation's witness rests on, and how probable
they are under the scenario's own distributions.

Owns `likelihood` (and `likelihood_of`, `likelihood_line`, what `harness run`, `harness explore` and
`check_scheduler` print): the needs of a witness (`harness.report.witness_needs`, one rule per
label) evaluated under the scenario's distributions (the latency tails come from
`harness.faults.tails`, the fault rates from the scenario), one need per random stream, into the
figure (`harness.report.likelihood_values`, which also words it). It reads a finished run, its
trace and its scenario; it never runs anything and never steers.

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
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from harness import moved
from harness.faults.failures import FailureModel
from harness.faults.latency import Fixed, LatencyModel
from harness.faults.tails import describe_model, median, tail_at_least, tail_at_most
from harness.report.likelihood_values import Likelihood, Need
from harness.report.witness_needs import RULED, AttemptView, Fault, Running, rule
from harness.run import RunResult
from harness.scenario.spec import Scenario
from harness.sim.streams import RandomStreams


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


def _evaluate_running(raw: Running, result: RunResult, scenario: Scenario, random_run: bool) -> Need | None:
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


def _evaluate_fault(raw: Fault, scenario: Scenario) -> Need:
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
    view = AttemptView(result)
    try:
        found = rule(label, witness, view)
    except (KeyError, TypeError, ValueError, IndexError):
        found = "the witness cannot be read"
    if isinstance(found, str):
        return Likelihood(label, False, mode, notes=(found,), explorer=explorer)
    evaluating = scenario if scenario is not None else result.scenario
    needs: dict[tuple[str, str, int], Need] = {}
    dropped: list[str] = []
    for raw in found.raw:
        if isinstance(raw, Running):
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


# Names split out of this module still import from it, with a warning (see harness.moved).
__getattr__ = moved.forward(__name__)
