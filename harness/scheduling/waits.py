"""What a call's client may wait on besides its handle: `Stalled`, the answer of a stalled MCP server
that never comes, and `Progress`, a call's next progress notification.

Owns these two SimPy events, which the attempt (`harness.scheduling.attempt`) makes and the hang
diagnosis (`harness.run.hang`) names a server or a call from. Never fires one itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import simpy

if TYPE_CHECKING:
    from harness.scheduling.attempt import CallHandle


class Stalled(simpy.Event):
    """What a call of a stalled MCP server waits on: an answer that never comes (the hang diagnosis names
    the server from it, and the progress notifications it sends meanwhile every `every_ms`, if it does)."""

    def __init__(self, env: simpy.Environment, server: str, at_ms: int, every_ms: int | None = None) -> None:
        super().__init__(env)
        self.server, self.at_ms, self.every_ms = server, at_ms, every_ms


class Progress(simpy.Event):
    """A call's next progress notification (`CallHandle.progress`); the hang diagnosis names the call."""

    def __init__(self, env: simpy.Environment, handle: CallHandle) -> None:
        super().__init__(env)
        self.handle = handle
