"""Fault plans: the faults of a scenario that are not about one tool's latency or failures, as data.

Owns the `[faults]` table of a scenario and the per-call draws:
- `duplicate_delivery = { rate = R }`: an external request is delivered twice (a transport-level
  retry); only an idempotency key keeps the second from landing;
- `torn_writes = { rate = R }`: `write_file` writes its content in two halves, the second half later,
  so a reader in between sees a partial file;
- `rate_limit = { tool = NAME, limit = N, window_ms = W }`: a call that starts when N calls of the
  tool already started in the last W ms fails at once with 429 Too Many Requests;
- `crash = { at_ms = T }`: the runtime process dies at T: the turn gets no results, later turns never
  come, calls in flight stop (an external request already sent still lands);
- MCP server faults, for tools whose `server` is S (harness.faults.mcp): `mcp_stall = { server = S, at_ms = T }`,
  `mcp_server_death = { server = S, at_ms = T }`, `mcp_ignores_cancel = { server = S }`,
  `mcp_progress_only = { server = S, at_ms = T, every_ms = E }`.
Draws come from `fault/<kind>/<call id>/<attempt>`, so a call meets the same faults under every
scheduler. It never decides what a runtime does about them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.faults.mcp import MCP_KINDS, McpFault, parse_mcp
from harness.sim.streams import RandomStreams
from harness.suggest import SpecError, check_keys


class FaultSpecError(SpecError):
    """A `[faults]` table is wrong; the message says what was expected, `field` which key, if one."""


@dataclass(frozen=True, slots=True)
class RateLimit:
    tool: str
    limit: int
    window_ms: int


@dataclass(frozen=True, slots=True)
class FaultPlan:
    duplicate_delivery: float = 0.0
    torn_writes: float = 0.0
    rate_limits: tuple[RateLimit, ...] = ()
    crash_at_ms: int | None = None
    mcp: tuple[McpFault, ...] = ()

    def mcp_cutoff(self, server: str | None) -> McpFault | None:
        """The earliest stall (with progress or not) or death of `server` (None: it never stalls or dies)."""
        if server is None or not self.mcp:
            return None
        cut = [f for f in self.mcp if f.server == server and f.at_ms is not None]
        return min(cut, key=lambda f: (f.at_ms, f.kind)) if cut else None

    def ignores_cancel(self, server: str | None) -> bool:
        return server is not None and any(f.server == server and f.kind == "mcp_ignores_cancel" for f in self.mcp)

    def hits(self, kind: str, streams: RandomStreams, call_id: str, attempt: int) -> bool:
        rate = {"duplicate_delivery": self.duplicate_delivery, "torn_writes": self.torn_writes}[kind]
        return rate > 0 and streams.stream(f"fault/{kind}", call_id, attempt).random() < rate

    def uncertain(self, kind: str) -> bool:
        """Whether an attempt may meet fault `kind` or not, depending on the draw."""
        rate = {"duplicate_delivery": self.duplicate_delivery, "torn_writes": self.torn_writes}[kind]
        return 0 < rate < 1

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.duplicate_delivery:
            data["duplicate_delivery"] = {"rate": self.duplicate_delivery}
        if self.torn_writes:
            data["torn_writes"] = {"rate": self.torn_writes}
        if self.rate_limits:
            data["rate_limit"] = [{"tool": r.tool, "limit": r.limit, "window_ms": r.window_ms}
                                  for r in self.rate_limits]
        if self.crash_at_ms is not None:
            data["crash"] = {"at_ms": self.crash_at_ms}
        for kind in MCP_KINDS:
            entries = [f.to_json() for f in self.mcp if f.kind == kind]
            if entries:
                data[kind] = entries[0] if len(entries) == 1 else entries
        return data

    @property
    def empty(self) -> bool:
        return not (self.duplicate_delivery or self.torn_writes or self.rate_limits or self.crash_at_ms is not None
                    or self.mcp)


def parse_faults(data: Any, tools: Mapping[str, Any]) -> FaultPlan:
    if not isinstance(data, Mapping):
        raise FaultSpecError("a table with keys duplicate_delivery, torn_writes, rate_limit, crash, "
                             + ", ".join(MCP_KINDS))
    check_keys(data, ("duplicate_delivery", "torn_writes", "rate_limit", "crash", *MCP_KINDS), error=FaultSpecError)
    rates = {}
    for kind in ("duplicate_delivery", "torn_writes"):
        if kind in data:
            table = data[kind]
            check_keys(table, ("rate",), kind, FaultSpecError)
            rate = table.get("rate") if isinstance(table, Mapping) else None
            if not isinstance(rate, int | float) or isinstance(rate, bool) or not 0 <= rate <= 1:
                raise FaultSpecError(f"{kind} expects {{ rate = R }} with R in [0, 1], got {table!r}")
            rates[kind] = float(rate)
    limits = []
    raw = data.get("rate_limit", [])
    for i, entry in enumerate(raw if isinstance(raw, list) else [raw]):
        check_keys(entry, ("tool", "limit", "window_ms"), f"rate_limit[{i}]" if isinstance(raw, list) else "rate_limit",
                   FaultSpecError)
        if not isinstance(entry, Mapping) or set(entry) != {"tool", "limit", "window_ms"}:
            raise FaultSpecError(f"rate_limit expects {{ tool = NAME, limit = N, window_ms = W }}, got {entry!r}")
        if entry["tool"] not in tools:
            raise FaultSpecError(f"rate_limit tool {entry['tool']!r} is not a known tool")
        limit, window = entry["limit"], entry["window_ms"]
        if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (limit, window)):
            raise FaultSpecError(f"rate_limit limit and window_ms must be positive integers, got {entry!r}")
        limits.append(RateLimit(entry["tool"], limit, window))
    crash_at = None
    if "crash" in data:
        crash = data["crash"]
        check_keys(crash, ("at_ms",), "crash", FaultSpecError)
        crash_at = crash.get("at_ms") if isinstance(crash, Mapping) and set(crash) == {"at_ms"} else None
        if not isinstance(crash_at, int) or isinstance(crash_at, bool) or crash_at < 0:
            raise FaultSpecError(f"crash expects {{ at_ms = T }} with T >= 0, got {crash!r}")
    mcp = parse_mcp(data, tools, FaultSpecError)
    return FaultPlan(rates.get("duplicate_delivery", 0.0), rates.get("torn_writes", 0.0), tuple(limits), crash_at, mcp)
