"""A scenario's calls checked against their tools' parameters when it loads, so that a misspelt
argument is a load error instead of a run that ends in "missing argument 'key'" and passes.

Owns which parameters a call is checked against (`parameters_of`): a tool's own (the catalogue's, a
Python tool's, a declared tool's `parameters`) or, for a declared tool without them, the arguments its
script and result read (open: a call may send others, except a misspelling of one of them); plus, as
optional ones, the arguments its declared resource-key templates name. Also the opt-outs,
`check_arguments = false` on a call or at the top of the file, for wrong arguments sent on purpose (a
model does emit them), and the error, which names the field, the tool, what it takes and what is
wrong. Arguments that are not a JSON object are never checked: they are a test input of their own
(the `malformed-args` scenario). Names a call's `args_from` fills count as given. It never runs a tool.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import replace
from typing import Any

from harness.tools.params import Parameter, Parameters
from harness.tools.script import Script, Template
from harness.tools.spec import ToolSpec

#: The key, on a call or at the top of a scenario file, that turns the check off.
OPT_OUT = "check_arguments"


def parameters_of(spec: ToolSpec, *, recorded: bool = False) -> Parameters | None:
    """What a call of `spec` is checked against; None: nothing (a Python tool that does not say).
    A `recorded` call (one with a `result`) is checked as an open schema is: an argument the tool
    does not read cannot change the value it returns, so only a misspelling of one it reads is wrong
    (a transcript's model sends arguments the mock does not take)."""
    parameters = spec.parameters
    if parameters is None and isinstance(spec.behaviour, Script):
        parameters = Parameters(tuple(Parameter(name) for name in spec.behaviour.arguments()), closed=False)
    if parameters is None:
        return None
    if recorded:
        parameters = replace(parameters, closed=False)
    return parameters.with_optional(name for key in spec.declared.resource_keys.templates
                                    for name in Template(key).names)


def parsed(arguments: Any) -> Mapping[str, Any] | None:
    """A call's raw JSON arguments (or inline table) as an object; None when they are not one, and so
    are never checked."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            return None
    return arguments if isinstance(arguments, Mapping) else None


def fits(spec: ToolSpec, arguments: str, filled: Collection[str] = (), *, recorded: bool = False) -> bool:
    """Whether a call of `spec` with these raw `arguments` (and `filled` by `args_from`, and a
    `recorded` result or not) loads without `check_arguments = false`: what a writer of scenario
    data (a reproducer, an importer) asks before marking a call."""
    args = parsed(arguments)
    parameters = parameters_of(spec, recorded=recorded)
    return args is None or parameters is None or not parameters.problems(args, filled)


def check_calls(top: Mapping[str, Any], catalogue: Mapping[str, ToolSpec],
                error: Callable[[str, str], Exception]) -> None:
    """Raise `error(field, expected)` for the first call of the scenario data `top` (already
    validated) whose arguments do not fit its tool: its `[[batches]]`, its `[model]` rules' calls and
    each of its `[[agents]]`'."""
    if top.get(OPT_OUT, True) is False:
        return
    for field, call in _calls(top):
        spec = catalogue.get(call["name"])
        args = parsed(call.get("arguments", "{}"))
        if spec is None or args is None or call.get(OPT_OUT, True) is False:
            continue
        parameters = parameters_of(spec, recorded="result" in call)
        filled = list(call.get("args_from", {}))
        wrong = [] if parameters is None else parameters.problems(args, filled)
        if not wrong or parameters is None:
            continue
        where = "arguments" if wrong[0].name in args or wrong[0].kind == "missing" else f"args_from.{wrong[0].name}"
        raise error(f"{field}.{where}", f"the arguments {spec.name} takes ({parameters.signature}), got "
                    f"{'; '.join(p.text for p in wrong)}; {OPT_OUT} = false on the call sends them on purpose")


def _calls(top: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(field, call table) of every call the data scripts, in file order."""
    for b, batch in enumerate(top.get("batches", [])):
        for c, call in enumerate(batch["calls"]):
            yield f"batches[{b}].calls[{c}]", call
    yield from _rule_calls(top.get("model"), "model")
    for a, agent in enumerate(top.get("agents", [])):
        yield from _rule_calls(agent["model"], f"agents[{a}].model")


def _rule_calls(model: Any, field: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    if not isinstance(model, Mapping):  # absent, or a Python model named by a string
        return
    for r, rule in enumerate(model.get("rules", [])):
        for c, call in enumerate(rule.get("calls", [])):
            yield f"{field}.rules[{r}].calls[{c}]", call
