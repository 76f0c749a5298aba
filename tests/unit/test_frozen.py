"""`harness.scheduling.frozen`: generated copies and constructions of frozen slots dataclasses equal
what `__init__` and `dataclasses.replace` give, field for field."""

from __future__ import annotations

from dataclasses import dataclass, fields

import pytest

from harness.model import CallResult, Outcome, ToolCall
from harness.scheduling.execution import ExecutionPolicy
from harness.scheduling.frozen import copier, maker


def test_a_copy_equals_its_original_and_is_another_object() -> None:
    for value in (ToolCall("c1", "read_file", '{"path": "a"}', 3),
                  ExecutionPolicy(timeout_ms=50, retries=2, tool_caps={"t": 1}, on_failure="cancel_siblings")):
        copy = copier(type(value))(value)
        assert copy == value and copy is not value and type(copy) is type(value)
        assert all(getattr(copy, f.name) is getattr(value, f.name) for f in fields(value))


def test_made_equals_init() -> None:
    make = maker(CallResult)
    made = make("c1", Outcome.OK, {"a": [1]}, None, 2, 5, 9, ("note",))
    assert made == CallResult("c1", Outcome.OK, {"a": [1]}, None, 2, 5, 9, ("note",))
    assert type(made) is CallResult


def test_a_class_without_slots_is_refused() -> None:
    @dataclass(frozen=True)
    class Plain:
        x: int

    with pytest.raises(TypeError, match="not a slot"):
        copier(Plain)
