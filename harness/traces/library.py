"""Learned models -> a scenario file (TOML) that `harness run`, `compare` and `sweep` load as any other.

Owns the text: a header saying what it was learned from; one `[tools.NAME]` table per traced tool,
each with a comment saying where its numbers came from (sample count, the fit and its KS distance, or
why there is no fit); one `[[batches]]` per recorded turn, its calls in the order they started (ids
`tTURN.CALL`: a trace may reuse a call id in another turn), with a comment giving the recorded
makespan and concurrency. A tool is declared whole with behaviour unknown (`does = []`: it only waits
its latency) and the conservative claims of a tool nothing is known about (not read-only, external
side effect, not idempotent); a traced name the catalogue already has is declared as `traced.NAME`,
since a catalogue tool keeps its own behaviour and arguments. Latency: the fitted log-normal, or with
fewer than MIN_SAMPLES samples the observed values (`choice`); the error rate becomes a transient
`failure` rate. Argument values, trace ids and timestamps are written only with `keep_arguments`
(traces may hold secrets): calls otherwise send `{}`. The same turns give the same bytes. It never
reads a trace and never runs a scenario.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import PurePath

from harness.tools.catalogue import BUILTIN
from harness.traces.learn import MIN_SAMPLES, Learned, ToolModel
from harness.traces.records import Turn

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")
#: What the scenario claims of a tool the trace says nothing about (the transcripts importer's generic spec).
DECLARED = '{ read_only = false, side_effect = "external", idempotent = false }'


def tool_names(tools: Sequence[str]) -> dict[str, str]:
    """The scenario's name for each traced tool name: as traced when it can be, `traced.NAME` when the
    catalogue has NAME, characters a tool name cannot have replaced by `_`; never two alike."""
    names: dict[str, str] = {}
    used: set[str] = set()
    for tool in tools:
        name = re.sub(r"[^A-Za-z0-9_.\-]", "_", tool)
        if not _NAME.fullmatch(name):
            name = "_" + name
        if name in BUILTIN:
            name = f"traced.{name}"
        base, n = name, 2
        while name in used:
            name, n = f"{base}-{n}", n + 1
        used.add(name)
        names[tool] = name
    return names


def scenario_text(learned: Learned, turns: Sequence[Turn], *, name: str, files: Sequence[str],
                  keep_arguments: bool = False) -> str:
    """The scenario file for `turns` and what was learned from them."""
    sources = ", ".join(PurePath(f).name for f in files) or "<no file>"
    names = tool_names([m.tool for m in learned.tools])
    longest = max((t.makespan_ms for t in turns), default=0.0)
    timed_out = sorted(a.duration_ms for t in turns for c in t.calls for a in c.attempts if a.outcome == "timeout")
    lines = [
        f"# Learned by `harness traces import` from {sources}: {len(turns)} turns, "
        f"{sum(len(t.calls) for t in turns)} tool calls.",
        f"# Latency: a log-normal fitted by maximum likelihood where a tool had >= {MIN_SAMPLES} latency samples "
        "(attempts that ended ok or with an error), else the observed values.",
        "# Behaviour and safety metadata are unknown to a trace: each tool only waits, and claims the most "
        "conservative metadata; edit `declared` to tell a scheduler more.",
        "# Argument values, trace ids and timestamps " + ("are kept (--keep-arguments)." if keep_arguments else
                                                          "were dropped (--keep-arguments keeps them)."),
        f"name = {_string(name)}",
        f"description = {_string(f'Recorded turns of {sources}, with latencies learned from them.')}",
        f"source = {_string(f'harness traces import {sources}')}",
        # A turn ten times the longest recorded one is a hang, not a slow tool.
        f"time_bound_ms = {max(600_000, math.ceil(longest * 10))}",
    ]
    if timed_out:
        timeout = max(1, round(timed_out[len(timed_out) // 2]))
        lines += [f"# The runtime's per-call timeout, read from the {len(timed_out)} timed-out attempts (their median "
                  "duration). The runtime's retries are not modelled: a scenario retries only idempotent tools.",
                  f"execution = {{ timeout_ms = {timeout} }}"]
    lines.append("")
    for model in learned.tools:
        lines += _tool(model, names[model.tool], sources)
    for number, turn in enumerate(turns, 1):
        lines += _batch(number, turn, names, keep_arguments)
    return "\n".join(lines)


def _tool(model: ToolModel, name: str, sources: str) -> list[str]:
    renamed = f" (traced as {model.tool!r})" if name != model.tool else ""
    comment = [f"# {name}{renamed}: {model.calls} calls, {model.attempts} attempts in {sources}; "
               f"{len(model.latencies_ms)} latency samples."]
    fit = model.fit
    if fit is not None:
        median = max(1, round(fit.median_ms))
        sigma = round(min(fit.sigma, 5.0), 3)
        latency = f"{{ lognormal = {{ median = {median}, sigma = {sigma} }} }}"
        comment.append(f"# Log-normal fit: median {fit.median_ms:.1f} ms, sigma {fit.sigma:.3f}; KS D = {fit.ks:.3f} "
                       f"(p = {fit.p_value:.3f}, optimistic: fitted to the same sample).")
        if fit.censored:
            comment.append(f"# {fit.censored} timed-out or cancelled attempts enter the fit as right-censored (the "
                           "latency was at least their duration).")
    elif model.latencies_ms:
        # A timed-out attempt's latency was longer than the timeout: 1 ms past where the runtime gave up.
        values = ", ".join(str(v) for v in sorted([round(v) for v in model.latencies_ms]
                                                  + [math.ceil(v) + 1 for v in model.censored_ms]))
        latency = f"{{ choice = [{values}] }}"
        past = f", and 1 ms past each of the {len(model.censored_ms)} timed-out or cancelled ones" \
            if model.censored_ms else ""
        comment.append(f"# No fit: {model.why_no_fit}; the observed latencies{past}, one drawn at random per "
                       "attempt.")
    else:
        waited = 1000
        latency = f"{{ fixed = {waited} }}"
        comment.append("# No latency sample: every attempt timed out or was cancelled; a placeholder of 1 s.")
    if model.timeouts:
        comment.append(f"# {model.timeouts} attempts timed out ({model.timeout_rate:.1%}).")
    if model.retried_calls:
        comment.append(f"# {model.retried_calls} calls were retried by the runtime.")
    table = [f"[tools.{_key(name)}]",
             f"description = {_string(f'learned from traces ({model.tool}); behaviour unknown')}",
             "does = []",
             f"latency = {latency}"]
    if model.errors:
        table.append(f"failure = {{ rate = {round(model.error_rate, 4)} }}  # {model.errors} of {model.attempts} "
                     "attempts ended with an error")
    table.append(f"declared = {DECLARED}")
    return [*comment, *table, ""]


def _batch(number: int, turn: Turn, names: Mapping[str, str], keep_arguments: bool) -> list[str]:
    overlaps = len(turn.overlaps())
    lines = [f"# turn {number}: {len(turn.calls)} calls; recorded makespan {turn.makespan_ms:.1f} ms, at most "
             f"{turn.peak_concurrency()} running at once, {overlaps} overlapping pair{'' if overlaps == 1 else 's'}."]
    if keep_arguments:
        lines.append(f"# trace {turn.trace_id}, parent span {turn.parent_id}, first call started at "
                     f"{turn.start_ns} ns since the epoch.")
    lines += ["[[batches]]", f"label = {_string(f'turn-{number}')}", ""]
    for index, call in enumerate(turn.calls, 1):
        arguments = call.arguments if keep_arguments and call.arguments is not None else "{}"
        outcomes = ", ".join(a.outcome for a in call.attempts)
        recorded = f" (call id {call.call_id!r})" if keep_arguments else ""
        lines += [f"# recorded{recorded}: {call.attempts[-1].duration_ms:.1f} ms, {outcomes}",
                  "[[batches.calls]]",
                  f"id = {_string(f't{number}.{index}')}",
                  f"name = {_string(names[call.tool])}",
                  f"arguments = {_string(arguments)}"]
        if keep_arguments:
            lines.append("check_arguments = false")
        lines.append("")
    return lines


def _string(value: str) -> str:
    """A TOML basic string (tomli_w's escaping: control characters and DEL escaped)."""
    import tomli_w

    return tomli_w.dumps({"v": value})[4:].rstrip("\n")


def _key(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z0-9_\-]+", name) else _string(name)
