"""`mcp_hints`: the scheduling an agent runtime derives from its MCP tools' hints.

Rule: walk the batch in model order; maximal runs of consecutive calls whose tool says
`readOnlyHint = true` run together; any other call runs alone, in model order, between them. An absent
hint is read as the MCP spec says a client must: not read-only. A tool that is not an MCP tool (no
hints) counts as read-only only if declared so. Results in model order.

Which runtime behaviour it models: the clients that map `readOnlyHint` to "safe to run concurrently"
(Claude Code's concurrency-safe tools and the openai-agents/pydantic-ai MCP integrations that expose the
annotations) and trust the server's word for it. A server whose read-only tool writes makes this policy
race; `harness.oracles.hints` names the lie (`hint-violated`) beside the race it caused.
"""

from __future__ import annotations

from harness.model import Batch, ToolCall
from harness.scheduling.context import SchedulerContext
from harness.scheduling.execution import ExecutionPolicy
from harness.scheduling.plan import Plan, PlanScheduler

#: How long an MCP client waits for a call before it gives up on it (the SDK's read timeout is the
#: model; 10 s of virtual time) when the scenario sets no timeout.
CLIENT_TIMEOUT_MS = 10_000
#: Extra attempts `mcp_hints_retry` makes of an idempotent tool's call.
RETRIES = 2


def hinted_additive(call: ToolCall, ctx: SchedulerContext) -> bool:
    """Whether the call's tool says it makes only additive updates: `readOnlyHint = false` (or absent) with
    `destructiveHint = false` given (absent: destructive, as the spec says)."""
    declared = ctx.declared(call)
    hints = declared.hints if declared is not None else None
    return hints is not None and hints.destructive is False and not hints.is_read_only


def hinted_read_only(call: ToolCall, ctx: SchedulerContext) -> bool:
    """Whether the call's tool says it is read-only: its MCP hint (absent: no), else its declared metadata."""
    declared = ctx.declared(call)
    if declared is None:
        return False
    return declared.hints.is_read_only if declared.hints is not None else declared.read_only


class McpHints(PlanScheduler):
    name = "mcp_hints"
    description = "consecutive readOnlyHint calls together, every other call alone in model order"
    source = "MCP tool annotations (readOnlyHint), as hint-trusting clients use them"

    def plan(self, batch: Batch, ctx: SchedulerContext) -> Plan:
        segments: list[list[ToolCall]] = []
        for call in batch:
            if self.together(call, ctx) and segments and all(self.together(c, ctx) for c in segments[-1]):
                segments[-1].append(call)
            else:
                segments.append([call])
        return Plan.segments(batch, segments)

    def together(self, call: ToolCall, ctx: SchedulerContext) -> bool:
        """Whether the call may run beside its neighbours that may too."""
        return hinted_read_only(call, ctx)


class McpHintsRetry(McpHints):
    """`mcp_hints_retry`: `mcp_hints`, and a call that times out (or fails) is retried only if its tool says
    `idempotentHint = true` (or is read-only); never otherwise.

    Which runtime behaviour it models: an MCP client with a per-call timeout (the scenario's, else 10 s) that
    retries what the server calls idempotent, up to twice, with backoff. MCP carries no idempotency key,
    so a retry is the same request again: a tool that is idempotent only in its hint applies twice
    (`hint-violated`, and `duplicate-effect` for an external effect)."""

    name = "mcp_hints_retry"
    description = "mcp_hints, retrying timed-out calls of idempotentHint tools (no idempotency key)"
    source = "MCP tool annotations (idempotentHint), as retrying clients use them"

    def execution_for(self, ctx: SchedulerContext) -> ExecutionPolicy:
        execution = super().execution_for(ctx)
        return execution.merged(timeout_ms=execution.timeout_ms or CLIENT_TIMEOUT_MS,
                                retries=max(execution.retries, RETRIES), retry_non_idempotent=False,
                                idempotency_keys=False)


class McpHintsAdditive(McpHints):
    """`mcp_hints_additive`: `mcp_hints`, and a call whose tool says `destructiveHint = false` (only additive
    updates: it appends, adds records, creates files, and never overwrites or deletes) runs beside its
    read-only and additive neighbours too.

    Which runtime behaviour it models: a rule a runtime writes when it reads the spec's "only additive updates"
    as "cannot clobber what another call reads or writes"; no named runtime is known to schedule by
    `destructiveHint` (clients use it to ask for confirmation). Not a built-in name: give it as
    `harness.policies.mcp_hints:McpHintsAdditive`. A tool whose hint lies, overwriting a file a neighbour
    touches, is what `harness.oracles.hints` names (`hint-violated`)."""

    name = "mcp_hints_additive"
    description = "mcp_hints, with destructiveHint=false calls beside read-only and other additive ones"
    source = "MCP tool annotations (readOnlyHint, destructiveHint), as a hint-trusting runtime might use them"

    def together(self, call: ToolCall, ctx: SchedulerContext) -> bool:
        return hinted_read_only(call, ctx) or hinted_additive(call, ctx)
