"""The arguments a tool takes: their names, which are required, and their JSON types.

Owns `Parameters`, a tool's argument schema as data, and what is wrong with one call's arguments
against it (`Parameters.problems`): an unknown name (with the closest parameter), a required one
missing, a value of the wrong JSON type. A schema comes from Python (`Parameters.of(path="string",
offset="integer?")`), from a scenario file's short form (`parameters = { key = "string", note =
"string?" }`, the same spelling) or from a JSON Schema object such as an MCP tool's `inputSchema` or
an OpenAI function's `parameters` (`Parameters.from_json_schema`). A closed schema knows every name
(any other is unknown); an open one knows some (what a declared tool's script reads) and accepts
others, except a name that misspells one of them. It never decides when arguments are checked or
what a problem costs: the scenario loader makes problems load errors; at run time a tool answers bad
arguments itself, as a real one does.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from harness.suggest import FieldError, closest

#: JSON Schema's type names, and `any`.
TYPES = ("string", "integer", "number", "boolean", "array", "object", "any")
_A = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false",
      "array": "an array", "object": "an object", "any": "any value"}


def _fits(value: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    return True


@dataclass(frozen=True, slots=True)
class Parameter:
    """One argument: its name, JSON type (`any`: not checked) and whether a call must give it."""

    name: str
    type: str = "any"
    required: bool = True

    @property
    def spelled(self) -> str:
        """The short form: `"string"` for a required string, `"string?"` for an optional one."""
        return self.type + ("" if self.required else "?")


@dataclass(frozen=True, slots=True)
class Problem:
    """What is wrong with one argument: `kind` is `unknown`, `missing` or `type`; `text` says it."""

    kind: str
    name: str
    text: str


@dataclass(frozen=True, slots=True)
class Parameters:
    """The arguments a tool takes, in the order it lists them; `closed`: no others."""

    items: tuple[Parameter, ...] = ()
    closed: bool = True

    @classmethod
    def of(cls, **spelled: str) -> Parameters:
        """`Parameters.of(path="string", offset="integer?")`: the short form as keyword arguments."""
        return cls.parse(spelled)

    @classmethod
    def parse(cls, value: Any, field: str = "parameters") -> Parameters:
        """The short form, `{ name = "TYPE" }` or `"TYPE?"` for an optional argument (TYPE one of
        string, integer, number, boolean, array, object, any); raises `FieldError`."""
        if not isinstance(value, Mapping):
            raise FieldError(field, 'a table of argument = type, e.g. { key = "string", note = "string?" }')
        items = []
        for name, spelled in value.items():
            kind = spelled[:-1] if isinstance(spelled, str) and spelled.endswith("?") else spelled
            if kind not in TYPES:
                raise FieldError(f"{field}.{name}", f"one of {', '.join(TYPES)} (a trailing ? for an argument a "
                                 f"call may leave out), got {spelled!r:.60}")
            items.append(Parameter(str(name), kind, not spelled.endswith("?")))
        return cls(tuple(items))

    @classmethod
    def from_json_schema(cls, schema: Mapping[str, Any]) -> Parameters:
        """An object schema's `properties` (their `type`; several types or none: `any`), `required`,
        and `additionalProperties` (closed unless it is true or a schema). Raises `ValueError` for a
        schema that is not of an object."""
        if schema.get("type", "object") != "object" or not isinstance(schema.get("properties", {}), Mapping):
            raise ValueError(f"expected a JSON Schema of an object (type \"object\", properties {{...}}), got "
                             f"{schema!r:.60}")
        required = schema.get("required", [])
        items = []
        for name, prop in schema.get("properties", {}).items():
            kind = prop.get("type") if isinstance(prop, Mapping) else None
            items.append(Parameter(str(name), kind if kind in TYPES else "any",
                                   isinstance(required, list) and name in required))
        extra = schema.get("additionalProperties", False)
        return cls(tuple(items), closed=extra is False)

    def to_json_schema(self) -> dict[str, Any]:
        """The JSON Schema `from_json_schema` reads back as these parameters."""
        properties = {p.name: {} if p.type == "any" else {"type": p.type} for p in self.items}
        return {"type": "object", "properties": properties, "required": [p.name for p in self.items if p.required],
                "additionalProperties": not self.closed}

    def to_data(self) -> dict[str, str]:
        """The short form `parse` reads back (as a closed schema: the short form has no `...`)."""
        return {p.name: p.spelled for p in self.items}

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.items)

    def with_optional(self, names: Iterable[str]) -> Parameters:
        """These parameters and, optional and untyped, any of `names` they lack."""
        known = set(self.names)
        extra = tuple(Parameter(n, required=False) for n in dict.fromkeys(names) if n not in known)
        return replace(self, items=self.items + extra) if extra else self

    @property
    def signature(self) -> str:
        """`path: string, offset?: integer` (`...` ends an open schema's)."""
        parts = [p.name + ("" if p.required else "?") + ("" if p.type == "any" else f": {p.type}")
                 for p in self.items]
        return ", ".join(parts + ([] if self.closed else ["..."])) or "no arguments"

    def problems(self, args: Mapping[str, Any], filled: Collection[str] = ()) -> list[Problem]:
        """What is wrong with `args` (a call's parsed arguments); `filled` are names given at run time
        (`args_from`), present but of a type not known yet. Unknown names come first, in the call's
        order, then missing ones, then wrong types. A null optional argument counts as left out, as
        models send it."""
        given = [*args, *(n for n in filled if n not in args)]
        by_name = {p.name: p for p in self.items}
        absent = [p.name for p in self.items if p.name not in given]
        found: list[Problem] = []
        suggested: set[str] = set()
        for name in given:
            if name in by_name:
                continue
            meant = closest(name, absent) or (closest(name, self.names) if self.closed else None)
            if meant is not None:
                suggested.add(meant)  # its absence is this typo: said once
                found.append(Problem("unknown", name, f"unknown argument {name!r} (did you mean {meant!r}?)"))
            elif self.closed:
                found.append(Problem("unknown", name, f"unknown argument {name!r}"))
        for param in self.items:
            if param.required and param.name not in given and param.name not in suggested:
                found.append(Problem("missing", param.name, f"no argument {param.name!r}"))
        for name, value in args.items():
            typed = by_name.get(name)
            if typed is None or name in filled or (value is None and not typed.required) or _fits(value, typed.type):
                continue
            found.append(Problem("type", name, f"argument {name!r} = {json.dumps(value)[:40]}, not {_A[typed.type]}"))
        return found
