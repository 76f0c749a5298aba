"""Learned models -> a scenario file (TOML) that `harness run`, `compare` and `sweep` load as any other.

Owns the text: a header saying what it was learned from; one `[tools.NAME]` table per traced tool,
each with a comment saying where its numbers came from (sample count, the fit and its KS distance, or
why there is no fit); one `[[batches]]` per recorded turn, its calls in the order they started (ids
`tTURN.CALL`: a trace may reuse a call id in another turn), with a comment giving the recorded
makespan and concurrency. What a tool touches and claims is guessed (`harness.traces.resources`) and
marked as a guess: a tool whose calls name files or records reads them (a reading name) or changes
them, a read-modify-write (any other name), over files of the simulated world under `/traced/` that
stand for them (each present, empty, at the start), with the matching `resource_keys`; a reading name
claims read-only. A tool with neither only waits its latency (`does = []`) with the conservative
claims of a tool nothing is known about (not read-only, external side effect, not idempotent); a
traced name the catalogue already has is declared as `traced.NAME`, since a catalogue tool keeps its
own behaviour and arguments. Latency: the fitted log-normal, or with
fewer than MIN_SAMPLES samples the observed values (`choice`); the error rate becomes a transient
`failure` rate. Argument values, trace ids and timestamps are written only with `keep_arguments`
(traces may hold secrets): calls otherwise send only their resource arguments, as pseudonyms. The
same turns give the same bytes. It never
reads a trace and never runs a scenario.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import PurePath

from harness.tools.catalogue import BUILTIN
from harness.traces.fits import KS_ALPHA
from harness.traces.learn import MIN_SAMPLES, Learned, ToolModel
from harness.traces.records import CallRecord, Turn
from harness.traces.resources import FILE, READ, WRITE, Access, Resources, infer

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
                  keep_arguments: bool = False, guess: bool = True) -> str:
    """The scenario file for `turns` and what was learned from them; with `guess` false, no tool's
    behaviour or metadata is guessed (`--no-guess`)."""
    sources = ", ".join(PurePath(f).name for f in files) or "<no file>"
    names = tool_names([m.tool for m in learned.tools])
    longest = max((t.makespan_ms for t in turns), default=0.0)
    timed_out = sorted(a.duration_ms for t in turns for c in t.calls for a in c.attempts if a.outcome == "timeout")
    lines = [
        f"# Learned by `harness traces import` from {sources}: {len(turns)} turns, "
        f"{sum(len(t.calls) for t in turns)} tool calls.",
        f"# Latency: a log-normal fitted by maximum likelihood where a tool had >= {MIN_SAMPLES} latency samples "
        "(attempts that ended ok or with an error), else the observed values.",
        ("# Behaviour and safety metadata are unknown to a trace: what a tool touches and claims is GUESSED from its "
         "name and its arguments' names (lines marked `guess`); a tool without a guess only waits, and claims the "
         "most conservative metadata." if guess else
         "# Behaviour and safety metadata are unknown to a trace, and nothing was guessed (--no-guess): every tool "
         "only waits, and claims the most conservative metadata.")
        + " Edit `declared` and `does` to tell a scheduler and the oracles what you know.",
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
                  "duration). The runtime's retries are not modelled: this execution policy retries nothing.",
                  f"execution = {{ timeout_ms = {timeout} }}"]
    resources = infer(turns, keep_arguments=keep_arguments, guess=guess)
    models = {m.tool: m for m in learned.tools}
    lines += ["", *_world(resources)]
    for model in learned.tools:
        lines += _tool(model, names[model.tool], sources, resources.tools[model.tool], resources)
    for number, turn in enumerate(turns, 1):
        lines += _batch(number, turn, names, keep_arguments, resources, models)
    return "\n".join(lines)


def _world(resources: Resources) -> list[str]:
    """Every file that stands for a resource, empty: a guessed read finds it, a guessed change edits it."""
    paths = sorted({resources.world_path(space, value) for found in resources.values.values()
                    for _, space, value in found})
    if not paths:
        return []
    # A recorded value that is another's directory (kept arguments: `src` and `src/a.py`) cannot be a file too.
    files = [p for i, p in enumerate(paths) if not (i + 1 < len(paths) and paths[i + 1].startswith(p + "/"))]
    what = "the recorded values" if resources.kept else "pseudonyms, keyed hashes of the recorded values"
    return [f"# guess: the files and records the calls' arguments name, as files of the simulated world; their "
            f"names are {what}.",
            "[world.files]", *(f"{_string(p)} = \"\"" for p in files), ""]


def _tool(model: ToolModel, name: str, sources: str, access: Access, resources: Resources) -> list[str]:
    renamed = f" (traced as {model.tool!r})" if name != model.tool else ""
    comment = [f"# {name}{renamed}: {model.calls} calls, {model.attempts} attempts in {sources}; "
               f"{len(model.latencies_ms)} latency samples."]
    fit = model.fit
    if fit is not None:
        latency = _lognormal(fit.median_ms, fit.sigma)
        comment.append(f"# Log-normal fit: median {fit.median_ms:.1f} ms, sigma {fit.sigma:.3f}; KS D = {fit.ks:.3f} "
                       f"(p = {fit.p_value:.3f}, optimistic: fitted to the same sample).")
        if fit.censored:
            comment.append(f"# {fit.censored} timed-out or cancelled attempts enter the fit as right-censored (the "
                           "latency was at least their duration).")
        mixture = model.mixture
        if mixture is not None:
            comment.append(
                f"# It fails its KS test (p < {KS_ALPHA}); a two-component mixture: {mixture.weight:.2f} x median "
                f"{mixture.median_ms:.1f} ms, sigma {mixture.sigma:.3f} + {1 - mixture.weight:.2f} x median "
                f"{mixture.median2_ms:.1f} ms, sigma {mixture.sigma2:.3f}; KS D = {mixture.ks:.3f} (p = "
                f"{mixture.p_value:.3f}); BIC {mixture.bic:.1f} against {mixture.single_bic:.1f} (lower is better): "
                f"{'the mixture' if mixture.chosen else 'the log-normal'}.")
            if mixture.chosen and model.split is None:  # a scenario has no mixture latency: the sample stands for it
                latency = _choice(model)
                comment.append("# A scenario's latency has no mixture: the observed latencies stand for it, one "
                               "drawn at random per attempt.")
    elif model.latencies_ms:
        latency = _choice(model)
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
    guess, does, declared = _guessed(access, resources)
    comment += guess
    known = "behaviour guessed" if guess else "behaviour unknown"
    tables: list[tuple[str, str, list[str]]] = [(name, latency, [])]
    split = model.split
    if split is not None:
        by = f"the size of the argument `{split.argument}`" if split.cuts else f"the argument `{split.argument}`"
        comment.append(f"# Split by {by} ({len(split.classes)} classes): BIC "
                       f"{split.bic:.1f} against {split.whole_bic:.1f} for the whole (lower is better), so one tool "
                       "per class, each with its own log-normal; a call runs the tool of its class.")
        tables = [(class_name(name, split.argument, i),
                   _lognormal(c.median_ms, c.sigma),
                   [f"# {name}, class {i} of `{split.argument}`"
                    + (f" ({c.value})" if resources.kept or split.cuts else "")
                    + f": {c.calls} calls, {c.samples} latency samples; log-normal median {c.median_ms:.1f} ms, "
                    f"sigma {c.sigma:.3f}."])
                  for i, c in enumerate(split.classes, 1)]
    lines = list(comment)
    for table_name, table_latency, table_comment in tables:
        lines += [*table_comment,
                  f"[tools.{_key(table_name)}]",
                  f"description = {_string(f'learned from traces ({model.tool}); {known}')}",
                  f"does = {does}" + ("  # guess" if guess else ""),
                  f"latency = {table_latency}"]
        if model.errors:
            lines.append(f"failure = {{ rate = {round(model.error_rate, 4)} }}  # {model.errors} of "
                         f"{model.attempts} attempts ended with an error")
        lines += [f"declared = {declared}" + ("  # guess" if guess else ""), ""]
    return lines


def class_name(name: str, argument: str, index: int) -> str:
    """The scenario's tool for class `index` (1-based) of a split tool: `query_db.kind-2`."""
    return f"{name}.{re.sub(r'[^A-Za-z0-9_]', '_', argument)}-{index}"


def call_tool(call: CallRecord, model: ToolModel, name: str) -> str:
    """The scenario's tool a recorded call runs: its tool's, or its class's when the tool is split."""
    split = model.split
    if split is None:
        return name
    try:
        arguments = json.loads(call.arguments or "")
    except ValueError:
        return name
    index = split.class_of(arguments) if isinstance(arguments, dict) else None
    return name if index is None else class_name(name, split.argument, index + 1)


def _lognormal(median_ms: float, sigma: float) -> str:
    return f"{{ lognormal = {{ median = {max(1, round(median_ms))}, sigma = {round(min(sigma, 5.0), 3)} }} }}"


def _choice(model: ToolModel) -> str:
    # A timed-out attempt's latency was longer than the timeout: 1 ms past where the runtime gave up.
    values = ", ".join(str(v) for v in sorted([round(v) for v in model.latencies_ms]
                                              + [math.ceil(v) + 1 for v in model.censored_ms]))
    return f"{{ choice = [{values}] }}"


def _guessed(access: Access, resources: Resources) -> tuple[list[str], str, str]:
    """The comment, `does` and `declared` of a tool, guessed from its name and its resource arguments
    (`harness.traces.resources`); no comment when there is nothing to guess from."""
    if access.kind != READ and not access.fields:
        return [], "[]", DECLARED
    fields = ", ".join(f"`{field}` ({'a file' if space == FILE else f'a {space} record'})"
                       for field, space in access.fields)
    where = {field: f"/traced/{space}/{{{field}}}" for field, space in access.fields}
    keys = ", ".join(_string(f"file:{where[field]}" if space == FILE else f"{space}:{{{field}}}")
                     for field, space in access.fields)
    resource_keys = f", resource_keys = [{keys}]" if keys else ""
    shown = "their recorded values" if resources.kept else "pseudonyms (keyed hashes) of their values"
    if access.kind == READ:
        reads = f"reads what {fields} name{'s' if len(access.fields) == 1 else ''}" if fields \
            else "touches nothing here"
        comment = [f"# guess (inferred, not recorded): a reading name, so it {reads}, and claims it is read-only."]
        steps = [f'{{ op = "read", path = {_string(where[field])}, as = {_string(field + "_content")} }}'
                 for field, _ in access.fields]
        declared = f'{{ read_only = true, side_effect = "none", idempotent = true{resource_keys} }}'
    else:
        why = "a changing name" if access.kind == WRITE \
            else "a name that says neither read nor write (taken as a change)"
        comment = [f"# guess (inferred, not recorded): {why}, so it changes what {fields} name"
                   f"{'s' if len(access.fields) == 1 else ''}: read at its start, written at its end."]
        steps = []
        for field, _ in access.fields:
            content = _string(f"{{{field}_before}}{access.tool}" + "\n")
            steps += [f'{{ op = "read", path = {_string(where[field])}, at = 0.0, as = {_string(field + "_before")} }}',
                      f'{{ op = "write", path = {_string(where[field])}, '
                      f'content = {content} }}']
        local = access.kind == WRITE and all(space == FILE for _, space in access.fields)
        declared = (f'{{ read_only = false, side_effect = "{"local" if local else "external"}", idempotent = false'
                    f'{resource_keys} }}')
    if access.fields:
        comment.append(f"# Calls send {shown}: the same value, the same resource.")
    return comment, f"[{', '.join(steps)}]", declared


def _batch(number: int, turn: Turn, names: Mapping[str, str], keep_arguments: bool,
           resources: Resources, models: Mapping[str, ToolModel]) -> list[str]:
    overlaps = len(turn.overlaps())
    lines = [f"# turn {number}: {len(turn.calls)} calls; recorded makespan {turn.makespan_ms:.1f} ms, at most "
             f"{turn.peak_concurrency()} running at once, {overlaps} overlapping pair{'' if overlaps == 1 else 's'}."]
    if keep_arguments:
        lines.append(f"# trace {turn.trace_id}, parent span {turn.parent_id}, first call started at "
                     f"{turn.start_ns} ns since the epoch.")
    lines += ["[[batches]]", f"label = {_string(f'turn-{number}')}", ""]
    for index, call in enumerate(turn.calls, 1):
        found = resources.values.get((number - 1, index - 1), ())
        pseudonyms = "{" + ", ".join(f"{_json(field)}: {_json(value)}" for field, _, value in found) + "}"
        arguments = call.arguments if keep_arguments and call.arguments is not None else pseudonyms
        outcomes = ", ".join(a.outcome for a in call.attempts)
        recorded = f" (call id {call.call_id!r})" if keep_arguments else ""
        lines += [f"# recorded{recorded}: {call.attempts[-1].duration_ms:.1f} ms, {outcomes}",
                  "[[batches.calls]]",
                  f"id = {_string(f't{number}.{index}')}",
                  f"name = {_string(call_tool(call, models[call.tool], names[call.tool]))}",
                  f"arguments = {_string(arguments)}"]
        if keep_arguments:
            lines.append("check_arguments = false")
        lines.append("")
    return lines


def _string(value: str) -> str:
    """A TOML basic string (tomli_w's escaping: control characters and DEL escaped)."""
    import tomli_w

    return tomli_w.dumps({"v": value})[4:].rstrip("\n")


def _json(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def _key(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z0-9_\-]+", name) else _string(name)
