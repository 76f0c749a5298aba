"""What a call of a stalled MCP server waits on: `Stalled`, an answer that never comes.

Owns that SimPy event, which the attempt (`harness.scheduling.attempt`) makes and the hang diagnosis
(`harness.run.hang`) names the server from. Never fires it.
"""

from __future__ import annotations

import simpy


class Stalled(simpy.Event):
    """What a call of a stalled MCP server waits on: an answer that never comes (the hang diagnosis names
    the server from it, and the progress notifications it sends meanwhile every `every_ms`, if it does)."""

    def __init__(self, env: simpy.Environment, server: str, at_ms: int, every_ms: int | None = None) -> None:
        super().__init__(env)
        self.server, self.at_ms, self.every_ms = server, at_ms, every_ms
