"""The tools of a scenario file: `tools_module`, `[tools.NAME]` and `unknown_tools`.

Owns how a scenario changes the catalogue: the overrides of a catalogue tool (latency, declared
properties, cancellation, file lock, sync; never its behaviour or arguments), a tool declared whole
with its behaviour (`does`, `harness.tools.script`), result and parameters, and the check that every
call names a tool the catalogue has or one the scenario declares unknown on purpose. It never builds
the base catalogue (`harness.tools.catalogue`) and never checks a call's arguments
(`harness.scenario.arguments`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from harness.model import Batch
from harness.scenario.reader import Reader
from harness.suggest import FieldError, did_you_mean
from harness.tools.catalogue import Catalogue
from harness.tools.hints import McpHints
from harness.tools.options import OPTIONS, configure
from harness.tools.params import Parameters
from harness.tools.script import Script, ScriptError, Template
from harness.tools.spec import Declared, ResourceKeys, SideEffect, ToolSpec

_TOOL_KEYS = {"latency", "declared", "stops_on_cancel", "max_concurrency", "failure", "file_lock", "sync",
              "blocking_ms", "annotations", "server"}
#: A tool the catalogue does not have is declared whole: its behaviour (`does`) is what makes it one.
_NEW_TOOL_KEYS = _TOOL_KEYS | {"description", "does", "result", "parameters", "input_schema"}
#: What a declared tool claims when its scenario does not say: it may change things, and not safely twice.
NEW_TOOL_DECLARED = Declared(read_only=False, side_effect=SideEffect.LOCAL, idempotent=False)
_DECLARED_BOOLS = {"read_only", "idempotent", "interactive", "needs_confirmation", "honours_cancel", "exclusive"}


def tool_modules(r: Reader, value: Any, extra: tuple[str, ...]) -> tuple[str, ...]:
    """`tools_module = "pkg.mod"` (or a list): the Python modules whose TOOLS the scenario uses, then `extra`."""
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
        raise r.fail("tools_module", "a Python module name (or a list of them) whose TOOLS the scenario uses, "
                     "e.g. \"mypkg.tools\"", value)
    return tuple(dict.fromkeys([*names, *extra]))


def parse_tools(r: Reader, value: Any, base: Catalogue) -> Catalogue:
    """Overrides of the catalogue's tools, and tools the scenario declares whole (with `does`)."""
    if not isinstance(value, Mapping):
        raise r.fail("tools", "a table of tool name = table", value)
    catalogue = base
    for tool_name, override in value.items():
        field = f"tools.{tool_name}"
        # An MCP tool (`input_schema`) is the server's, whatever the mock catalogue calls the same name.
        if tool_name in base and not (isinstance(override, Mapping) and "input_schema" in override):
            o = r.table(override, field, _NEW_TOOL_KEYS | set(OPTIONS.get(tool_name, ())))
            for whole in ("does", "result", "description", "parameters", "input_schema"):
                if whole in o:
                    raise r.fail(f"{field}.{whole}", f"no {whole}: {tool_name!r} is a tool of the catalogue and "
                                 "keeps its behaviour and arguments (declare a tool under a new name to script one)",
                                 has_got=False)
            spec = catalogue[tool_name]
        else:
            if isinstance(override, Mapping):  # a misspelt key first: `doe` is why `does` is missing
                r.table(override, field, _NEW_TOOL_KEYS)
            if not isinstance(override, Mapping) or "does" not in override:
                # A tool this file declares is as likely to be the one meant as one of the catalogue.
                declared = [n for n, v in value.items() if isinstance(v, Mapping) and "does" in v]
                raise r.fail(field, f"a tool of the catalogue ({did_you_mean(tool_name, [*declared, *base])}"
                             "valid: `harness list tools`), or a new tool declared with its behaviour: does = [...] "
                             "(touch points; [] for a tool that only waits)", has_got=False)
            if not _TOOL_NAME.fullmatch(tool_name):
                raise r.fail(field, "a tool name of letters, digits, '_', '-' or '.'", tool_name)
            o = override
            try:
                behaviour = Script.parse(o["does"], o.get("result"), has_result="result" in o, field="does")
            except ScriptError as exc:
                raise r.fail(f"{field}.{exc.field}", exc.expected, has_got=False) from None
            description = r.string(o.get("description", f"declared in {r.file}"), f"{field}.description",
                                   nonempty=False)
            spec = ToolSpec(tool_name, description, NEW_TOOL_DECLARED, behaviour,
                            parameters=_parameters(r, o, behaviour, field) if "parameters" in o else None)
            if "input_schema" in o:
                spec = replace(spec, parameters=_input_schema(r, o, behaviour, field))
        if "annotations" in o:  # before `declared`, whose explicit keys win over what the hints imply
            spec = replace(spec, declared=declared_from_hints(spec.declared, _hints(r, o["annotations"], field)))
        if "latency" in o:
            spec = replace(spec, latency=r.latency(o["latency"], f"{field}.latency"))
        if "stops_on_cancel" in o:
            spec = replace(spec, stops_on_cancel=r.boolean(o["stops_on_cancel"], f"{field}.stops_on_cancel"))
        if "declared" in o:
            spec = replace(spec, declared=_declared(r, spec.declared, o["declared"], f"{field}.declared",
                                                    spec.parameters if tool_name not in base else None))
        if "file_lock" in o:
            spec = replace(spec, file_lock=r.boolean(o["file_lock"], f"{field}.file_lock"))
        if "sync" in o:  # the real tool is a plain function: a bridged runtime blocks while it runs
            spec = replace(spec, sync=r.boolean(o["sync"], f"{field}.sync"))
        if "blocking_ms" in o:
            spec = replace(spec, blocking_ms=r.non_negative(o["blocking_ms"], f"{field}.blocking_ms"))
        if "server" in o:  # the MCP server it comes from, which `[faults]` mcp_* entries name
            spec = replace(spec, server=r.string(o["server"], f"{field}.server"))
        chosen = {k: v for k, v in o.items() if k in OPTIONS.get(tool_name, ())} if tool_name in base else {}
        if chosen:
            spec = _configured(r, spec, chosen, field)
        catalogue = catalogue.replace_tool(spec)
    writer = catalogue.get("write_file")
    reader = catalogue.get("read_file")
    if writer is not None and dict(writer.options).get("stale_check") and reader is not None \
            and not dict(reader.options).get("dedup"):
        # A staleness check compares what read_file remembered: the session's reads are tracked.
        tracked = _configured(r, reader, {"track_reads": True}, "tools.write_file.stale_check")
        catalogue = catalogue.replace_tool(tracked)
    return catalogue


def _configured(r: Reader, spec: ToolSpec, options: Mapping[str, Any], field: str) -> ToolSpec:
    """A tool of the catalogue with the options the file chose (`harness.tools.options`)."""
    for name, value in options.items():
        values = OPTIONS[spec.name][name]
        if value not in values or isinstance(value, bool) != isinstance(values[0], bool):
            shown = ", ".join(("true" if v else "false") if isinstance(v, bool) else f'"{v}"' for v in values)
            raise r.fail(f"{field}.{name}", f"one of {shown}", value)
    try:
        return configure(spec, {**dict(spec.options), **options})
    except ValueError as exc:
        raise r.fail(field, str(exc), has_got=False) from None


def declared_from_hints(declared: Declared, hints: McpHints) -> Declared:
    """What a runtime that trusts MCP hints believes of the tool: read-only, idempotent and its side effect
    (none if read-only, external in an open world, local in a closed one), absent hints read as the worst case."""
    read_only = hints.is_read_only
    side_effect = SideEffect.NONE if read_only else SideEffect.EXTERNAL if hints.is_open_world else SideEffect.LOCAL
    return replace(declared, read_only=read_only, idempotent=hints.is_idempotent, side_effect=side_effect, hints=hints)


def _hints(r: Reader, value: Any, field: str) -> McpHints:
    try:
        return McpHints.parse(value)
    except ValueError as exc:
        raise r.fail(f"{field}.annotations", str(exc), has_got=False) from None


def _input_schema(r: Reader, table: Mapping[str, Any], behaviour: Script, field: str) -> Parameters:
    """`input_schema`: an MCP tool's `inputSchema` as JSON text (JSON's null has no TOML spelling), read as
    `parameters`; every argument the script and result read must be one of its properties."""
    if "parameters" in table:
        raise r.fail(f"{field}.input_schema", "either parameters or input_schema, not both", has_got=False)
    text = r.string(table["input_schema"], f"{field}.input_schema")
    try:
        schema = json.loads(text)
        parameters = Parameters.from_json_schema(schema if isinstance(schema, Mapping) else {"type": "?"})
    except (json.JSONDecodeError, ValueError) as exc:
        raise r.fail(f"{field}.input_schema", f"the JSON text of a JSON Schema of an object ({exc})",
                     has_got=False) from None
    for name, where in behaviour.arguments().items():
        _parameter(r, parameters, name, f"{field}.{where}")
    return parameters


_TOOL_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")


def _parameters(r: Reader, table: Mapping[str, Any], behaviour: Script, field: str) -> Parameters:
    """A declared tool's `parameters` (harness.tools.params' short form); every argument its script
    and result read must be one of them."""
    try:
        parameters = Parameters.parse(table["parameters"], f"{field}.parameters")
    except FieldError as exc:
        raise r.fail(exc.field, exc.expected, has_got=False) from None
    for name, where in behaviour.arguments().items():
        _parameter(r, parameters, name, f"{field}.{where}")
    return parameters


def _parameter(r: Reader, parameters: Parameters, name: str, field: str) -> None:
    """A template at `field` reads the argument `name`: one of the declared `parameters`."""
    if name not in parameters.names:
        raise r.fail(field, f"a template over the tool's parameters ({did_you_mean(name, parameters.names)}"
                     f"{parameters.signature}) or over names earlier steps bind with as", f"{{{name}}}")


def _declared(r: Reader, declared: Declared, value: Any, field: str,
              parameters: Parameters | None = None) -> Declared:
    """`declared` with the table's changes; key templates of a tool declared with `parameters` read them."""
    d = r.table(value, field, _DECLARED_BOOLS | {"side_effect", "category", "resource_keys"})
    changes: dict[str, Any] = {k: r.boolean(v, f"{field}.{k}") for k, v in d.items() if k in _DECLARED_BOOLS}
    if "side_effect" in d:
        choices = [s.value for s in SideEffect]
        if d["side_effect"] not in choices:
            raise r.fail(f"{field}.side_effect", f"one of {', '.join(choices)}", d["side_effect"])
        changes["side_effect"] = SideEffect(d["side_effect"])
    if "category" in d:
        changes["category"] = r.string(d["category"], f"{field}.category")
    if "resource_keys" in d:
        keys = d["resource_keys"]
        where = f"{field}.resource_keys"
        if not isinstance(keys, list):
            raise r.fail(where, 'a list of key templates over the arguments, e.g. ["db:{table}", "file:{path}"]',
                         keys)
        for i, key in enumerate(keys):
            try:
                Template.parse(key, f"{where}[{i}]")
            except ScriptError as exc:
                raise r.fail(exc.field, exc.expected, has_got=False) from None
            if not key:
                raise r.fail(f"{where}[{i}]", "a non-empty key template", key)
            if parameters is not None:  # a tool with parameters: its key templates read them
                for name in Template(key).names:
                    _parameter(r, parameters, name, f"{where}[{i}]")
        changes["resource_keys"] = ResourceKeys(templates=tuple(keys))
    return replace(declared, **changes)


def check_known_tools(r: Reader, batches: tuple[Batch, ...], catalogue: Catalogue, unknown: Any) -> None:
    """Every call names a tool of the catalogue, or one the scenario declares unknown on purpose (to
    model a tool the runtime does not know): a typo must not run as a batch of errors that passes."""
    if not isinstance(unknown, list) or not all(isinstance(n, str) and n for n in unknown):
        raise r.fail("unknown_tools", "a list of tool names the runtime is meant not to know", unknown)
    for name in unknown:
        if name in catalogue:
            raise r.fail("unknown_tools", f"names of tools the catalogue does not have ({name!r} is one it has)",
                         unknown)
    valid = sorted(catalogue)
    for b, batch in enumerate(batches):
        for c, call in enumerate(batch):
            if call.name in catalogue or call.name in unknown:
                continue
            raise r.fail(f"batches[{b}].calls[{c}].name",
                         f"a known tool ({did_you_mean(call.name, valid)}valid: {', '.join(valid)}; or list it in "
                         "unknown_tools to model a tool the runtime does not know)", call.name)
