"""Tools scripted as data: the behaviour of a tool a scenario file declares, from a small vocabulary.

Owns `Script` (a `Behaviour` made of touch points: read, write in place, write atomically, append,
truncate, delete, rename, add to a ledger, change the shell cwd, wait), `Template` (`{name}`
references to the call's arguments and to values earlier steps bound with `as`) and their
validation, with errors that say which field of a step is wrong. A script is data all the way down:
nothing in it is evaluated as code, and it converts back to the same data (`to_json`), so a
reproducer can carry it inline. It never declares metadata (see `ToolSpec.declared`), draws
latencies or decides when a step runs; the executor does.

    [[tools.query_db.does]]
    op = "read"
    path = "/db/{table}.csv"
    at = 0.5
    as = "rows"
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import Any

from harness.model import JSONValue
from harness.suggest import FieldError, check_keys
from harness.tools.spec import Args, ToolError, ToolIO

_REFERENCE = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}|[{}]")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ScriptError(FieldError):
    """A scripted tool is malformed: `field` is where (relative to the tool), `expected` what should be there."""


@dataclass(frozen=True, slots=True)
class Template:
    """A string with `{name}` references (`{{` and `}}` stand for braces).

    A template that is exactly one reference yields the referenced value as it is (a number stays a
    number); otherwise each reference is replaced by its text (strings as they are, other values as
    JSON). A name not bound by an earlier step is an argument of the call; a call without it fails
    the way a real tool does ("missing argument 'table'").
    """

    text: str

    @classmethod
    def parse(cls, value: Any, field: str) -> Template:
        if not isinstance(value, str):
            raise ScriptError(field, f"a string (a template such as \"{{path}}\"), got {value!r:.60}")
        for match in _REFERENCE.finditer(value):
            if match.group(0) in ("{", "}"):
                raise ScriptError(field, f"a template whose braces are {{name}} references or doubled ({value!r:.60})")
        return cls(value)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(m.group(1) for m in _REFERENCE.finditer(self.text) if m.group(1))

    def render(self, scope: Mapping[str, JSONValue]) -> JSONValue:
        whole = _REFERENCE.fullmatch(self.text)
        if whole is not None and whole.group(1):
            return _lookup(scope, whole.group(1))

        def replace(match: re.Match[str]) -> str:
            token = match.group(0)
            if token in ("{{", "}}"):
                return token[0]
            value = _lookup(scope, match.group(1))
            return value if isinstance(value, str) else json.dumps(value, sort_keys=True)

        return _REFERENCE.sub(replace, self.text)

    def text_of(self, scope: Mapping[str, JSONValue], what: str) -> str:
        value = self.render(scope)
        if not isinstance(value, str):
            raise ToolError(f"{what} must be a string, got {json.dumps(value)}")
        return value


def _lookup(scope: Mapping[str, JSONValue], name: str) -> JSONValue:
    if name not in scope:
        raise ToolError(f"missing argument {name!r}")
    return scope[name]


def render_json(value: JSONValue, scope: Mapping[str, JSONValue]) -> JSONValue:
    """A JSON value with every string in it rendered as a template (keys stay as written)."""
    if isinstance(value, str):
        return Template(value).render(scope)
    if isinstance(value, list):
        return [render_json(item, scope) for item in value]
    if isinstance(value, dict):
        return {key: render_json(item, scope) for key, item in value.items()}
    return value


def _json_names(value: JSONValue, field: str) -> dict[str, str]:
    """The `{name}`s the strings of a JSON template read, each with where it is first read."""
    if isinstance(value, str):
        return dict.fromkeys(Template(value).names, field)
    names: dict[str, str] = {}
    items = enumerate(value) if isinstance(value, list) else value.items() if isinstance(value, dict) else ()
    for key, item in items:
        at = f"{field}[{key}]" if isinstance(value, list) else f"{field}.{key}"
        for name, where in _json_names(item, at).items():
            names.setdefault(name, where)
    return names


def _check_json(value: Any, field: str) -> JSONValue:
    """A JSON template: strings are templates, tables and arrays nest, numbers and booleans stay."""
    if isinstance(value, str):
        Template.parse(value, field)
        return value
    if isinstance(value, bool | int | float) or value is None:
        return value
    if isinstance(value, list):
        return [_check_json(item, f"{field}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, Mapping):
        return {str(k): _check_json(v, f"{field}.{k}") for k, v in value.items()}
    raise ScriptError(field, f"a string, number, boolean, array or table, got {value!r:.60}")


#: Each operation's fields: required, then optional (besides `op`, `at` and `as`).
OPERATIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "read": (("path",), ()),
    "write": (("path", "content"), ("truncate_at",)),
    "write_atomic": (("path", "content"), ()),
    "append": (("path", "content"), ()),
    "truncate": (("path",), ()),
    "delete": (("path",), ()),
    "rename": (("path", "to"), ()),
    "ledger": (("ledger",), ("key", "payload")),
    "cd": (("path",), ()),
    "wait": ((), ()),
}
_TEMPLATE_FIELDS = ("path", "to", "content", "key")


@dataclass(frozen=True, slots=True)
class Step:
    """One touch point: `op` at fraction `at` of the attempt's latency, its result bound to `bind`."""

    op: str
    at: float
    fields: tuple[tuple[str, Any], ...] = ()
    bind: str | None = None

    def get(self, name: str) -> Any:
        for key, value in self.fields:
            if key == name:
                return value
        return None

    def to_json(self) -> dict[str, JSONValue]:
        data: dict[str, JSONValue] = {"op": self.op, "at": self.at}
        for key, value in self.fields:
            data[key] = value.text if isinstance(value, Template) else value
        if self.bind is not None:
            data["as"] = self.bind
        return data


def _fraction(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise ScriptError(field, f"a fraction of the call's latency between 0.0 and 1.0, got {value!r:.60}")
    return float(value)


def parse_step(value: Any, field: str, previous_at: float) -> Step:
    if not isinstance(value, Mapping):
        raise ScriptError(field, f"a table with op = one of {', '.join(OPERATIONS)}, got {value!r:.60}")
    op = value.get("op")
    if not isinstance(op, str) or op not in OPERATIONS:
        raise ScriptError(f"{field}.op", f"one of {', '.join(OPERATIONS)}, got {op!r:.60}")
    required, optional = OPERATIONS[op]
    check_keys(value, {"op", "at", "as", *required, *optional}, field, ScriptError)
    for name in required:
        if name not in value:
            raise ScriptError(f"{field}.{name}", f"a value (op {op!r} needs {', '.join(required)})")
    # Like the built-in tools: readers look half way through, everything else acts at the end.
    at = _fraction(value.get("at", max(previous_at, 0.5 if op == "read" else 1.0)), f"{field}.at")
    if at < previous_at:
        raise ScriptError(f"{field}.at", f"a fraction >= the previous step's ({previous_at}), got {at}: steps run "
                          "in order")
    fields: list[tuple[str, Any]] = []
    for name in (*required, *optional):
        if name not in value:
            continue
        raw = value[name]
        where = f"{field}.{name}"
        if name in _TEMPLATE_FIELDS:
            fields.append((name, Template.parse(raw, where)))
        elif name == "ledger":
            if not isinstance(raw, str) or not _NAME.fullmatch(raw):
                raise ScriptError(where, f"a ledger name (letters, digits, _), got {raw!r:.60}")
            fields.append((name, raw))
        elif name == "truncate_at":
            truncate_at = _fraction(raw, where)
            if not previous_at <= truncate_at <= at:
                raise ScriptError(where, f"a fraction between the previous step's ({previous_at}) and this "
                                  f"step's at ({at}), got {truncate_at}")
            fields.append((name, truncate_at))
        else:  # payload
            fields.append((name, _check_json(raw, where)))
    bind = value.get("as")
    if bind is not None and (not isinstance(bind, str) or not _NAME.fullmatch(bind)):
        raise ScriptError(f"{field}.as", f"a name (letters, digits, _) to bind the step's result to, got {bind!r:.60}")
    if bind is not None and op not in ("read", "ledger", "cd"):
        raise ScriptError(f"{field}.as", "no binding: only read (the content), ledger (the entry id) and cd (the new "
                          f"cwd) produce a value, not {op!r}")
    return Step(op, at, tuple(fields), bind)


@dataclass(frozen=True, slots=True)
class Script:
    """A behaviour made of steps, run in order; the call returns `result` rendered, or by default an
    object of the values the steps bound (`{}` when none)."""

    steps: tuple[Step, ...] = ()
    result: JSONValue = None
    has_result: bool = False

    @classmethod
    def parse(cls, steps: Any, result: Any = None, *, has_result: bool = False, field: str = "does") -> Script:
        if not isinstance(steps, list):
            raise ScriptError(field, f"an array of steps ([[tools.NAME.does]]; [] for a tool that only waits), "
                              f"got {steps!r:.60}")
        parsed: list[Step] = []
        previous = 0.0
        for i, value in enumerate(steps):
            step = parse_step(value, f"{field}[{i}]", previous)
            parsed.append(step)
            previous = step.at
        checked = _check_json(result, "result") if has_result else None
        return cls(tuple(parsed), checked, has_result)

    def __call__(self, args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
        scope: dict[str, JSONValue] = dict(args)
        bound: dict[str, JSONValue] = {}
        reached = 0.0
        for step in self.steps:
            truncate_at = step.get("truncate_at")
            if step.op == "write" and truncate_at is not None:
                if truncate_at > reached:
                    yield truncate_at
                    reached = truncate_at
                io.truncate(step.get("path").text_of(scope, "path"))
            if step.at > reached:
                yield step.at
                reached = step.at
            value = _act(step, scope, io)
            if step.bind is not None:
                scope[step.bind] = bound[step.bind] = value
        if self.has_result:
            return render_json(self.result, scope)
        return bound

    def to_json(self) -> list[dict[str, JSONValue]]:
        return [step.to_json() for step in self.steps]

    def arguments(self, field: str = "does") -> dict[str, str]:
        """The call's arguments the script reads (names no earlier step bound with `as`), each with
        where it is first read (`does[1].path`, `result.rows`): a call without one fails with
        "missing argument", so the scenario loader takes them for the tool's required arguments."""
        read: dict[str, str] = {}
        bound: set[str] = set()
        for i, step in enumerate(self.steps):
            for key, value in step.fields:
                where = f"{field}[{i}].{key}"
                names = dict.fromkeys(value.names, where) if isinstance(value, Template) else \
                    _json_names(value, where) if key == "payload" else {}
                for name, at in names.items():
                    if name not in bound:
                        read.setdefault(name, at)
            if step.bind is not None:
                bound.add(step.bind)
        if self.has_result:
            for name, at in _json_names(self.result, "result").items():
                if name not in bound:
                    read.setdefault(name, at)
        return read


def _act(step: Step, scope: Mapping[str, JSONValue], io: ToolIO) -> JSONValue:
    def text(name: str) -> str:
        template = step.get(name)
        assert isinstance(template, Template)
        return template.text_of(scope, name)

    op = step.op
    if op == "read":
        return io.read(text("path"))
    if op == "write":
        io.write(text("path"), text("content"))
    elif op == "write_atomic":
        io.write_atomic(text("path"), text("content"))
    elif op == "append":
        io.append(text("path"), text("content"))
    elif op == "truncate":
        io.truncate(text("path"))
    elif op == "delete":
        io.remove(text("path"))
    elif op == "rename":
        io.rename(text("path"), text("to"))
    elif op == "cd":
        io.set_cwd(text("path"))
        return io.world.cwd
    elif op == "ledger":
        key = text("key") if step.get("key") is not None else None
        payload = render_json(step.get("payload"), scope)
        entry, _ = io.ledger_append(step.get("ledger"), payload, key or io.idempotency_key)
        return entry.entry_id
    return None
