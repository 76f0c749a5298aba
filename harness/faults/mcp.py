"""MCP server faults: what a server, rather than one tool, does wrong, for every tool whose `server` it is.

Owns the spelling in a scenario's `[faults]` table and its values:
- `mcp_stall = { server = S, at_ms = T }`: from T on, S never answers: a call of its tools whose answer
  is due at or after T never gets it, though its work goes on as its latency says (a server stuck after
  the work, a reply lost on a transport with no read timeout); only a cancel the server honours stops it;
- `mcp_server_death = { server = S, at_ms = T }`: S dies at T: every call of its tools still running
  fails then, at once, with a clear error, and every later call fails as it starts (what lands before T
  stays);
- `mcp_progress_only = { server = S, at_ms = T, every_ms = E }`: from T on, S never answers (as for a stall)
  but keeps sending `notifications/progress` for every call of its tools the client still waits on, every E
  ms from T (or from the call's start, if later): a tool stuck in a loop that reports progress. A client
  that resets its timeout on progress (`[execution] reset_timeout_on_progress`) waits forever;
- `mcp_ignores_cancel = { server = S }`: S ignores `notifications/cancelled`: a call of its tools that
  the runtime abandons (a timeout, a cancel) keeps running and its work lands (`stops_on_cancel = false`
  for each of them). What the runtime may know stays the scenario's to declare (`declared.honours_cancel`).

Each entry may also be a list of such tables. It never decides what a runtime does about them, and
never runs them: the attempt's execution (`harness.scheduling.attempt`) reads these values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from harness.suggest import check_keys, did_you_mean

MCP_KINDS = ("mcp_stall", "mcp_server_death", "mcp_ignores_cancel", "mcp_progress_only")
#: The keys of each kind's table.
_KEYS = {"mcp_ignores_cancel": ("server",), "mcp_progress_only": ("server", "at_ms", "every_ms")}


@dataclass(frozen=True, slots=True)
class McpFault:
    kind: str  # one of MCP_KINDS
    server: str
    at_ms: int | None = None  # None for mcp_ignores_cancel
    every_ms: int | None = None  # mcp_progress_only: how often a progress notification comes

    @property
    def stalls(self) -> bool:
        """Whether the server never answers from `at_ms` on (a stall, with progress notifications or not)."""
        return self.kind in ("mcp_stall", "mcp_progress_only")

    def error_text(self) -> str:
        """The error a call of a dead server gets (the SDK's words for a closed stdio stream)."""
        return (f"MCP server {self.server!r} died at {self.at_ms} ms: connection closed "
                "(every pending call of the server failed)")

    def to_json(self) -> dict[str, Any]:
        return ({"server": self.server} | ({"at_ms": self.at_ms} if self.at_ms is not None else {})
                | ({"every_ms": self.every_ms} if self.every_ms is not None else {}))


def parse_mcp(data: Mapping[str, Any], tools: Mapping[str, Any],
              error: Callable[..., Exception]) -> tuple[McpFault, ...]:
    """The MCP faults of a `[faults]` table; a server no tool names is an error that lists the servers."""
    servers = sorted({s for s in (getattr(spec, "server", None) for spec in tools.values()) if s is not None})
    faults: list[McpFault] = []
    for kind in MCP_KINDS:
        if kind not in data:
            continue
        raw = data[kind]
        timed = kind != "mcp_ignores_cancel"
        keys = _KEYS.get(kind, ("server", "at_ms"))
        spelling = "{ " + ", ".join({"server": "server = NAME", "at_ms": "at_ms = T", "every_ms": "every_ms = E"}[key]
                                    for key in keys) + " }"
        for i, entry in enumerate(raw if isinstance(raw, list) else [raw]):
            field = f"{kind}[{i}]" if isinstance(raw, list) else kind
            check_keys(entry, keys, field, error)
            if not isinstance(entry, Mapping) or set(entry) != set(keys):
                raise error(f"{field} expects {spelling}, got {entry!r}")
            server = entry["server"]
            if not isinstance(server, str) or server not in servers:
                known = ", ".join(repr(s) for s in servers) if servers else "none: no tool has a `server`"
                hint = did_you_mean(server, servers) if isinstance(server, str) else ""
                raise error(f"{field}: server {server!r} is not the server of any tool ({hint}servers: {known})")
            at_ms = entry.get("at_ms")
            if timed and (not isinstance(at_ms, int) or isinstance(at_ms, bool) or at_ms < 0):
                raise error(f"{field} expects {spelling} with T >= 0, got {entry!r}")
            every_ms = entry.get("every_ms")
            if "every_ms" in keys and (not isinstance(every_ms, int) or isinstance(every_ms, bool) or every_ms <= 0):
                raise error(f"{field} expects {spelling} with E > 0 (milliseconds between two progress "
                            f"notifications), got {entry!r}")
            faults.append(McpFault(kind, server, at_ms if timed else None, every_ms))
    return tuple(faults)
