"""`hermes_gate`: hermes-agent's all-or-nothing batch gate (until mid-2026; seeds 000 and 001).

Rule, exactly as `_should_parallelize_tool_batch`: fewer than 2 calls, or any `clarify` → serial;
arguments that fail `json.loads` or are not an object → serial; `read_file`/`write_file`/`patch`
reserve `args["path"]` (expanduser + abspath against the *process* cwd; a missing path → serial)
and any `Path.parts` prefix overlap with an earlier reserved path → serial (reads overlap reads:
deliberately conservative); every other tool must be on the safe list, else serial. A parallel
batch runs on 8 worker threads; results in model order.

Known weaknesses it keeps: the process cwd is not the terminal's; no symlink, hard-link or case
resolution; readers without a path scope (`search_files`, `vision_analyze`) never conflict;
everything unknown (`terminal`, even `ls`) serialises the whole batch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import PurePosixPath

from harness.bridges.planners.adapters import OpenAIToolCall, openai_tool_calls
from harness.model import Batch
from harness.policies.hermes_paths import (
    MAX_WORKERS,
    NEVER_PARALLEL_TOOLS,
    PARALLEL_SAFE_TOOLS,
    PATH_SCOPED_TOOLS,
    abspath_against,
    paths_overlap,
)
from harness.scheduling.context import SchedulerContext
from harness.scheduling.plan import Plan, PlanScheduler


def should_parallelize(tool_calls: list[OpenAIToolCall], cwd: str = "/", home: str = "/home/user",
                       users: Mapping[str, str] | None = None) -> bool:
    """The gate, over the OpenAI `tool_calls` shape."""
    if len(tool_calls) <= 1:
        return False
    if any(tc.function.name in NEVER_PARALLEL_TOOLS for tc in tool_calls):
        return False
    reserved: list[PurePosixPath] = []
    for tool_call in tool_calls:
        name = tool_call.function.name
        try:
            args = json.loads(tool_call.function.arguments)
        except Exception:
            return False
        if not isinstance(args, dict):
            return False
        if name in PATH_SCOPED_TOOLS:
            raw = args.get("path")
            if not isinstance(raw, str) or not raw.strip():
                return False
            path = PurePosixPath(abspath_against(raw, cwd, home, users))
            if any(paths_overlap(path, other) for other in reserved):
                return False
            reserved.append(path)
            continue
        if name not in PARALLEL_SAFE_TOOLS:
            return False
    return True


class HermesGate(PlanScheduler):
    name = "hermes_gate"
    description = "all-or-nothing gate: safe list + path-prefix overlap, else the whole batch serial"
    source = "hermes-agent until mid-2026 (seeds 000, 001)"

    def plan(self, batch: Batch, ctx: SchedulerContext) -> Plan:
        if should_parallelize(openai_tool_calls(batch), ctx.process_cwd, ctx.home, ctx.users):
            return Plan.parallel(batch, cap=MAX_WORKERS, summary="gate passed: parallel on 8 workers")
        return Plan.serial(batch, summary="gate refused: serial")
