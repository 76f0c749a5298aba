"""The sentences of the labels about effects and reads: what a race did to the world or to what a
call saw (torn, stale and future reads, lost updates, ghost, duplicate and reordered effects,
divergent results and worlds, and their cross-agent forms), each against what model order gives.

Owns one template per such label (`harness.report.explain` registers them). A template reads the
witness the oracle filled (`harness.oracles.anomalies`, `data_flow`, `turn_order`) and the run view;
it never judges and never decides which label a run gets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.report import plural
from harness.report.explain_words import MUTATING, RunView, Template, brief, effects_phrase, listed, thing_of


def _observation(observed: Mapping[str, Any]) -> str:
    if observed.get("outcome") == "ok":
        return brief(observed.get("value"))
    error = observed.get("error")
    return f"{observed.get('outcome')}" + (f" ({brief(error, 60)})" if error else "")


def _results(w: Mapping[str, Any]) -> str:
    """' It returned X; in model order it returns Y.' when the witness holds both and they differ."""
    observed, expected = w.get("observed"), w.get("expected")
    if not isinstance(observed, Mapping) or not isinstance(expected, Mapping) or observed == expected:
        return ""
    return f" It returned {_observation(observed)}; in model order it returns {_observation(expected)}."


def torn_read(w: Mapping[str, Any], run: RunView) -> str:
    reader, writer, target = w["call"], w["writer"], w["target"]
    began = run.touch(writer, target, w["truncated_at_ms"], lambda op: op in MUTATING)
    op = began["op"] if began is not None else "truncate"
    emptied = op == "truncate"
    text = (f"{reader} read {run.named(reader, target)} at {w['read_at_ms']} ms, after {writer} "
            + ("truncated it" if emptied else f"began writing it ({op})") + f" ({w['truncated_at_ms']} ms)")
    if w.get("written_at_ms") is not None:
        text += f" and before it wrote the new content ({w['written_at_ms']} ms)"
    state = "an empty file" if emptied else "a half-written file"
    tool = w.get("tool") or run.tools.get(reader)
    text += f": the tests ran against {state}." if tool == "run_tests" else f": {reader} saw {state}."
    if run.earlier(writer, reader):
        text += f" In model order {reader} comes after {writer} and would have read the new content."
    elif run.earlier(reader, writer):
        text += f" In model order {reader} comes before {writer} and would have read the old content."
    return text + _results(w)


def stale_read(w: Mapping[str, Any], run: RunView) -> str:
    reader, writer, target = w["call"], w["writer"], w["target"]
    session = target.startswith("session:")
    tool = w.get("tool") or run.tools.get(reader)
    if w.get("cached"):  # a read cache vouched for a copy taken before the write (hermes' read_file dedup)
        return (f"{reader}'s read cache answered 'File unchanged' for {run.named(reader, target)} at "
                f"{w['read_at_ms']} ms, but {writer} had written it at {w['written_at_ms']} ms, after the cached "
                f"copy was read" + (f" ({w['cached_by']}'s read at {w['cached_at_ms']} ms, running beside {writer})"
                                    if "cached_by" in w else "")
                + " and before the cache took the file's mtime: the mtime has not moved since, so "
                f"{reader} went on with the old content. In model order {writer} comes before {reader}, so "
                f"{reader} would have seen {writer}'s change." + _results(w))
    if tool == "run_tests" and not session:
        saw = "the tests ran against the old file"
    else:
        saw = f"{reader} saw the old " + ("value" if session else "content")
    text = (f"{reader} read {run.named(reader, target)} at {w['read_at_ms']} ms, before {writer} wrote it "
            f"({w['written_at_ms']} ms): {saw}. In model order {writer} comes before {reader}, so {reader} "
            f"would have seen {writer}'s change.")
    if "final" in w:
        text += " What it wrote from that stale view is why the final world differs from model order."
    return text + _results(w)


def future_read(w: Mapping[str, Any], run: RunView) -> str:
    if "consumer" in w:  # data flow: an argument taken from a result that did not exist yet
        consumer, producer = w["consumer"], w["producer"]
        ended = w.get("producer_ended_at_ms")
        return (f"{consumer} started at {w['started_at_ms']} ms, before {producer} ended"
                + (f" ({ended} ms)" if ended is not None else "")
                + f", so its argument {w['arg']!r} ({w['reference']}) was taken before {producer}'s result "
                f"existed. In model order {producer} ends before {consumer} starts, and {consumer} would have "
                f"received that result.")
    reader, writer, target = w["call"], w["writer"], w["target"]
    return (f"{reader} read {run.named(reader, target)} at {w['read_at_ms']} ms, after {writer} had already written it "
            f"({w['written_at_ms']} ms), though {writer} comes after {reader} in model order: {reader} saw a "
            f"change from its future. In model order {reader} would have read {thing_of(target)} before {writer} "
            f"changed it." + _results(w))


def lost_update(w: Mapping[str, Any], run: RunView) -> str:
    lost, other, target = w["lost"], w["overwritten_by"], w["target"]
    lost_at, over_at = w["lost_write_at_ms"], w["overwrite_at_ms"]
    if "write_order" in w:  # blind writes that landed out of model order
        return (f"{other} wrote {run.named(other, target)} at {over_at} ms, after {lost} had written it "
                f"({lost_at} ms), "
                f"though {lost} comes later in model order: {thing_of(target)} ends with {other}'s content and "
                f"{lost}'s update is lost. In model order {lost} writes last and its content is what remains.")
    read = run.read_before(other, target, lost_at)
    at = f" at {read['t']} ms" if read is not None else ""
    text = (f"{other} read {run.named(other, target)}{at}, before {lost} wrote it ({lost_at} ms), then overwrote it at "
            f"{over_at} ms with content based on what it had read: {lost}'s update is lost.")
    if run.earlier(lost, other):
        text += f" In model order {other} comes after {lost} and would have built on {lost}'s change."
    elif run.earlier(other, lost):
        text += (f" In model order {other} comes before {lost}, so {lost} would have written last, on top of "
                 f"{other}'s change.")
    return text


def ghost_effect(w: Mapping[str, Any], run: RunView) -> str:
    call, reported = w["call"], w["reported"]
    when = f" at {w['reported_at_ms']} ms" if w.get("reported_at_ms") is not None else ""
    told = f"{call} got no result" if reported == "no result" else f"{call} was reported {reported}{when}"
    return (f"{told}, yet its effect landed: {effects_phrase(w['effects'])}. The model is told the call did not "
            f"happen and may retry it or tell the user so; in model order a call reported {reported} leaves "
            "no effect behind.")


def duplicate_effect(w: Mapping[str, Any], run: RunView) -> str:
    if "duplicated" in w:  # a duplicate delivery that pushed another call's entry out of place
        return (f"{w['duplicated']} landed {w['deliveries']} times in {thing_of(w['target'])} (a duplicate "
                f"delivery), so {w['call']}'s entry took another place than in model order. In model order each "
                "request lands once." + _results(w))
    call = w["call"]
    if "ledger" in w:
        entries = [e["entry_id"] if isinstance(e, Mapping) else e for e in w.get("entries", ())]
        count = w.get("count", len(entries))
        return (f"{call} added {plural.count(count, 'entry', 'entries')} to {thing_of('ledger:' + w['ledger'])} "
                f"({listed(entries)}): the same "
                "external effect landed more than once, from a retry or a duplicate delivery. In model order "
                "each call's effect lands once.")
    attempts = w["attempts"]
    where = f"changed {thing_of(w['target'])}" if "target" in w else "took effect"
    return (f"{call} {where} in {len(attempts)} attempts ({listed(attempts)}): a retry repeated an effect that "
            "had already landed. In model order it takes effect once." + _results(w))


def reordered_effect(w: Mapping[str, Any], run: RunView) -> str:
    if "ledger" in w:
        return (f"The entries of {thing_of('ledger:' + w['ledger'])} landed in the order {listed(w['final_order'])}; "
                f"model order gives {listed(w['expected_order'])}: external effects happened in another order "
                "than the model asked for.")
    call, taker, target = w["call"], w.get("overtaken_by"), w["target"]
    if taker is None:
        return (f"{call}'s entry landed in {thing_of(target)} at {w['landed_at_ms']} ms in another place than in "
                "model order." + _results(w))
    theirs = run.touch(taker, target, None, lambda op: op == "append")
    at = f" ({theirs['t']} ms)" if theirs is not None else ""
    first, second = (call, taker) if run.earlier(call, taker) else (taker, call)
    return (f"{call} added its entry to {thing_of(target)} at {w['landed_at_ms']} ms and {taker} added its own"
            f"{at}: they landed in the opposite of model order, where {first} comes before {second}, so the "
            f"operations took effect in the wrong order." + _results(w))


def divergent_result(w: Mapping[str, Any], run: RunView) -> str:
    call = w["call"]
    if "follows" in w:  # the read saw what another violation on the same target left
        upstream = list(w.get("upstream") or [])
        by = f" ({listed(upstream)})" if upstream else ""
        text = (f"{call} read {run.named(call, w['target'])} at {w['read_at_ms']} ms and saw what the "
                f"{w['follows']} on it"
                f"{by} left, not the model-order content: its result follows from that violation, not from how "
                f"{call} itself was run.")
    elif "read_at_ms" in w:
        text = (f"{call} read {run.named(call, w['target'])} at {w['read_at_ms']} ms and saw other content than "
                "in model "
                "order, though no single racing write explains it.")
    else:
        text = f"{call} returned a different result than in model order, though no racing read explains it."
    return text + (_results(w) or " Compare its reads with the serial run's.")


def _state(target: str, value: object) -> str:
    if value is None:
        return "absent"
    if target.startswith("session:"):
        return f"as {brief(value, 60)}"
    return f"with content {str(value)[:8]}"


def divergent_world(w: Mapping[str, Any], run: RunView) -> str:
    if "ledger" in w and "field" in w:  # the same entries in the same order, one of them holding something else
        return (f"{thing_of('ledger:' + w['ledger'])} has its entries in model order, but the one of {w['call']} holds "
                f"{w['field']} {brief(w['entry'])} where model order gives {brief(w['expected_entry'])}: "
                "what it was built from differed when it was made.")
    if "ledger" in w:
        def calls(entries: Sequence[Mapping[str, Any]]) -> str:
            return listed([e.get("call_id") for e in entries])
        return (f"{thing_of('ledger:' + w['ledger'])} ends with {plural.count(len(w['final']), 'entry', 'entries')} "
                f"({calls(w['final'])}); model order leaves {len(w['expected'])} ({calls(w['expected'])}).")
    if "target" in w:
        target, writers = w["target"], w.get("writers") or []
        thing = thing_of(target)
        by = (f"written by {listed(writers)}" if writers
              else "and no call that took effect wrote to it: its writer wrote elsewhere, or not at all")
        because = "no lost update or misread explains the difference."
        if "follows" in w:  # a race on it by a call that did not write it (a torn read that made a patch fail)
            upstream = list(w.get("upstream") or [])
            because = (f"the difference is what the {w['follows']} on it"
                       + (f" ({listed(upstream)})" if upstream else "") + " left, not a bug of its own.")
        return (f"{thing[:1].upper() + thing[1:] if thing.startswith('the ') else thing} ends "
                f"{_state(target, w['final'])} where model order leaves it {_state(target, w['expected'])}, "
                f"{by}; {because}")
    return (f"The final world (digest {w['final_digest'][:12]}) differs from the model-order world (digest "
            f"{w['expected_digest'][:12]}), though no single file, shell value or ledger explains it.")


def across_agents(base: Template, lost: str) -> Template:
    """A cross-agent label: the base label's sentence, where model order is the order the turns
    started in (the order the turn-level check reports; no model order spans two agents), then what
    that check found."""
    def template(w: Mapping[str, Any], run: RunView) -> str:
        agents = w["agents"]
        said = base(w, run).replace("In model order", "In the order the turns started,").replace(
            "in model order", "in the order the turns started,")
        return (f"{said} {listed(agents)} are separate agents on one world, and no order of their "
                f"whole turns (each agent's in its own order) gives what the run observed: {lost} depends on how "
                "the agents' calls happened to interleave.")

    return template


_HINT_SAID = {"readOnlyHint": "read-only (readOnlyHint = true)", "idempotentHint": "idempotent (idempotentHint = true)",
              "openWorldHint": "closed-world (openWorldHint = false)"}


def hint_violated(w: Mapping[str, Any], run: RunView) -> str:
    effect = w["effect"]
    did = f"{effect['op']} {thing_of(effect['target'])} at {effect['at_ms']} ms"
    if w["hint"] == "readOnlyHint":
        trusted = (f"A scheduler that trusts the hint ran it beside {listed(w['beside'])}, as runtimes run read-only "
                   "tools together")
    elif w["hint"] == "idempotentHint":
        trusted = (f"A scheduler that trusts the hint retried it, and attempt {w['repeat']} changed the world again "
                   "(MCP carries no idempotency key)")
    else:
        how = f"ran it beside {listed(w['beside'])}" if "beside" in w else f"repeated it (attempt {w['repeat']})"
        trusted = f"A scheduler that trusts the hint treated the effect as local: it {how}"
    return (f"{w['call']} ({w['tool']}) says it is {_HINT_SAID[w['hint']]} but its attempt {effect['attempt']} did "
            f"{did}. {trusted}. MCP hints are a server's claim, untrusted unless the server is: the tool's real "
            "behaviour decides what may run together or again.")
