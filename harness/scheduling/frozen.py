"""Copies and constructions of frozen slots dataclasses, without their `__init__`, for the hot paths.

Owns `copier(cls)` (a field-by-field copy) and `maker(cls)` (an instance from its field values in
field order), each a function generated once per class that sets the slots through their descriptors
(what `object.__setattr__` ends in, without its lookup by name). They are for values that are valid by
construction: the harness's own copies of a validated value (the scheduler's private batch), a
`CallResult` the attempt settles with. They never validate, and are never for values a user gives.
It also owns the copies a scheduler is handed of its batch and execution policy (`private_batch`, `clone`).
A run makes a few dozen of these: through `__init__` (a frozen dataclass's is a chain of
`object.__setattr__` calls, then `__post_init__`) each costs two or three times as much.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any, TypeVar

from harness.model import Batch, ToolCall
from harness.scheduling.execution import ExecutionPolicy

_T = TypeVar("_T")


def copier(cls: type[_T]) -> Callable[[_T], _T]:
    """A function returning a copy of a `cls` instance, equal to it field for field."""
    names = _slot_fields(cls)
    body = "".join(f"    _set_{name}(copy, value.{name})\n" for name in names)
    source = f"def copy(value):\n    copy = _new(_cls)\n{body}    return copy\n"
    made: Callable[[_T], _T] = _generated(cls, names, source, "copy")
    return made


def maker(cls: type[_T]) -> Callable[..., _T]:
    """A function taking every field of `cls` positionally, in field order, returning the instance."""
    names = _slot_fields(cls)
    body = "".join(f"    _set_{name}(made, {name})\n" for name in names)
    source = f"def make({', '.join(names)}):\n    made = _new(_cls)\n{body}    return made\n"
    made: Callable[..., _T] = _generated(cls, names, source, "make")
    return made


def _slot_fields(cls: type[Any]) -> tuple[str, ...]:
    names = tuple(f.name for f in fields(cls))
    for name in names:
        if not hasattr(cls.__dict__.get(name), "__set__"):
            raise TypeError(f"{cls.__name__}.{name} is not a slot: copier and maker are for slots dataclasses")
    return names


def _generated(cls: type[Any], names: tuple[str, ...], source: str, name: str) -> Any:
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    namespace.update((f"_set_{field}", cls.__dict__[field].__set__) for field in names)
    exec(compile(source, f"<harness.scheduling.frozen {name} {cls.__qualname__}>", "exec"), namespace)
    return namespace[name]


# -- the copies a scheduler is handed (`SchedulerContext.batch`, `.execution`) ---------------------------

EXECUTION_FIELDS = tuple(f.name for f in fields(ExecutionPolicy))
_CALL_FIELDS = tuple(f.name for f in fields(ToolCall))


def clone(value: _T, names: tuple[str, ...]) -> _T:
    """A field-by-field copy of a frozen (slots) dataclass, without re-running its validation: the
    original was validated, and this runs for every batch of every run (a few microseconds). The
    classes themselves go through their generated copiers; a subclass (which may add fields) by name."""
    kind = type(value)
    if kind is ToolCall:
        return _copy_call(value)  # type: ignore[arg-type, return-value]
    if kind is ExecutionPolicy:
        return _copy_execution(value)  # type: ignore[arg-type, return-value]
    copy = object.__new__(kind)
    for name in names:
        object.__setattr__(copy, name, getattr(value, name))
    return copy


_copy_call = copier(ToolCall)
_copy_execution = copier(ExecutionPolicy)


def private_batch(batch: Batch) -> Batch:
    """The batch with copies of its calls, equal to it in every field."""
    copy = object.__new__(Batch)
    object.__setattr__(copy, "calls", tuple([_copy_call(call) if type(call) is ToolCall else clone(call, _CALL_FIELDS)
                                             for call in batch.calls]))
    object.__setattr__(copy, "label", batch.label)
    return copy
