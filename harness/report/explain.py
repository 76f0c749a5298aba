"""Violations in words: one template per label, filled from the witness (and, when the run is at
hand, from its trace and model order), plus the touches a witness names.

Owns the sentences every report prints for a violation (`explain`: the text run report, run JSON's
`explanation`, the HTML page, `explore`'s `why:` line, `check_scheduler`'s message, the Perfetto
instant events) and `racing_touches`, the trace touches a witness is about (what the Gantt chart
labels and the Perfetto trace links with flow arrows). It never judges: which label a run gets and
what its witness holds are the oracles' business; a witness it cannot read falls back to the
oracle's own message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harness.oracles.facts import spelled
from harness.oracles.verdict import Violation
from harness.report import plural
from harness.run import RunResult
from harness.sim.trace import TraceEvent, canonical_json

_MUTATING = frozenset({"write", "truncate", "append", "remove", "mkdir"})


# -- words -------------------------------------------------------------------------------------


def _thing(target: str) -> str:
    """A touch target as a reader calls it."""
    if target == "session:cwd":
        return "the shell's working directory"
    if target.startswith("session:env:"):
        return f"the shell variable {target.removeprefix('session:env:')}"
    if target.startswith("ledger:"):
        return f"the {target.removeprefix('ledger:')} ledger"
    return target


def _and(items: Sequence[object]) -> str:
    words = [str(item) for item in items]
    if not words:
        return "none"
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _brief(value: object, limit: int = 80) -> str:
    text = value if isinstance(value, str) else canonical_json(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _observation(observed: Mapping[str, Any]) -> str:
    if observed.get("outcome") == "ok":
        return _brief(observed.get("value"))
    error = observed.get("error")
    return f"{observed.get('outcome')}" + (f" ({_brief(error, 60)})" if error else "")


def _results(w: Mapping[str, Any]) -> str:
    """' It returned X; in model order it returns Y.' when the witness holds both and they differ."""
    observed, expected = w.get("observed"), w.get("expected")
    if not isinstance(observed, Mapping) or not isinstance(expected, Mapping) or observed == expected:
        return ""
    return f" It returned {_observation(observed)}; in model order it returns {_observation(expected)}."


_EFFECT_VERBS = {"append": "added an entry to", "write": "wrote", "truncate": "truncated", "remove": "removed",
                 "mkdir": "created"}


class _Run:
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
        return spelled(target, alias) if alias else _thing(target)

    def read_before(self, call: str, target: str, t: int) -> TraceEvent | None:
        found = [e for e in self.touches if e["call"] == call and e["target"] == target
                 and e["op"] not in _MUTATING and e["t"] <= t]
        return found[-1] if found else None

    def interactive(self, tool: str) -> bool:
        if self.result is None:
            return tool == "clarify"
        spec = self.result.scenario.catalogue.get(tool)
        return bool(spec is not None and spec.declared.interactive)


def _order(run: _Run, first: str, then: str, sentence: str) -> str:
    """`sentence` when `first` comes before `then` in model order, else nothing."""
    return sentence if run.earlier(first, then) else ""


# -- one template per label --------------------------------------------------------------------


def _torn_read(w: Mapping[str, Any], run: _Run) -> str:
    reader, writer, target = w["call"], w["writer"], w["target"]
    began = run.touch(writer, target, w["truncated_at_ms"], lambda op: op in _MUTATING)
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


def _stale_read(w: Mapping[str, Any], run: _Run) -> str:
    reader, writer, target = w["call"], w["writer"], w["target"]
    session = target.startswith("session:")
    tool = w.get("tool") or run.tools.get(reader)
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


def _future_read(w: Mapping[str, Any], run: _Run) -> str:
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
            f"change from its future. In model order {reader} would have read {_thing(target)} before {writer} "
            f"changed it." + _results(w))


def _lost_update(w: Mapping[str, Any], run: _Run) -> str:
    lost, other, target = w["lost"], w["overwritten_by"], w["target"]
    lost_at, over_at = w["lost_write_at_ms"], w["overwrite_at_ms"]
    if "write_order" in w:  # blind writes that landed out of model order
        return (f"{other} wrote {run.named(other, target)} at {over_at} ms, after {lost} had written it "
                f"({lost_at} ms), "
                f"though {lost} comes later in model order: {_thing(target)} ends with {other}'s content and "
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


def _effects(effects: Sequence[Mapping[str, Any]]) -> str:
    first = effects[0]
    text = f"it {_EFFECT_VERBS.get(first['op'], first['op'])} {_thing(first['target'])} at {first['t']} ms"
    return text + (f" (and {plural.count(len(effects) - 1, 'more change')})" if len(effects) > 1 else "")


def _ghost_effect(w: Mapping[str, Any], run: _Run) -> str:
    call, reported = w["call"], w["reported"]
    when = f" at {w['reported_at_ms']} ms" if w.get("reported_at_ms") is not None else ""
    told = f"{call} got no result" if reported == "no result" else f"{call} was reported {reported}{when}"
    return (f"{told}, yet its effect landed: {_effects(w['effects'])}. The model is told the call did not "
            f"happen and may retry it or tell the user so; in model order a call reported {reported} leaves "
            "no effect behind.")


def _duplicate_effect(w: Mapping[str, Any], run: _Run) -> str:
    if "duplicated" in w:  # a duplicate delivery that pushed another call's entry out of place
        return (f"{w['duplicated']} landed {w['deliveries']} times in {_thing(w['target'])} (a duplicate "
                f"delivery), so {w['call']}'s entry took another place than in model order. In model order each "
                "request lands once." + _results(w))
    call = w["call"]
    if "ledger" in w:
        entries = [e["entry_id"] if isinstance(e, Mapping) else e for e in w.get("entries", ())]
        count = w.get("count", len(entries))
        return (f"{call} added {plural.count(count, 'entry', 'entries')} to {_thing('ledger:' + w['ledger'])} "
                f"({_and(entries)}): the same "
                "external effect landed more than once, from a retry or a duplicate delivery. In model order "
                "each call's effect lands once.")
    attempts = w["attempts"]
    where = f"changed {_thing(w['target'])}" if "target" in w else "took effect"
    return (f"{call} {where} in {len(attempts)} attempts ({_and(attempts)}): a retry repeated an effect that "
            "had already landed. In model order it takes effect once." + _results(w))


def _reordered_effect(w: Mapping[str, Any], run: _Run) -> str:
    if "ledger" in w:
        return (f"The entries of {_thing('ledger:' + w['ledger'])} landed in the order {_and(w['final_order'])}; "
                f"model order gives {_and(w['expected_order'])}: external effects happened in another order "
                "than the model asked for.")
    call, taker, target = w["call"], w.get("overtaken_by"), w["target"]
    if taker is None:
        return (f"{call}'s entry landed in {_thing(target)} at {w['landed_at_ms']} ms in another place than in "
                "model order." + _results(w))
    theirs = run.touch(taker, target, None, lambda op: op == "append")
    at = f" ({theirs['t']} ms)" if theirs is not None else ""
    first, second = (call, taker) if run.earlier(call, taker) else (taker, call)
    return (f"{call} added its entry to {_thing(target)} at {w['landed_at_ms']} ms and {taker} added its own"
            f"{at}: they landed in the opposite of model order, where {first} comes before {second}, so the "
            f"operations took effect in the wrong order." + _results(w))


def _divergent_result(w: Mapping[str, Any], run: _Run) -> str:
    call = w["call"]
    if "follows" in w:  # the read saw what another violation on the same target left
        upstream = list(w.get("upstream") or [])
        by = f" ({_and(upstream)})" if upstream else ""
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
        return f"as {_brief(value, 60)}"
    return f"with content {str(value)[:8]}"


def _divergent_world(w: Mapping[str, Any], run: _Run) -> str:
    if "ledger" in w and "field" in w:  # the same entries in the same order, one of them holding something else
        return (f"{_thing('ledger:' + w['ledger'])} has its entries in model order, but the one of {w['call']} holds "
                f"{w['field']} {_brief(w['entry'])} where model order gives {_brief(w['expected_entry'])}: "
                "what it was built from differed when it was made.")
    if "ledger" in w:
        def calls(entries: Sequence[Mapping[str, Any]]) -> str:
            return _and([e.get("call_id") for e in entries])
        return (f"{_thing('ledger:' + w['ledger'])} ends with {plural.count(len(w['final']), 'entry', 'entries')} "
                f"({calls(w['final'])}); model order leaves {len(w['expected'])} ({calls(w['expected'])}).")
    if "target" in w:
        target, writers = w["target"], w.get("writers") or []
        thing = _thing(target)
        by = (f"written by {_and(writers)}" if writers
              else "and no call that took effect wrote to it: its writer wrote elsewhere, or not at all")
        because = "no lost update or misread explains the difference."
        if "follows" in w:  # a race on it by a call that did not write it (a torn read that made a patch fail)
            upstream = list(w.get("upstream") or [])
            because = (f"the difference is what the {w['follows']} on it"
                       + (f" ({_and(upstream)})" if upstream else "") + " left, not a bug of its own.")
        return (f"{thing[:1].upper() + thing[1:] if thing.startswith('the ') else thing} ends "
                f"{_state(target, w['final'])} where model order leaves it {_state(target, w['expected'])}, "
                f"{by}; {because}")
    return (f"The final world (digest {w['final_digest'][:12]}) differs from the model-order world (digest "
            f"{w['expected_digest'][:12]}), though no single file, shell value or ledger explains it.")


def _missing_result(w: Mapping[str, Any], run: _Run) -> str:
    missing = w["missing"]
    they = "it" if len(missing) == 1 else "they"
    return (f"Batch {w['batch']} returned without a result for {_and(missing)}: the model never learns what "
            f"{they} did, and an API that wants one tool message per call rejects the turn. Reported: "
            f"{_and(w['reported'])}.")


def _duplicate_result(w: Mapping[str, Any], run: _Run) -> str:
    count = list(w["reported"]).count(w["call"])
    return (f"Batch {w['batch']} reported {w['call']} {count} times ({_and(w['reported'])}): the model receives "
            "two answers to one call.")


def _orphan_result(w: Mapping[str, Any], run: _Run) -> str:
    other = w.get("belongs_to_batch")
    which = f"belongs to batch {other}" if other is not None else "is no call of this scenario"
    return (f"Batch {w['batch']} reported a result for {w['call']}, which {which}: the model receives an "
            "answer to a call it did not make in this turn.")


def _out_of_order(w: Mapping[str, Any], run: _Run) -> str:
    model, reported = list(w["model_order"]), list(w["reported_order"])
    i = next((i for i, (a, b) in enumerate(zip(model, reported, strict=False)) if a != b), 0)
    return (f"Batch {w['batch']} reported its results as {_and(reported)} instead of model order "
            f"{_and(model)}: {reported[i]} came back in position {i + 1}, where the model expects {model[i]}. "
            "A runtime that pairs results with calls by position hands the model the wrong answers.")


def _mispaired_result(w: Mapping[str, Any], run: _Run) -> str:
    producer = w.get("produced_by")
    if producer is None:
        return (f"The value reported for {w['call']} was produced by none of its attempts, nor by any other "
                "call: the model reads an answer that no call gave.")
    return (f"The value reported for {w['call']} was produced by {producer}: the model reads {producer}'s "
            f"answer as {w['call']}'s.")


def _fabricated_result(w: Mapping[str, Any], run: _Run) -> str:
    return (f"{w['call']} was reported ok in batch {w['batch']} but never started: the model is told about "
            "work that never ran.")


_TOLD = {"error": "that it failed", "timeout": "that it timed out", "cancelled": "that it was cancelled",
         "unknown": "that its effect is unknown, though nothing made it uncertain"}


def _misreported_outcome(w: Mapping[str, Any], run: _Run) -> str:
    call, reported, actual = w["call"], w["reported"], w["actual"]
    attempt = f" (attempt {w['attempt']})" if w["attempt"] != 1 else ""
    if reported != "ok":
        error = w.get("reported_error")
        told = f"reported it as {reported}" + (f" ({_brief(error, 60)!r})" if error else "")
        effect = _TOLD.get(reported, f"that it ended {reported}")
        return (f"{call} ended ok at {w['ended_at_ms']} ms{attempt}, yet batch {w['batch']} {told} at "
                f"{w['reported_at_ms']} ms: the scheduler held the result and told the model {effect}. The model "
                f"never sees what {call} returned and may run it again or tell the user it did not happen.")
    if actual is None:
        did = "was still running when the batch returned"
    elif w.get("abandoned"):
        did = f"was given up on as {actual} at {w['ended_at_ms']} ms"
    else:
        error = w.get("actual_error")
        did = f"ended {actual}" + (f" ({_brief(error, 60)!r})" if error else "") + f" at {w['ended_at_ms']} ms"
    return (f"Batch {w['batch']} reported {call} ok at {w['reported_at_ms']} ms, but none of its attempts "
            f"succeeded: its last{attempt} {did}. The model is told about work that did not happen and acts on a "
            "result no attempt returned.")


def _scheduler_error(w: Mapping[str, Any], run: _Run) -> str:
    return (f"The scheduler raised in batch {w['batch']} ({w['error']}): the turn ends without results, and "
            "calls it had started may still be running.")


def _contract_error(w: Mapping[str, Any], run: _Run) -> str:
    return (f"The scheduler broke its contract in batch {w['batch']}: {w['error']}. A runtime cannot use what "
            "it yielded or returned.")


def _exclusivity(w: Mapping[str, Any], run: _Run) -> str:
    start, end = w["overlap_ms"]
    text = (f"{w['call']} ({w['tool']}) must run alone, but {w['other']} ({w['other_tool']}) ran alongside it "
            f"from {start} to {end} ms")
    if run.interactive(w["tool"]):
        text += ": the user was asked a question while other work went on, work the answer may change."
    else:
        text += "."
    if run.earlier(w["call"], w["other"]):
        text += f" In model order {w['other']} starts only after {w['call']} has ended."
    elif run.earlier(w["other"], w["call"]):
        text += f" In model order {w['call']} starts only after {w['other']} has ended."
    return text


def _cap_exceeded(w: Mapping[str, Any], run: _Run) -> str:
    limit = w["limit"]
    if limit == "max_concurrency":
        which = "the scenario's max_concurrency"
    else:
        which = f"the cap on {limit.removeprefix('tools.').removesuffix('.max_concurrency')} calls"
    running = list(w["running"])
    return (f"{len(running)} calls ran at once at {w['t']} ms ({_and(running)}), above {which} of {w['cap']}: "
            "the service behind them sees more concurrent requests than it allows.")


_STOPS = {"idle": "nothing was left to happen but the scheduler still waited: a deadlock",
          "time-bound": "the next event lay beyond the virtual-time bound",
          "event-budget": "the event budget ran out: a livelock or a runaway scheduler"}


def _hang(w: Mapping[str, Any], run: _Run) -> str:
    stop = str(w["stop"])
    batches = list(w.get("batches") or [w["batch"]])
    who = (f"The schedulers of batches {_and(batches)} (one turn of each agent still running)" if len(batches) > 1
           else f"The scheduler of batch {w['batch']}")
    text = f"{who} never returned: the run stopped at {w['stopped_at_ms']} ms because {_STOPS.get(stop, stop)}."
    if w.get("pending"):
        text += f" Still running: {_and(w['pending'])}."
    if w.get("never_started"):
        text += f" Never started: {_and(w['never_started'])}."
    if w.get("skipped"):
        text += f" Skipped but never reported: {_and(w['skipped'])}."
    if w.get("deadlock"):  # read from the live simulation at the hang (harness.run.hang)
        text += f" It is a deadlock: {'; '.join(map(str, w['deadlock']))}."
    return text + " The model waits for results that never come."


_HOW = {"completed": "returned", "scheduler-error": "raised", "contract-error": "broke its contract"}


def _orphaned_call(w: Mapping[str, Any], run: _Run) -> str:
    how = _HOW.get(str(w["status"]), str(w["status"]))
    ended = w.get("call_ended_at_ms")
    interrupt = w.get("interrupt_at_ms")
    turn = (f"after the user interrupt at {interrupt} ms cancelled its turn" if interrupt is not None
            else "after its turn ended")
    started = w.get("started_at_ms")
    what = (f"started {w['call']} at {started} ms" if started is not None
            else f"left {w['call']} running")
    return (f"The runtime {what} {turn}: batch {w['batch']} {how} at {w['returned_at_ms']} ms ("
            + (f"the call ended at {ended} ms" if ended is not None else "the call never ended")
            + "): its result can arrive only in a later turn, or never, and what it did goes unreported.")


def _start_after_interrupt(w: Mapping[str, Any], run: _Run) -> str:
    return (f"The user interrupted at {w['interrupt_at_ms']} ms, yet {w['call']} started at {w['started_at_ms']} "
            "ms: after an interrupt no new call may start.")


def _grace_exceeded(w: Mapping[str, Any], run: _Run) -> str:
    interrupt, grace = w["interrupt_at_ms"], w["grace_ms"]
    settled = w.get("settled_at_ms")
    return (f"The user interrupted at {interrupt} ms; {w['call']} was still running when the {grace} ms grace "
            f"period ended at {interrupt + grace} ms ("
            + (f"it ended at {settled} ms" if settled is not None else "it never ended")
            + "): the runtime neither stopped it nor gave it up in time.")


def _dropped_call(w: Mapping[str, Any], run: _Run) -> str:
    calls = list(w["calls"])
    text = (f"Batch {w['batch']} answered {_and(calls)} \"cancelled\" without ever starting "
            f"{'it' if len(calls) == 1 else 'them'} ({w['reason']!r}, at {w['skipped_at_ms']} ms), though nothing "
            "had stopped the turn: no user interrupt, crash, failed, refused or abandoned call came before. "
            "The model asked for work the runtime declined for no reason")
    if "interrupt" in str(w["reason"]).lower():
        text += ", and the answer blames a user interrupt that never happened"
    return text + "."


def _loop_blocked(w: Mapping[str, Any], run: _Run) -> str:
    how = ("called a sync tool directly on the event loop" if w["by"] == "sync-tool"
           else "called time.sleep on the event loop")
    return (f"The runtime {how}: {w['what']} held the loop from {w['since_ms']} ms for {w['held_ms']} ms while other "
            "tasks were ready to run. Nothing else on that loop moved meanwhile, neither the turn's other tool calls "
            "(they ran after it, serially) nor any other session the process serves. Offload blocking work with "
            "asyncio.to_thread or loop.run_in_executor, or make the tool async.")


def _order_dependent(w: Mapping[str, Any], run: _Run) -> str:
    a, b = w["seeds"]
    first, second = w["completion_orders"]
    what = []
    if w.get("results_differ"):
        what.append(f"{_and(w['results_differ'])} returned different results")
    if w.get("world_diff"):
        what.append(f"the world differs ({str(w['world_diff'][0]).strip()})")
    return (f"Seeds {a} and {b} finished the calls in different orders ({_and(first)}; then {_and(second)}) and "
            f"ended differently: {_and(what) if what else 'the outcomes differ'}. Latency alone decides the "
            "outcome; in model order it would be the same whatever finishes first.")


def _missing_input(w: Mapping[str, Any], run: _Run) -> str:
    consumer, producer = w["consumer"], w["producer"]
    return (f"{consumer} started at {w['started_at_ms']} ms, after {producer} had returned, but its argument "
            f"{w['arg']!r} ({w['reference']}) did not receive {producer}'s value: the runtime did not pass the "
            f"result on. In model order {consumer} runs with the value {producer} returned.")


def _unapproved_effect(w: Mapping[str, Any], run: _Run) -> str:
    if w.get("answer") == "deny":
        why = f"after the user had denied it at {w['answered_at_ms']} ms"
    elif w.get("requested_at_ms") is None:
        why = "without asking the user"
    else:
        why = f"while its approval request, sent at {w['requested_at_ms']} ms, was still unanswered"
        later = w.get("answer_after_start")
        if isinstance(later, Mapping):
            why += f" (the user answered {later['answer']} only at {later['t']} ms)"
    effects = w.get("effects") or []
    landed = f"; {_effects(effects)}" if effects else " (it was stopped before it changed anything)"
    return (f"{w['call']} ({w['tool']}) needs the user's confirmation, yet it started at {w['started_at_ms']} ms "
            f"{why}{landed}. A call that needs confirmation may start only after the user approves it.")


def _rollback_mismatch(w: Mapping[str, Any], run: _Run) -> str:
    name = f"checkpoint {w['checkpoint']}" + (f" ({w['label']})" if w.get("label") else "")
    if w.get("call") is None:
        return (f"Right after the rollback to {name} at {w['rollback_at_ms']} ms the file tree was not the "
                "snapshot: the restore itself was incomplete.")
    return (f"The runtime rolled back to {name} at {w['rollback_at_ms']} ms while {w['call']} (started at "
            f"{w['started_at_ms']} ms) was still running; it {_EFFECT_VERBS.get(w['op'], w['op'])} "
            f"{_thing(w['target'])} at {w['changed_at_ms']} ms, on the restored tree, which is no longer the "
            "snapshot. A runtime must stop its running calls, or wait for them, before it rolls back.")


def _round_limit_exceeded(w: Mapping[str, Any], run: _Run) -> str:
    who = f"Agent {w['agent']}'s loop" if w.get("agent") else "The loop"
    return (f"{who} ({w['loop']}) asked its model for decision {w['decisions']} (round {w['round']}, at "
            f"{w['at_ms']} ms) though it declares max_round {w['max_round']}: a model that never concludes keeps "
            "the task running, and paying, past the limit meant to stop it.")


def _retry_limit_exceeded(w: Mapping[str, Any], run: _Run) -> str:
    failures = list(w["failures"])
    retries = w["retry_same_signature"]
    return (f"{w['tool']} failed {len(failures)} times in a row with the same arguments and the same error "
            f"({_and(failures)}: {_brief(w['error'], 60)}), all that {w['loop']}'s retry_same_signature of {retries} "
            f"allows (a call and {retries} retries), yet {w['call']} ran it again at {w['at_ms']} ms: the tool should "
            "have been disabled and the model told, so that it stops retrying a call that cannot succeed.")


def _tool_disabled_silently(w: Mapping[str, Any], run: _Run) -> str:
    failures = list(w["failures"])
    if w.get("why") == "failure-unreported":
        return (f"{w['tool']} failed {len(failures)} times with the same arguments and error ({_and(failures)}), "
                f"but the model was never given the last failure, {w['call']}: it decides its next step without "
                "knowing the tool is failing, let alone disabled.")
    got = "no result" if w.get("why") == "no-result" else "an ok result"
    return (f"{w['loop']} disabled {w['tool']} after {_and(failures)} failed alike and did not run {w['call']} "
            f"(round {w['round']}), but gave the model {got} for it: the model is not told the tool is unavailable "
            "and cannot plan around it.")


def _loop_error(w: Mapping[str, Any], run: _Run) -> str:
    who = f"Agent {w['agent']}'s loop" if w.get("agent") else "The loop"
    return (f"{who} ({w['loop']}) failed after {w['rounds']} round{'' if w['rounds'] == 1 else 's'} and "
            f"{w['tool_calls']} tool call{'' if w['tool_calls'] == 1 else 's'}: {_brief(w['error'], 120)}. The task "
            "ended there, without an answer: the loop's own failure, not the model's (a model that raises ends "
            "the task as model-error).")


Template = Callable[[Mapping[str, Any], _Run], str]


def _across_agents(base: Template, lost: str) -> Template:
    """A cross-agent label: the base label's sentence, where model order is the order the turns
    started in (the order the turn-level check reports; no model order spans two agents), then what
    that check found."""
    def template(w: Mapping[str, Any], run: _Run) -> str:
        agents = w["agents"]
        said = base(w, run).replace("In model order", "In the order the turns started,").replace(
            "in model order", "in the order the turns started,")
        return (f"{said} {_and(agents)} are separate agents on one world, and no order of their "
                f"whole turns (each agent's in its own order) gives what the run observed: {lost} depends on how "
                "the agents' calls happened to interleave.")

    return template

#: One template per label in `harness.oracles.LABELS` (a test checks that none is missing).
TEMPLATES: dict[str, Template] = {
    "lost-update": _lost_update, "stale-read": _stale_read, "torn-read": _torn_read, "future-read": _future_read,
    "ghost-effect": _ghost_effect, "duplicate-effect": _duplicate_effect, "reordered-effect": _reordered_effect,
    "divergent-result": _divergent_result, "divergent-world": _divergent_world, "missing-result": _missing_result,
    "duplicate-result": _duplicate_result, "orphan-result": _orphan_result, "out-of-order": _out_of_order,
    "mispaired-result": _mispaired_result, "fabricated-result": _fabricated_result,
    "scheduler-error": _scheduler_error, "contract-error": _contract_error, "exclusivity": _exclusivity,
    "cap-exceeded": _cap_exceeded, "hang": _hang, "orphaned-call": _orphaned_call,
    "start-after-interrupt": _start_after_interrupt, "grace-exceeded": _grace_exceeded, "dropped-call": _dropped_call,
    "loop-blocked": _loop_blocked,
    "order-dependent": _order_dependent, "missing-input": _missing_input,
    "unapproved-effect": _unapproved_effect, "rollback-mismatch": _rollback_mismatch,
    "cross-agent-lost-update": _across_agents(_lost_update, "which task's update survives"),
    "cross-agent-stale-read": _across_agents(_stale_read, "what one task read of the other's work"),
    "misreported-outcome": _misreported_outcome,
    "round-limit-exceeded": _round_limit_exceeded, "retry-limit-exceeded": _retry_limit_exceeded,
    "tool-disabled-silently": _tool_disabled_silently, "loop-error": _loop_error,
}


def explain_witness(label: str, witness: Mapping[str, Any], result: RunResult | None = None,
                    fallback: str = "") -> str:
    """The explanation of a violation labelled `label` with this witness; `result` (the run it was
    found in) adds times and model order the witness leaves out. A witness the template cannot read
    gives `fallback` (the oracle's message)."""
    template = TEMPLATES.get(label)
    if template is None:
        return fallback
    try:
        text = template(witness, _Run(result))
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        return fallback
    return text


def explain(violation: Violation, result: RunResult | None = None) -> str:
    """`explain_witness` for a `Violation`."""
    return explain_witness(violation.label, violation.witness, result, violation.message)


# -- the touches a witness names -----------------------------------------------------------------


def _pick(run: _Run, found: list[dict[str, Any]], call: object, target: object, t: object, role: str,
          ops: Callable[[str], bool]) -> None:
    if not isinstance(call, str) or not isinstance(target, str) or not (t is None or isinstance(t, int)):
        return
    touch = run.touch(call, target, t, ops, last=role in ("write", "overwrite"))
    if touch is not None and all(f["seq"] != touch["seq"] for f in found):
        found.append({"t": touch["t"], "seq": touch["seq"], "call": call, "op": touch["op"], "target": target,
                      "role": role})


def racing_touches(violation: Violation, result: RunResult) -> list[dict[str, Any]]:
    """The trace touches the witness is about, in trace order, each with its `role` (e.g. the torn
    read, the truncate before it, the write after it). Empty for labels about results or time."""
    w, run = violation.witness, _Run(result)
    found: list[dict[str, Any]] = []
    mutating, reading = (lambda op: op in _MUTATING), (lambda op: op not in _MUTATING)
    label = violation.label.removeprefix("cross-agent-")
    try:
        if label in ("torn-read", "stale-read", "future-read") and "read_at_ms" in w:
            _pick(run, found, w["call"], w["target"], w["read_at_ms"], "read", reading)
            if label == "torn-read":
                _pick(run, found, w["writer"], w["target"], w["truncated_at_ms"], "truncate", mutating)
            _pick(run, found, w["writer"], w["target"], w.get("written_at_ms"), "write", mutating)
        elif label == "lost-update":
            lost, other, target = w["lost"], w["overwritten_by"], w["target"]
            if "write_order" not in w:
                read = run.read_before(other, target, w["lost_write_at_ms"])
                if read is not None:
                    _pick(run, found, other, target, read["t"], "read", reading)
            _pick(run, found, lost, target, w["lost_write_at_ms"], "write", mutating)
            _pick(run, found, other, target, w["overwrite_at_ms"], "overwrite", mutating)
        elif label == "reordered-effect" and "target" in w:
            _pick(run, found, w["call"], w["target"], w["landed_at_ms"], "append", lambda op: op == "append")
            _pick(run, found, w.get("overtaken_by"), w["target"], None, "append", lambda op: op == "append")
        elif label == "ghost-effect":
            for effect in w["effects"]:
                _pick(run, found, w["call"], effect["target"], effect["t"], "effect", mutating)
        elif label == "duplicate-effect":
            target = w.get("target") or (f"ledger:{w['ledger']}" if "ledger" in w else None)
            if isinstance(target, str):
                for touch in run.touches:
                    if touch["call"] == w.get("call", w.get("duplicated")) and touch["target"] == target \
                            and touch["op"] in _MUTATING:
                        _pick(run, found, touch["call"], target, touch["t"], "effect", mutating)
        elif label == "divergent-world" and "target" in w:
            for writer in w.get("writers") or ():
                _pick(run, found, writer, w["target"], None, "write", mutating)
    except (KeyError, TypeError):
        pass
    return sorted(found, key=lambda f: f["seq"])


def race_label(violation: Violation, touch: Mapping[str, Any]) -> str:
    """A short label for one racing touch, e.g. 'torn-read: read'."""
    return f"{violation.label}: {touch['role']}"
