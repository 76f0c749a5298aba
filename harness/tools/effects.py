"""Tools with effects beyond the filesystem or that need a person: `create_ticket`,
`send_message`, `restart_service` and `rollback_deployment` (seed 003), `save_daily_report`
(seed 004), `clarify`.

Owns their behaviour. External effects land in a ledger half way through the call (the server
acts before the response travels back), so a call abandoned after that point still took effect:
the ghost and duplicate effects the oracles look for. The idempotency key is the `idempotency_key`
argument, or the one the runtime attaches to the attempt; a repeated key returns the original
response, as idempotency-key APIs do, so a keyed retry is indistinguishable from a single call.
`clarify` waits for the (mock) user.
"""

from __future__ import annotations

from collections.abc import Generator

from harness.faults.latency import Fixed
from harness.model import JSONValue
from harness.tools.params import Parameters
from harness.tools.spec import (
    Args,
    Behaviour,
    Declared,
    ResourceKeys,
    SideEffect,
    ToolError,
    ToolIO,
    ToolSpec,
    require_str,
)


def _key(args: Args, io: ToolIO) -> str | None:
    key = args.get("idempotency_key")
    return key if isinstance(key, str) and key else io.idempotency_key


def create_ticket(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    title = require_str(args, "title")
    yield 0.5
    entry, _ = io.ledger_append("tickets", {"title": title, "body": args.get("body", "")}, _key(args, io))
    yield 1.0
    return {"ticket": entry.entry_id}


def send_message(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    channel, text = require_str(args, "channel"), require_str(args, "text")
    yield 0.5
    entry, _ = io.ledger_append("messages", {"channel": channel, "text": text}, _key(args, io))
    yield 1.0
    return {"message": entry.entry_id}


def save_daily_report(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    content = require_str(args, "content")
    path = args.get("path", "reports/daily.md")
    if not isinstance(path, str):
        raise ToolError("argument 'path' must be a string")
    current = io.read(path) if io.exists(path) else ""
    yield 1.0
    io.write(path, current + content.rstrip("\n") + "\n")
    return {"path": io.path(path), "appended_chars": len(content)}


def restart_service(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    service = require_str(args, "service_name")
    yield 0.5
    entry, _ = io.ledger_append("operations", {"op": "restart", "service": service}, _key(args, io))
    yield 1.0
    return {"operation": entry.entry_id, "service": service, "status": "restarted"}


def rollback_deployment(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    service = require_str(args, "service_name")
    version = args.get("to_version", "previous")
    yield 0.5
    entry, _ = io.ledger_append("operations", {"op": "rollback", "service": service, "to": version}, _key(args, io))
    yield 1.0
    return {"operation": entry.entry_id, "service": service, "version": version}


def clarify(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    question = require_str(args, "question")
    yield 1.0
    answer = args.get("answer")
    choices = args.get("choices")
    if not isinstance(answer, str):
        answer = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], str) else "yes"
    return {"question": question, "answer": answer}


def _external(name: str, description: str, ledger: str, behaviour: Behaviour, latency_ms: int, *,
              category: str = "external", needs_confirmation: bool = False, **parameters: str) -> ToolSpec:
    """An external-effect tool: lands in `ledger`, not idempotent, keeps running when cancelled; it
    takes `parameters` and an optional `idempotency_key`."""
    declared = Declared(read_only=False, side_effect=SideEffect.EXTERNAL, idempotent=False,
                        needs_confirmation=needs_confirmation, honours_cancel=False, category=category,
                        resource_keys=ResourceKeys(fixed=(f"ledger:{ledger}",)))
    return ToolSpec(name, description, declared, behaviour, Fixed(latency_ms), stops_on_cancel=False,
                    parameters=Parameters.of(**parameters, idempotency_key="string?"))


SPECS = (
    _external("create_ticket", "Create a ticket in an external tracker (deduplicated by idempotency key).",
              "tickets", create_ticket, 800, needs_confirmation=True, title="string", body="string?"),
    _external("send_message", "Send a chat message (deduplicated by idempotency key).", "messages", send_message, 600,
              channel="string", text="string"),
    ToolSpec(
        "save_daily_report", "Seed 004: append a section to the daily report file (read-modify-write).",
        Declared(read_only=False, side_effect=SideEffect.LOCAL, idempotent=False, category="write",
                 resource_keys=ResourceKeys(("path",), default_path="reports/daily.md")),
        save_daily_report, Fixed(300), parameters=Parameters.of(content="string", path="string?"),
    ),
    _external("restart_service", "Seed 003: restart a production service (an operation in the ops ledger).",
              "operations", restart_service, 5000, category="ops", needs_confirmation=True, service_name="string"),
    _external("rollback_deployment", "Seed 003: roll a service back to an earlier version (ops ledger).",
              "operations", rollback_deployment, 3000, category="ops", needs_confirmation=True,
              service_name="string", to_version="string?"),
    ToolSpec(
        "clarify", "Ask the user a question and wait for the answer.",
        Declared(read_only=True, interactive=True, exclusive=True, category="interactive"),
        clarify, Fixed(10000), parameters=Parameters.of(question="string", answer="string?", choices="array?"),
    ),
)
