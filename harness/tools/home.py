"""Home Assistant tools, the three hermes-agent safe-lists and the one that acts:
`ha_list_entities`, `ha_list_services`, `ha_get_state`, `ha_call_service`.

Owns their behaviour over device state kept as files under `/ha/states/<entity_id>` (so every read
and write is an ordinary touch the oracles see). Reads happen half way through; a service call reads
the state when it starts and writes the new one when it ends. Never a real device.
"""

from __future__ import annotations

import posixpath
from collections.abc import Generator

from harness.faults.latency import Fixed
from harness.model import JSONValue
from harness.tools.params import Parameters
from harness.tools.spec import Args, Declared, SideEffect, ToolError, ToolIO, ToolSpec, require_str

STATES = "/ha/states"
SERVICES = {"turn_on": "on", "turn_off": "off", "toggle": None}


def _state_path(entity_id: str) -> str:
    if "/" in entity_id or not entity_id:
        raise ToolError(f"invalid entity_id {entity_id!r}")
    return posixpath.join(STATES, entity_id)


def ha_list_entities(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    yield 0.5
    names = [posixpath.basename(p) for p in io.list_files(STATES)] if io.exists(STATES) else []
    return {"entities": names}


def ha_list_services(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    yield 1.0
    return {"services": sorted(SERVICES)}


def ha_get_state(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    entity = require_str(args, "entity_id")
    yield 0.5
    return {"entity_id": entity, "state": io.read(_state_path(entity)).strip()}


def ha_call_service(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    entity, service = require_str(args, "entity_id"), require_str(args, "service")
    if service not in SERVICES:
        raise ToolError(f"unknown service {service!r}; known: {', '.join(sorted(SERVICES))}")
    current = io.read(_state_path(entity)).strip()
    yield 1.0
    new = SERVICES[service] or ("off" if current == "on" else "on")
    io.write(_state_path(entity), new + "\n")
    return {"entity_id": entity, "state": new}


_READ = Declared(read_only=True, category="home")
SPECS = (
    ToolSpec("ha_list_entities", "Home Assistant: list entities.", _READ, ha_list_entities, Fixed(300),
             parameters=Parameters()),
    ToolSpec("ha_list_services", "Home Assistant: list services.", _READ, ha_list_services, Fixed(300),
             parameters=Parameters()),
    ToolSpec("ha_get_state", "Home Assistant: the state of one entity.", _READ, ha_get_state, Fixed(400),
             parameters=Parameters.of(entity_id="string")),
    ToolSpec("ha_call_service", "Home Assistant: call a service (turn_on, turn_off, toggle) on an entity.",
             Declared(read_only=False, side_effect=SideEffect.EXTERNAL, idempotent=False, category="home"),
             ha_call_service, Fixed(800), parameters=Parameters.of(entity_id="string", service="string")),
)
