"""Reading the user's frames: the suspended frames of a generator chain, a stack as "path:line
(function)" lines, the user's innermost line, and the name a variable in the user's code gives an
object (`locks['file:/repo/a']`) or the call a stack serves.

Owns these readings only. It only reads frames: it never changes one and never raises for an object
it cannot read.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator, Mapping
from types import FrameType
from typing import Any

import simpy

from harness.diagnosis.origins import is_user, where
from harness.model import ToolCall

MAX_CHAIN = 16


def frame_chain(generator: Any) -> list[FrameType]:
    """The suspended frames of a generator and those it delegates to (outermost first): `yield from`
    chains, and the generator a driver steps with send() (held in one of its locals)."""
    frames: list[FrameType] = []
    seen: set[int] = set()
    for _ in range(MAX_CHAIN):
        frame = getattr(generator, "gi_frame", None) or getattr(generator, "cr_frame", None)
        if frame is None or id(generator) in seen:
            break
        seen.add(id(generator))
        frames.append(frame)
        inner = getattr(generator, "gi_yieldfrom", None) or getattr(generator, "cr_await", None)
        if inner is None:
            inner = next((v for _, v in sorted(frame.f_locals.items(), key=lambda item: item[0])
                          if isinstance(v, Generator) and v is not generator
                          and getattr(v, "gi_frame", None) is not None), None)
        generator = inner
    return frames


def stack_lines(frames: Iterable[FrameType]) -> tuple[str, ...]:
    return tuple(where(frame) for frame in frames)


def user_at(frames: list[FrameType]) -> str | None:
    """The innermost user frame (where the user's code is waiting), else None."""
    for frame in reversed(frames):
        if is_user(frame.f_code.co_filename):
            return where(frame)
    return None


def scopes(frames: Iterable[FrameType]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Where names live: each frame's locals, and the attributes of its `self`."""
    for frame in frames:
        local = frame.f_locals
        yield "", local
        owner = local.get("self")
        attributes = getattr(owner, "__dict__", None)
        if isinstance(attributes, dict):
            yield "self.", attributes


def name_in(obj: object, frames: Iterable[FrameType]) -> tuple[str, object] | None:
    """How the user's code holds `obj`: (`name`, None) for a variable, (`name[key]`, key) for an
    entry of a dict or list; None when no frame holds it."""
    for prefix, scope in scopes(frames):
        for name, value in scope.items():
            if value is obj and not name.startswith("_"):
                return f"{prefix}{name}", None
        for name, value in scope.items():
            if isinstance(value, dict):
                for key, item in value.items():
                    if item is obj:
                        return f"{prefix}{name}[{key!r}]", key
            elif isinstance(value, list | tuple) and len(value) <= 64:
                for index, item in enumerate(value):
                    if item is obj:
                        return f"{prefix}{name}[{index}]", index
    return None


def call_of(frames: list[FrameType], batch_ids: Mapping[str, ToolCall]) -> str | None:
    """The call a process works for: the `ToolCall` (or handle) its outermost frames hold."""
    for frame in frames[:3]:
        local = frame.f_locals
        ordered = sorted(local.items(), key=lambda item: (item[0] != "call", item[0]))
        for _, value in ordered:
            # A call's handle (`harness.scheduling.context.CallHandle`, read duck-typed: this layer is
            # below the contract) holds its ToolCall as `call`.
            held = getattr(value, "call", None) if isinstance(value, simpy.Event) else None
            call = held if isinstance(held, ToolCall) else value
            call = getattr(call, "_call", call)  # the asyncio bridge's tool-call object
            if isinstance(call, ToolCall) and call.id in batch_ids:
                return call.id
            # An OpenAI-shaped dataclass (the thread bridge's tool calls): its `id` field, never a property.
            shape = getattr(type(value), "__dataclass_fields__", None)
            if shape is not None and "id" in shape and "function" in shape:
                ident = getattr(value, "id", None)
                if isinstance(ident, str) and ident in batch_ids:
                    return ident
    return None


def members(value: object) -> Iterator[object]:
    """A value and, for a dict, list or tuple, its items (one level)."""
    yield value
    if isinstance(value, dict):
        yield from list(value.values())[:256]
    elif isinstance(value, list | tuple):
        yield from list(value)[:256]


def global_name(obj: object, frames: Iterable[FrameType]) -> tuple[str, object] | None:
    if obj is None:
        return None
    for frame in frames:
        for name, value in frame.f_globals.items():
            if value is obj:
                return name, None
    return None

