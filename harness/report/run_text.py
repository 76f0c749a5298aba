"""A run as text for a person: header (every knob, doubling as the reproduce recipe), timeline,
results, makespan and fingerprint.

Owns the layout of `harness run --format text`. It renders with rich onto a given console and never
computes anything a JSON reader could not also see.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from harness.diagnosis.origins import Origins
from harness.oracles.facts import spelled
from harness.oracles.verdict import Verdict, exit_code
from harness.report.agent_events import describe_agent, describe_input
from harness.report.columns import Justify, print_columns
from harness.report.gate_events import GATE_EVENTS, describe_gate
from harness.report.hang import hang_lines
from harness.report.plural import count
from harness.report.run_json import loop_holds, reproduce_command
from harness.run import RunResult
from harness.sim.trace import TraceEvent
from harness.transcripts import fidelity

TIMELINE_COLUMNS: tuple[tuple[str, Justify], ...] = (("t ms", "right"), ("call", "left"), ("tool", "left"),
                                                    ("event", "left"))
RESULT_COLUMNS: tuple[tuple[str, Justify], ...] = tuple(
    (name, "left") for name in ("id", "outcome", "start", "end", "attempts", "value / error"))


def render_run(result: RunResult, console: Console, *, version: str, verdicts: Sequence[Verdict] = (),
               scheduler_spec: str | None = None, extra_args: Sequence[str] = (),
               origins: Origins | None = None) -> None:
    scenario = result.replayable  # a loop run's header names the scenario with its model
    limits = scenario.limits
    header = Table.grid(padding=(0, 2))
    header.add_row("scenario", f"{scenario.name}  ({scenario.path or 'in memory'})")
    if scenario.source:
        header.add_row("source", scenario.source)
    if scenario.agent is not None:
        header.add_row("loop", f"{scenario.agent.loop} (model: {_model_name(scenario.agent.data)})")
    for entry in scenario.agents:
        header.add_row("agent", f"{entry.name}: {entry.spec.loop} (model: {_model_name(entry.spec.data)}) under "
                       f"{entry.scheduler or result.scheduler}"
                       + (f", workdir {entry.workdir}" if entry.workdir else "")
                       + (f", starts at {entry.start_ms} ms" if entry.start_ms else ""))
    header.add_row("scheduler", result.scheduler)
    header.add_row("seed", str(result.seed))
    header.add_row("limits", f"time_bound_ms={limits.time_bound_ms} event_budget={limits.event_budget}")
    execution = result.scenario.execution
    knobs = [f"{f}={getattr(execution, f)}" for f in ("timeout_ms", "retries", "backoff_ms", "idempotency_keys",
                                                      "on_failure", "max_concurrency", "poll_interval_ms")]
    if execution.checkpoints != "none":  # shown only when on: every header without them stays as it was
        knobs += [f"checkpoints={execution.checkpoints}", f"checkpoint_file_ms={execution.checkpoint_file_ms}",
                  f"rollback_on_failure={execution.rollback_on_failure}"]
    # The scenario's policy: what plan-based policies (and a scheduler given its own) apply; serial,
    # parallel and hand-written schedulers decide retries, timeouts and keys for themselves.
    header.add_row("execution", " ".join(knobs) + " (the scenario's; plan-based policies apply it)")
    production = fidelity.of(result.scenario)  # an imported transcript's results: expectations or fixed values
    for key, text in production.rows() if production is not None else ():
        header.add_row(key, text)
    header.add_row("harness", version)
    console.print(header)
    # Never wrapped, so a copy of it is the command: outside the grid (which wraps its cells), its
    # value aligned with theirs.
    keys = max(len(str(cell)) for cell in header.columns[0].cells)
    console.print(f"{'reproduce':<{keys}}  {reproduce_command(result, scheduler_spec, extra_args)}",
                  soft_wrap=True, markup=False)

    # Both grow with the run: laid out in time linear in their rows (harness.report.columns).
    print_columns(console, "timeline", TIMELINE_COLUMNS, timeline_rows(result))
    print_columns(console, "results (as reported)", RESULT_COLUMNS, result_rows(result))
    console.print(f"status       {result.status.value}" + (f"  ({result.error})" if result.error else ""))
    for line in hang_lines(result):  # a hang: what each unfinished call waited on
        console.print(line, markup=False, soft_wrap=True)
    console.print(f"makespan     {result.makespan_ms} ms")
    for hold in loop_holds(result.trace):
        console.print(f"blocking     {hold['what']} held the event loop {hold['held_ms']} ms from {hold['at_ms']} ms"
                      + ("" if hold["returned"] else " and never returned"), markup=False, soft_wrap=True)
    if result.agent is not None:
        outcome = result.agent
        console.print(f"agent        {outcome.status} after {count(outcome.rounds, 'round')}, "
                      f"{count(outcome.tool_calls, 'tool call')}"
                      + (f", {outcome.invalid} invalid" if outcome.invalid else "")
                      + (f", unavailable: {', '.join(outcome.unavailable)}" if outcome.unavailable else "")
                      + (f" ({outcome.detail})" if outcome.detail else ""), markup=False)
        if outcome.answer and not result.agents:
            console.print(f"answer       {outcome.answer}", markup=False)
        if outcome.per_tool or outcome.prompt_tokens:  # seed 004's TaskReport
            tools = ", ".join(f"{name} {n}" for name, n in outcome.per_tool) or "no tool calls"
            console.print(f"task report  {tools}; about {outcome.prompt_tokens:,} prompt and "
                          f"{outcome.completion_tokens:,} completion tokens (estimated)", markup=False)
    for name, each in result.agents.items():
        console.print(f"  {name:<10} {each.status} after {count(each.rounds, 'round')}, "
                      f"{count(each.tool_calls, 'tool call')}"
                      + (f" ({each.detail})" if each.detail else "") + (f": {each.answer}" if each.answer else ""),
                      markup=False)
    console.print(f"fingerprint  {result.fingerprint}", soft_wrap=True)  # one line: it is copied whole
    if not verdicts:
        return
    table = Table(title="verdicts", title_justify="left", box=None, pad_edge=False)
    for column in ("oracle", "verdict", "label", "finding"):
        table.add_column(column)
    for verdict in verdicts:
        table.add_row(verdict.oracle, "ok" if verdict.ok else "VIOLATED", verdict.label or "", verdict.message)
        for extra in verdict.violations[1:]:
            table.add_row("", "", extra.label, extra.message)
    console.print(table)
    _print_why(console, result, verdicts)
    _print_likelihood(console, result, verdicts)
    failed = [v for v in verdicts if not v.ok]
    if failed:
        code = exit_code(verdicts)
        labels = sorted({x.label for v in failed for x in v.violations})  # every label, not each oracle's first
        console.print(f"FAILED ({', '.join(labels)}); exit code {int(code)}")
        # Never wrapped: the line is a command to paste, however long its paths are.
        console.print(f"reproduce: {reproduce_command(result, scheduler_spec, extra_args)}", soft_wrap=True,
                      markup=False)
        # The interleaving story last: the verdict, why and how to reproduce come first.
        _print_story(console, result, verdicts, origins)
    else:
        console.print("PASSED: every oracle holds")


def timeline_rows(result: RunResult) -> list[tuple[str, str, str, str]]:
    """The timeline table's rows: each trace event a reader needs, with its time, call and tool."""
    tools = {call.id: call.name for call in result.scenario.calls}
    rows = []
    for event in result.trace:
        described = describe_event(event)
        if described is None:
            continue
        call = event.get("call", "") or (f"[{event['agent']}]" if "agent" in event else "")
        rows.append((str(event["t"]), call, tools.get(call, ""), described))
    return rows


def result_rows(result: RunResult) -> list[tuple[str, str, str, str, str, str]]:
    """The results table's rows: each result as the scheduler reported it, its value in brief."""
    return [(r.call_id, r.outcome.value, str(r.start_ms), str(r.end_ms), str(r.attempts),
             r.error if r.error is not None else _brief(r.value)) for r in result.results]


def _print_why(console: Console, result: RunResult, verdicts: Sequence[Verdict], limit: int = 8) -> None:
    """Each violation in words (harness.report.explain), under the verdict table. Two oracles (or one,
    from two angles) may find the same fact, e.g. a retried ticket is a duplicate effect to both
    serializability and exactly-once: the table keeps each oracle's finding, the words come once."""
    from harness.report.explain import explain

    violations = [v for verdict in verdicts for v in verdict.violations]
    printed: set[str] = set()
    for seen, violation in enumerate(violations, 1):
        line = f"why ({violation.label}): {explain(violation, result)}"
        if line not in printed:
            printed.add(line)
            console.print(line, markup=False)
        if len(printed) == limit and seen < len(violations):
            console.print(f"... and {count(len(violations) - seen, 'more violation')} (--format json lists them all)")
            break


def _print_likelihood(console: Console, result: RunResult, verdicts: Sequence[Verdict], limit: int = 8) -> None:
    """How likely each violation's witness is under the scenario's draws (harness.report.likelihood),
    under the why lines; labels it computes nothing for print nothing."""
    from harness.report.likelihood import likelihood_line

    for violation in [v for verdict in verdicts for v in verdict.violations][:limit]:
        line = likelihood_line(result, violation)
        if line is not None:
            console.print(f"likelihood ({violation.label}): {line}", markup=False)


def _print_story(console: Console, result: RunResult, verdicts: Sequence[Verdict], origins: Origins | None) -> None:
    """The interleaving story of the first violations (harness.report.story), under the reproduce line."""
    from harness.report.story import story_lines

    for line in story_lines([v for verdict in verdicts for v in verdict.violations], result, origins):
        console.print(line, markup=False, soft_wrap=True)


#: Trace events the timeline leaves out: where the run begins, and a batch's and the run's ends, which
#: the results and status lines say.
BOOKKEEPING = frozenset({"run", "batch_end", "quiesce"})


def describe_event(event: TraceEvent) -> str | None:
    """One line for a trace event, or None for `BOOKKEEPING` events a reader does not need."""
    ev = event["ev"]
    if ev == "start":
        return "start" + (f" (attempt {event['attempt']})" if event.get("attempt", 1) != 1 else "")
    if ev == "touch":
        return f"{event['op']} {spelled(event['target'], event.get('as'))}"
    if ev == "end":
        text = f"end {event['outcome']}"
        if event.get("error"):
            text += f": {event['error']}"
        return text + (" (detached: result already reported)" if event.get("detached") else "")
    if ev == "background":
        return "result reported; the process keeps running in the background"
    if ev == "abandon":
        detached = " (keeps running)" if event.get("detached") else ""
        return f"abandoned as {event['outcome']}: {event['reason']}{detached}"
    if ev == "note":
        return f"scheduler: {event['text']}"
    if ev == "blocked":
        return (f"event loop held {event['held_ms']} ms by {event['what']} (since {event['since']} ms)"
                + ("; it never returned" if event.get("returned") is False else ""))
    if ev == "batch":
        return f"batch {event['index']} '{event['label']}' begins"
    if ev == "report":
        return "results reported: " + ", ".join(event["order"])
    if ev == "interrupt":
        return f"the user interrupts (Ctrl-C): {event['grace_ms']} ms grace for running calls to stop"
    if ev == "crash":
        return "the process crashes (injected): every running call dies with it"
    if ev == "skip":
        return f"skipped: {event['reason']}"
    if ev == "faults":
        return f"injected fault: {', '.join(str(kind).replace('_', ' ') for kind in event['kinds'])}"
    if ev == "delegate":
        return f"delegates to {event.get('agent') or 'a subagent'}"
    if ev == "progress":  # [faults] mcp_progress_only
        return f"notifications/progress {event['progress']} from MCP server {event['server']!r} (no result)"
    if ev == "lock":
        return f"locks {', '.join(event['files'])}"
    if ev == "scheduler_failed":
        return f"scheduler failed ({event['status']}): {event['error']}"
    if ev == "agent":
        return describe_agent(event)
    if ev == "input":
        return describe_input(event)
    if ev in GATE_EVENTS:
        return describe_gate(event)
    return None


def _model_name(data: object) -> str:
    if isinstance(data, dict) and "python" in data:
        return str(data["python"])
    return "scripted rules"


def _brief(value: object, limit: int = 70) -> str:
    from harness.sim.trace import canonical_json

    text = canonical_json(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
