"""The sentences of the labels about the results a model receives: missing, duplicate, orphan,
out-of-order, mispaired, fabricated and misreported results, and an argument that did not receive
its producer's value.

Owns one template per such label (`harness.report.explain` registers them). It never judges.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.report.explain_words import RunView, brief, listed


def missing_result(w: Mapping[str, Any], run: RunView) -> str:
    missing = w["missing"]
    they = "it" if len(missing) == 1 else "they"
    return (f"Batch {w['batch']} returned without a result for {listed(missing)}: the model never learns what "
            f"{they} did, and an API that wants one tool message per call rejects the turn. Reported: "
            f"{listed(w['reported'])}.")


def duplicate_result(w: Mapping[str, Any], run: RunView) -> str:
    count = list(w["reported"]).count(w["call"])
    return (f"Batch {w['batch']} reported {w['call']} {count} times ({listed(w['reported'])}): the model receives "
            "two answers to one call.")


def orphan_result(w: Mapping[str, Any], run: RunView) -> str:
    other = w.get("belongs_to_batch")
    which = f"belongs to batch {other}" if other is not None else "is no call of this scenario"
    return (f"Batch {w['batch']} reported a result for {w['call']}, which {which}: the model receives an "
            "answer to a call it did not make in this turn.")


def out_of_order(w: Mapping[str, Any], run: RunView) -> str:
    model, reported = list(w["model_order"]), list(w["reported_order"])
    i = next((i for i, (a, b) in enumerate(zip(model, reported, strict=False)) if a != b), 0)
    return (f"Batch {w['batch']} reported its results as {listed(reported)} instead of model order "
            f"{listed(model)}: {reported[i]} came back in position {i + 1}, where the model expects {model[i]}. "
            "A runtime that pairs results with calls by position hands the model the wrong answers.")


def mispaired_result(w: Mapping[str, Any], run: RunView) -> str:
    producer = w.get("produced_by")
    if producer is None:
        return (f"The value reported for {w['call']} was produced by none of its attempts, nor by any other "
                "call: the model reads an answer that no call gave.")
    return (f"The value reported for {w['call']} was produced by {producer}: the model reads {producer}'s "
            f"answer as {w['call']}'s.")


def fabricated_result(w: Mapping[str, Any], run: RunView) -> str:
    return (f"{w['call']} was reported ok in batch {w['batch']} but never started: the model is told about "
            "work that never ran.")


_TOLD = {"error": "that it failed", "timeout": "that it timed out", "cancelled": "that it was cancelled",
         "unknown": "that its effect is unknown, though nothing made it uncertain"}


def misreported_outcome(w: Mapping[str, Any], run: RunView) -> str:
    call, reported, actual = w["call"], w["reported"], w["actual"]
    attempt = f" (attempt {w['attempt']})" if w["attempt"] != 1 else ""
    if reported != "ok":
        error = w.get("reported_error")
        told = f"reported it as {reported}" + (f" ({brief(error, 60)!r})" if error else "")
        effect = _TOLD.get(reported, f"that it ended {reported}")
        return (f"{call} ended ok at {w['ended_at_ms']} ms{attempt}, yet batch {w['batch']} {told} at "
                f"{w['reported_at_ms']} ms: the scheduler held the result and told the model {effect}. The model "
                f"never sees what {call} returned and may run it again or tell the user it did not happen.")
    if w.get("rolled_back_at_ms") is not None:
        return (f"Batch {w['batch']} reported {call} ok at {w['reported_at_ms']} ms, but the runtime had rolled back "
                f"to checkpoint {w['checkpoint']} at {w['rolled_back_at_ms']} ms, undoing its change to "
                f"{w['target']}. The model is told about work that is gone and builds on it.")
    if actual is None:
        did = "was still running when the batch returned"
    elif w.get("abandoned"):
        did = f"was given up on as {actual} at {w['ended_at_ms']} ms"
    else:
        error = w.get("actual_error")
        did = f"ended {actual}" + (f" ({brief(error, 60)!r})" if error else "") + f" at {w['ended_at_ms']} ms"
    return (f"Batch {w['batch']} reported {call} ok at {w['reported_at_ms']} ms, but none of its attempts "
            f"succeeded: its last{attempt} {did}. The model is told about work that did not happen and acts on a "
            "result no attempt returned.")


def missing_input(w: Mapping[str, Any], run: RunView) -> str:
    consumer, producer = w["consumer"], w["producer"]
    return (f"{consumer} started at {w['started_at_ms']} ms, after {producer} had returned, but its argument "
            f"{w['arg']!r} ({w['reference']}) did not receive {producer}'s value: the runtime did not pass the "
            f"result on. In model order {consumer} runs with the value {producer} returned.")
