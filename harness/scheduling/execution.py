"""Execution policies: the knobs of how a runtime runs each call once a plan says it may start.

Owns the `ExecutionPolicy` value (settable in a scenario's `[execution]` table or on the CLI); the
runtime in `harness.scheduling.runtime` applies it, the one place where caps, per-call timeouts,
retries, idempotency keys, the same-signature retry limit, interrupts and the sibling-failure
policy live, so every plan-based scheduler composes with all of them. Sources: seed 003 (semaphore cap,
`asyncio.wait_for` timeout, exponential backoff, idempotency keys, retry only what is retryable),
seed 004 (same-signature retry limit, then the tool is marked unavailable), hermes-agent (interrupt:
skip pending, grace for running, poll interval), Claude Code (a failing call cancels its running
siblings). It never decides the order: plans do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

OnFailure = Literal["isolate", "cancel_siblings"]
#: When the runtime snapshots the file tree (`harness.scheduling.checkpoints`): never; as hermes-agent's
#: checkpoint manager does (the first call of a turn that writes takes the turn's snapshot, and a sibling
#: that finds the turn already checkpointed goes on at once, even while the snapshot is still copying);
#: or the same with every such sibling waiting for the snapshot to finish.
Checkpoints = Literal["none", "hermes", "wait"]
CHECKPOINT_MODES: tuple[str, ...] = ("none", "hermes", "wait")


@dataclass(frozen=True, slots=True)
class ExecutionPolicy:
    """Knobs of the runtime around each call. The defaults are a careful runtime: honour the
    scenario's caps and interrupts, no timeout, no retries, failures isolated."""

    #: Global cap on calls running at once (None: the scenario's `max_concurrency`, if any).
    max_concurrency: int | None = None
    #: Per-tool caps, on top of the scenario's.
    tool_caps: Mapping[str, int] = field(default_factory=dict)
    #: Abandon a call after this long (`asyncio.wait_for`); None: wait forever.
    timeout_ms: int | None = None
    #: Extra attempts after a failed or timed-out one (only for tools declared idempotent, unless
    #: `retry_non_idempotent`).
    retries: int = 0
    #: Backoff before retry n is backoff_ms * 2**(n-1) of virtual time (seed 003: 1 s, 2 s, ...).
    backoff_ms: int = 1000
    retry_non_idempotent: bool = False
    #: Send the same idempotency key with every attempt of a call.
    idempotency_keys: bool = True
    #: Seed 004: after this many identical failures of one tool with one argument signature, the
    #: tool is marked unavailable for the rest of the run. None: no limit.
    same_signature_limit: int | None = None
    #: hermes' batch deadline (420 s there): calls still running then are abandoned as `unknown`
    #: ("effect unknown"), calls not started are skipped. None: no deadline.
    batch_deadline_ms: int | None = None
    honour_interrupt: bool = True
    #: Report a call as `unknown` when one of its attempts was abandoned (timeout, sibling cancel)
    #: while its tool does not honour cancellation (a subprocess, a request already sent): its
    #: effect may still land. False reports a plain `timeout` / `cancelled` / the last error, as
    #: `asyncio.wait_for` does, which tells the model nothing happened (REFERENCE.md pattern 11).
    honest_outcomes: bool = True
    #: How often the runtime notices an interrupt (hermes waits in 5 s slices); 0: at once.
    poll_interval_ms: int = 0
    on_failure: OnFailure = "isolate"
    #: How long the runtime waits for the user to approve a `needs_confirmation` call (when the scenario
    #: scripts a user, `[approvals]`); no answer by then counts as a denial and the call is not run.
    approval_timeout_ms: int = 60_000
    #: Restart a call's `timeout_ms` at each of its progress notifications (MCP `notifications/progress`), as
    #: the MCP TypeScript SDK's `resetTimeoutOnProgress` does; without a total limit, a server that keeps
    #: reporting progress and never answers is waited on forever (`[faults] mcp_progress_only`).
    reset_timeout_on_progress: bool = False
    #: The MCP TypeScript SDK's `maxTotalTimeout`: however often progress restarts `timeout_ms`, a call's
    #: attempt is abandoned this long after it started (None: no total limit). Needs `timeout_ms`.
    max_total_timeout_ms: int | None = None
    #: Checkpoints before each `write_file`/`patch` and each destructive terminal command (see
    #: `Checkpoints`); a snapshot copies the tree one file at a time, `checkpoint_file_ms` each.
    checkpoints: Checkpoints = "none"
    checkpoint_file_ms: int = 20
    #: At the end of a batch in which a call failed, restore the batch's checkpoint (if it took one)
    #: and report the calls whose effects that undid as failed ("rolled back").
    rollback_on_failure: bool = False
    #: Notes 002/004 (escalation to a person): a call of a tool not declared idempotent that timed out
    #: is not retried blindly; the runtime hands it to the scripted user (`[approvals]`) and runs it
    #: again only if they approve. Without a scripted user nobody can decide, so it is not retried.
    escalate_timeouts: bool = False

    def __post_init__(self) -> None:
        if self.on_failure not in ("isolate", "cancel_siblings"):
            raise ValueError(f"on_failure must be 'isolate' or 'cancel_siblings', got {self.on_failure!r}")
        if self.checkpoints not in CHECKPOINT_MODES:
            raise ValueError(f"checkpoints must be one of {', '.join(CHECKPOINT_MODES)}, got {self.checkpoints!r}")
        for name in ("retries", "backoff_ms", "poll_interval_ms", "checkpoint_file_ms"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        if self.timeout_ms is not None and self.timeout_ms <= 0:
            raise ValueError("timeout_ms must be positive")
        if self.max_total_timeout_ms is not None:
            if self.max_total_timeout_ms <= 0:
                raise ValueError("max_total_timeout_ms must be positive")
            if self.timeout_ms is None:
                raise ValueError("max_total_timeout_ms needs timeout_ms (the limit progress restarts)")
        if self.approval_timeout_ms <= 0:
            raise ValueError("approval_timeout_ms must be positive")
        if self.batch_deadline_ms is not None and self.batch_deadline_ms <= 0:
            raise ValueError("batch_deadline_ms must be positive")
        if self.max_concurrency is not None and self.max_concurrency <= 0:
            raise ValueError("max_concurrency must be a positive integer")
        if self.same_signature_limit is not None and self.same_signature_limit < 0:
            raise ValueError("same_signature_limit must be >= 0")
        for tool, cap in self.tool_caps.items():
            if not isinstance(cap, int) or isinstance(cap, bool) or cap <= 0:
                raise ValueError(f"tool_caps.{tool} must be a positive integer, got {cap!r}")

    def merged(self, **changes: Any) -> ExecutionPolicy:
        """A copy with the given fields changed; None values are ignored."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> ExecutionPolicy:
        """Build from a scenario's `[execution]` table; raises ValueError naming the bad key."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown key {unknown[0]!r}; expected one of {', '.join(sorted(known))}")
        kinds = {"max_concurrency": int, "timeout_ms": int, "batch_deadline_ms": int, "retries": int, "backoff_ms": int,
                 "same_signature_limit": int, "poll_interval_ms": int, "retry_non_idempotent": bool,
                 "idempotency_keys": bool, "honour_interrupt": bool, "honest_outcomes": bool, "on_failure": str,
                 "tool_caps": dict, "approval_timeout_ms": int, "checkpoints": str, "checkpoint_file_ms": int,
                 "rollback_on_failure": bool, "escalate_timeouts": bool, "reset_timeout_on_progress": bool,
                 "max_total_timeout_ms": int}
        for key, value in data.items():
            kind = kinds[key]
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise ValueError(f"{key} must be {kind.__name__}, got {value!r}")
        return cls(**dict(data))

