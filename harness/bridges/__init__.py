"""Bridges: a real runtime's own executor or planner, run unchanged as a scheduler on the virtual clock.

- `asyncio`: `from_asyncio(execute)`, an asyncio executor on a virtual-time event loop.
- `threads`: `from_threads(execute)`, a thread-based executor on a turnstile of real OS threads.
- `planners`: `from_gate(fn)` / `from_plan(fn)`, a runtime's gate or planner function, which sees the
  simulated world's `os` read-only.
- `clock`, `start_order`, `leftovers`, `naming`: what both bridges share (the clocks bridged code
  reads, the order `as_completed` starts work in, what happens to work left running, a function's name).

A bridge never decides an order: the user's code does. Glue for named runtimes is in `harness.recipes`.
"""

from typing import TYPE_CHECKING

from harness.lazy import install

# Loaded when first read: asyncio comes with from_asyncio / ToolFailed only (see harness.lazy).
install(__name__, {
    **dict.fromkeys(("ToolFailed", "from_asyncio"), "harness.bridges.asyncio"),
    "from_threads": "harness.bridges.threads",
    **dict.fromkeys(("from_gate", "from_plan"), "harness.bridges.planners.adapters"),
})

if TYPE_CHECKING:
    from harness.bridges.asyncio import ToolFailed, from_asyncio
    from harness.bridges.planners.adapters import from_gate, from_plan
    from harness.bridges.threads import from_threads

__all__ = ["ToolFailed", "from_asyncio", "from_gate", "from_plan", "from_threads"]
