"""The sentences of the labels about how the runtime ran the calls: a scheduler that raised or broke
its contract, exclusivity and caps, hangs, orphaned and dropped calls, interrupts and their grace, a
blocked event loop, order-dependent outcomes, approvals, rollbacks and the agent loop's limits.

Owns one template per such label (`harness.report.explain` registers them). It never judges.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.report.explain_words import EFFECT_VERBS, RunView, brief, effects_phrase, listed, thing_of


def scheduler_error(w: Mapping[str, Any], run: RunView) -> str:
    return (f"The scheduler raised in batch {w['batch']} ({w['error']}): the turn ends without results, and "
            "calls it had started may still be running.")


def contract_error(w: Mapping[str, Any], run: RunView) -> str:
    return (f"The scheduler broke its contract in batch {w['batch']}: {w['error']}. A runtime cannot use what "
            "it yielded or returned.")


def exclusivity(w: Mapping[str, Any], run: RunView) -> str:
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


def cap_exceeded(w: Mapping[str, Any], run: RunView) -> str:
    limit = w["limit"]
    if limit == "max_concurrency":
        which = "the scenario's max_concurrency"
    else:
        which = f"the cap on {limit.removeprefix('tools.').removesuffix('.max_concurrency')} calls"
    running = list(w["running"])
    return (f"{len(running)} calls ran at once at {w['t']} ms ({listed(running)}), above {which} of {w['cap']}: "
            "the service behind them sees more concurrent requests than it allows.")


_STOPS = {"idle": "nothing was left to happen but the scheduler still waited: a deadlock",
          "time-bound": "the next event lay beyond the virtual-time bound",
          "event-budget": "the event budget ran out: a livelock or a runaway scheduler"}


def hang(w: Mapping[str, Any], run: RunView) -> str:
    stop = str(w["stop"])
    batches = list(w.get("batches") or [w["batch"]])
    who = (f"The schedulers of batches {listed(batches)} (one turn of each agent still running)" if len(batches) > 1
           else f"The scheduler of batch {w['batch']}")
    text = f"{who} never returned: the run stopped at {w['stopped_at_ms']} ms because {_STOPS.get(stop, stop)}."
    if w.get("pending"):
        text += f" Still running: {listed(w['pending'])}."
    if w.get("never_started"):
        text += f" Never started: {listed(w['never_started'])}."
    if w.get("skipped"):
        text += f" Skipped but never reported: {listed(w['skipped'])}."
    if w.get("deadlock"):  # read from the live simulation at the hang (harness.run.hang)
        text += f" It is a deadlock: {'; '.join(map(str, w['deadlock']))}."
    return text + " The model waits for results that never come."


_HOW = {"completed": "returned", "scheduler-error": "raised", "contract-error": "broke its contract"}


def orphaned_call(w: Mapping[str, Any], run: RunView) -> str:
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


def start_after_interrupt(w: Mapping[str, Any], run: RunView) -> str:
    return (f"The user interrupted at {w['interrupt_at_ms']} ms, yet {w['call']} started at {w['started_at_ms']} "
            "ms: after an interrupt no new call may start.")


def grace_exceeded(w: Mapping[str, Any], run: RunView) -> str:
    interrupt, grace = w["interrupt_at_ms"], w["grace_ms"]
    settled = w.get("settled_at_ms")
    return (f"The user interrupted at {interrupt} ms; {w['call']} was still running when the {grace} ms grace "
            f"period ended at {interrupt + grace} ms ("
            + (f"it ended at {settled} ms" if settled is not None else "it never ended")
            + "): the runtime neither stopped it nor gave it up in time.")


def dropped_call(w: Mapping[str, Any], run: RunView) -> str:
    calls = list(w["calls"])
    text = (f"Batch {w['batch']} answered {listed(calls)} \"cancelled\" without ever starting "
            f"{'it' if len(calls) == 1 else 'them'} ({w['reason']!r}, at {w['skipped_at_ms']} ms), though nothing "
            "had stopped the turn: no user interrupt, crash, failed, refused or abandoned call came before. "
            "The model asked for work the runtime declined for no reason")
    if "interrupt" in str(w["reason"]).lower():
        text += ", and the answer blames a user interrupt that never happened"
    return text + "."


def loop_blocked(w: Mapping[str, Any], run: RunView) -> str:
    how = ("called a sync tool directly on the event loop" if w["by"] == "sync-tool"
           else "called time.sleep on the event loop")
    return (f"The runtime {how}: {w['what']} held the loop from {w['since_ms']} ms for {w['held_ms']} ms while other "
            "tasks were ready to run. Nothing else on that loop moved meanwhile, neither the turn's other tool calls "
            "(they ran after it, serially) nor any other session the process serves. Offload blocking work with "
            "asyncio.to_thread or loop.run_in_executor, or make the tool async.")


def order_dependent(w: Mapping[str, Any], run: RunView) -> str:
    a, b = w["seeds"]
    first, second = w["completion_orders"]
    what = []
    if w.get("results_differ"):
        what.append(f"{listed(w['results_differ'])} returned different results")
    if w.get("world_diff"):
        what.append(f"the world differs ({str(w['world_diff'][0]).strip()})")
    return (f"Seeds {a} and {b} finished the calls in different orders ({listed(first)}; then {listed(second)}) and "
            f"ended differently: {listed(what) if what else 'the outcomes differ'}. Latency alone decides the "
            "outcome; in model order it would be the same whatever finishes first.")


def unapproved_effect(w: Mapping[str, Any], run: RunView) -> str:
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
    landed = f"; {effects_phrase(effects)}" if effects else " (it was stopped before it changed anything)"
    return (f"{w['call']} ({w['tool']}) needs the user's confirmation, yet it started at {w['started_at_ms']} ms "
            f"{why}{landed}. A call that needs confirmation may start only after the user approves it.")


def rollback_mismatch(w: Mapping[str, Any], run: RunView) -> str:
    name = f"checkpoint {w['checkpoint']}" + (f" ({w['label']})" if w.get("label") else "")
    if w.get("call") is None:
        return (f"Right after the rollback to {name} at {w['rollback_at_ms']} ms the file tree was not the "
                "snapshot: the restore itself was incomplete.")
    return (f"The runtime rolled back to {name} at {w['rollback_at_ms']} ms while {w['call']} (started at "
            f"{w['started_at_ms']} ms) was still running; it {EFFECT_VERBS.get(w['op'], w['op'])} "
            f"{thing_of(w['target'])} at {w['changed_at_ms']} ms, on the restored tree, which is no longer the "
            "snapshot. A runtime must stop its running calls, or wait for them, before it rolls back.")


def torn_snapshot(w: Mapping[str, Any], run: RunView) -> str:
    name = f"checkpoint {w['checkpoint']}" + (f" (taken before {w['before']})" if w.get("before") else "")
    writes = ", ".join(f"{EFFECT_VERBS.get(m['op'], m['op'])} it at {m['t']} ms" for m in w["writes"])
    return (f"The runtime's {name} copied {thing_of(w['target'])} at {w['read_at_ms']} ms while {w['call']} was "
            f"writing it ({writes}): the snapshot holds the file half written, and a rollback to it restores that "
            "instead of either version. A snapshot must not run beside a write to a file it copies: take it "
            "before the batch's writes start, or make them wait for it.")


def round_limit_exceeded(w: Mapping[str, Any], run: RunView) -> str:
    who = f"Agent {w['agent']}'s loop" if w.get("agent") else "The loop"
    return (f"{who} ({w['loop']}) asked its model for decision {w['decisions']} (round {w['round']}, at "
            f"{w['at_ms']} ms) though it declares max_round {w['max_round']}: a model that never concludes keeps "
            "the task running, and paying, past the limit meant to stop it.")


def retry_limit_exceeded(w: Mapping[str, Any], run: RunView) -> str:
    failures = list(w["failures"])
    retries = w["retry_same_signature"]
    return (f"{w['tool']} failed {len(failures)} times in a row with the same arguments and the same error "
            f"({listed(failures)}: {brief(w['error'], 60)}), all that {w['loop']}'s retry_same_signature of {retries} "
            f"allows (a call and {retries} retries), yet {w['call']} ran it again at {w['at_ms']} ms: the tool should "
            "have been disabled and the model told, so that it stops retrying a call that cannot succeed.")


def tool_disabled_silently(w: Mapping[str, Any], run: RunView) -> str:
    failures = list(w["failures"])
    if w.get("why") == "failure-unreported":
        return (f"{w['tool']} failed {len(failures)} times with the same arguments and error ({listed(failures)}), "
                f"but the model was never given the last failure, {w['call']}: it decides its next step without "
                "knowing the tool is failing, let alone disabled.")
    got = "no result" if w.get("why") == "no-result" else "an ok result"
    return (f"{w['loop']} disabled {w['tool']} after {listed(failures)} failed alike and did not run {w['call']} "
            f"(round {w['round']}), but gave the model {got} for it: the model is not told the tool is unavailable "
            "and cannot plan around it.")


def loop_error(w: Mapping[str, Any], run: RunView) -> str:
    who = f"Agent {w['agent']}'s loop" if w.get("agent") else "The loop"
    return (f"{who} ({w['loop']}) failed after {w['rounds']} round{'' if w['rounds'] == 1 else 's'} and "
            f"{w['tool_calls']} tool call{'' if w['tool_calls'] == 1 else 's'}: {brief(w['error'], 120)}. The task "
            "ended there, without an answer: the loop's own failure, not the model's (a model that raises ends "
            "the task as model-error).")


def tool_error(w: Mapping[str, Any], run: RunView) -> str:
    return (f"A Python tool's own code failed at {w['at_ms']} ms, on {w['call']} (attempt {w['attempt']}): "
            f"{brief(w['error'], 160)}. The call ended as an error, as a runtime reports a tool "
            "that raised; the scheduler is judged on the rest, but the run's input is broken: fix the tool (to fail "
            "on purpose, a tool raises harness.tools.ToolError).")
