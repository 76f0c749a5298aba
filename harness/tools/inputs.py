"""Data flow between calls: arguments taken from earlier results (`args_from`).

Owns the reference syntax and its resolution. A reference is `CALL.value` followed by keys or list
indexes (`create-ticket.value.ticket`, `q.value.rows.0`); an argument may be one reference (the value
keeps its JSON type) or a template with references in braces (`"ticket {t.value.ticket} opened"`).
Resolution merges the values into the call's raw JSON arguments and says, per argument, which producer
it read and whether it found a value. An argument whose producer has no value (not run yet, failed,
no such key) is set to null: the consumer runs with a missing input, as a runtime that does not wait
would send it. It never decides *when* to resolve (the scheduler context resolves at the start of an
attempt; the serial reference, in model order) and never touches the world.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass
from typing import Any

from harness.model import JSONValue, ToolCall

#: `CALL.value[.key|.index]*`; a call id may itself contain dots, so `.value` is the anchor.
_REF = re.compile(r"^(?P<call>.+?)\.value(?P<path>(?:\.[^.{}]+)*)$")
_BRACED = re.compile(r"\{([^{}]+)\}")

#: Where a producer's value comes from: call id -> (found, value). Not found: no value yet.
Lookup = Callable[[str], tuple[bool, JSONValue]]


class ArgsFromError(ValueError):
    """A malformed reference; the message says what was expected."""


@dataclass(frozen=True, slots=True)
class Reference:
    call: str
    path: tuple[str, ...]

    @property
    def text(self) -> str:
        return ".".join((self.call, "value", *self.path))

    def extract(self, value: JSONValue) -> tuple[bool, JSONValue]:
        """The value at `path` inside a producer's value: (False, None) when a step is missing."""
        current = value
        for step in self.path:
            if isinstance(current, Mapping) and step in current:
                current = current[step]
            elif isinstance(current, list) and step.isdigit() and int(step) < len(current):
                current = current[int(step)]
            else:
                return False, None
        return True, current


def parse_reference(text: str) -> Reference:
    match = _REF.match(text.strip())
    if match is None:
        raise ArgsFromError(f"a reference CALL.value[.key...] (e.g. \"create-ticket.value.ticket\"), got {text!r}")
    path = tuple(p for p in match.group("path").split(".") if p)
    return Reference(match.group("call"), path)


@dataclass(frozen=True, slots=True)
class Source:
    """How one argument is computed: a single reference, or a template of braced references."""

    text: str
    refs: tuple[Reference, ...]
    template: bool

    @classmethod
    def parse(cls, text: str) -> Source:
        if not isinstance(text, str) or not text.strip():
            raise ArgsFromError(f"a reference such as \"create-ticket.value.ticket\" or a template with "
                                  f"{{CALL.value.key}} in it, got {text!r}")
        if "{" in text:
            refs = tuple(parse_reference(m) for m in _BRACED.findall(text))
            if not refs:
                raise ArgsFromError(f"a template with at least one {{CALL.value.key}} reference, got {text!r}")
            return cls(text, refs, True)
        return cls(text, (parse_reference(text),), False)

    @property
    def producers(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.call for r in self.refs))

    def compute(self, lookup: Lookup) -> tuple[bool, JSONValue]:
        """(found, value); a template with any reference unresolved is not found."""
        if not self.template:
            found, value = lookup(self.refs[0].call)
            return self.refs[0].extract(value) if found else (False, None)
        parts: dict[str, str] = {}
        for ref in self.refs:
            found, value = lookup(ref.call)
            if found:
                found, value = ref.extract(value)
            if not found:
                return False, None
            parts[ref.text] = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return True, _BRACED.sub(lambda m: parts[parse_reference(m.group(1)).text], self.text)


def parse_args_from(table: Mapping[str, str]) -> dict[str, Source]:
    return {name: Source.parse(text) for name, text in table.items()}


@dataclass(frozen=True, slots=True)
class Input:
    """What one argument of a consumer read: its producer(s), whether a value was found, the value."""

    arg: str
    source: str
    producers: tuple[str, ...]
    found: bool
    value: JSONValue


def resolve(call: ToolCall, args_from: Mapping[str, str] | None, lookup: Lookup) -> tuple[ToolCall, list[Input]]:
    """`call` with its `args_from` arguments merged into its raw JSON arguments (unchanged when it has
    none, or when its own arguments are not a JSON object: there is nothing to merge into)."""
    if not args_from:
        return call, []
    inputs = []
    merged = call.parsed_arguments()
    for name, text in args_from.items():
        source = Source.parse(text)
        found, value = source.compute(lookup)
        inputs.append(Input(name, text, source.producers, found, value if found else None))
        if merged is not None:
            merged[name] = value if found else None
    if merged is None:
        return call, inputs
    return ToolCall(call.id, call.name, json.dumps(merged, ensure_ascii=False), call.index), inputs


def reference_lookup(results: Mapping[str, Any], earlier: Container[str],
                     unreported: Mapping[str, JSONValue] | None = None) -> Lookup:
    """The serial reference's lookup: in model order every earlier call has ended, so a consumer reads
    what its producer returned (reported results, objects with `ok` and `value`), nothing when the
    producer failed, and nothing from a call that comes later in model order.

    A producer with no reported result at all (its batch crashed before reporting) did not return
    "nothing": with `unreported` (call id -> the value it ended ok with in the run) it returned that."""
    def lookup(call_id: str) -> tuple[bool, JSONValue]:
        if call_id not in earlier:
            return False, None
        result = results.get(call_id)
        if result is None:
            return (True, unreported[call_id]) if unreported and call_id in unreported else (False, None)
        if not getattr(result, "ok", False):
            return False, None
        return True, getattr(result, "value", None)

    return lookup


def with_consumers(named_by: dict[str, set[str]], call_id: str) -> set[str]:
    """`call_id` and every call that names it, directly or through another such call (`named_by`:
    producer -> the calls that name it)."""
    gone, todo = {call_id}, [call_id]
    while todo:
        for consumer in named_by.get(todo.pop(), ()):
            if consumer not in gone:
                gone.add(consumer)
                todo.append(consumer)
    return gone
