"""`SchedulerContext` sets an attribute whose value is its class default only when it differs, so a context
holds at most 30 attributes (CPython 3.11 keeps an instance's attributes inline, without a dict of its own,
up to 30 names per class): every attribute reads as `__init__` would have set it, default or not."""

from __future__ import annotations

from typing import Any

import pytest
import simpy

from harness.faults.plan import FaultPlan
from harness.model import Batch, ToolCall
from harness.scheduling.approvals import ApprovalScript
from harness.scheduling.context import SchedulerContext
from harness.scheduling.execution import ExecutionPolicy
from harness.sim.arbiter import Arbiter, Tape
from harness.sim.kernel import Kernel
from harness.tools.catalogue import BUILTIN
from harness.world import World
from harness.world.state import WorldState

STATE = WorldState(files=(("/r/a", "x"),), dirs=("/r",), cwd="/r")
BATCH = Batch((ToolCall("c1", "read_file", '{"path": "a"}'),))


def _context(**given: Any) -> SchedulerContext:
    kernel = given.pop("kernel", Kernel(1))
    return SchedulerContext(kernel, World.from_state(STATE), BUILTIN, BATCH, "test", **given)


def test_a_plain_context_keeps_at_most_30_attributes_and_reads_the_defaults() -> None:
    ctx = _context()
    assert len(vars(ctx)) <= 30
    assert (ctx._delegate, ctx._approvals, ctx._arbiter, ctx._execution, ctx._failures) == (None,) * 5
    assert (ctx._may_duplicate, ctx._may_tear, ctx._interruptible, ctx.crashed) == (False,) * 4
    assert (ctx._jitter, ctx.max_concurrency, ctx.grace_ms) == (0.0, None, 0)
    assert ctx._plain and not ctx.interrupted
    assert ctx.execution == ExecutionPolicy() and ctx._execution is not None  # made when first read


def test_every_given_value_is_set() -> None:
    kernel = Kernel(2)

    def delegate(agent: Any, task: Any, call_id: str) -> simpy.Event:
        return kernel.env.event()

    def failures(call: ToolCall) -> None:
        return None

    interrupt = kernel.env.event()
    approvals = ApprovalScript()
    arbiter = Arbiter(kernel, Tape(()), {"c1": 0})
    ctx = _context(kernel=kernel, delegate=delegate, approvals=approvals, arbiter=arbiter, failures=failures,
                   jitter=0.5, max_concurrency=3, interrupt=interrupt, grace_ms=40,
                   faults=FaultPlan(duplicate_delivery=0.5, torn_writes=0.25))
    assert (ctx._delegate, ctx._approvals, ctx._arbiter, ctx._failures) == (delegate, approvals, arbiter, failures)
    assert (ctx._may_duplicate, ctx._may_tear, ctx._interruptible) == (True, True, True)
    assert (ctx._jitter, ctx.max_concurrency, ctx.grace_ms, ctx.interrupt) == (0.5, 3, 40, interrupt)
    assert not ctx._plain and not ctx.crashed
    ctx.crashed = True  # set on the instance, as the driver does: the class default stays
    assert ctx.crashed and not _context().crashed


@pytest.mark.parametrize("name", ["_delegate", "_approvals", "_may_duplicate", "_may_tear", "_interruptible",
                                  "_arbiter", "_execution", "_failures", "_jitter", "max_concurrency", "grace_ms",
                                  "crashed"])
def test_each_defaulted_attribute_is_a_class_default(name: str) -> None:
    assert name in vars(SchedulerContext)
    assert name not in vars(_context())
