"""A user's asyncio executor with two independent, realistic bugs, for check_scheduler's keep-going tests.

Bug 1: per-file locks keyed by the path text, so `config.yaml` and `./config.yaml` (or a symlink) are
two locks and one patch is lost. Bug 2: a retry after a timeout sends a fresh idempotency key, so a
slow ticket is created twice. `FIXED` switches either bug off, as a user's fix would.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from harness.bridges import from_asyncio

#: The bugs still in the code; a test edits this set as a user would edit the file.
BUGS = {"raw-path-locks", "key-per-attempt"}

_locks: dict[str, asyncio.Lock] = {}


def _lock(path: str) -> asyncio.Lock:
    key = path if "raw-path-locks" in BUGS else "one-lock-for-every-write"
    return _locks.setdefault(key, asyncio.Lock())


async def execute(tool_calls: Any, tools: Any) -> list[dict[str, Any]]:
    limits = tools.limits

    async def one(tc: Any) -> dict[str, Any]:
        try:
            args = json.loads(tc.function.arguments)
        except ValueError as error:
            return {"id": tc.id, "success": False, "error": str(error)}
        if not isinstance(args, dict):
            return {"id": tc.id, "success": False, "error": "arguments are not an object"}
        writes = tc.function.name in ("patch", "write_file", "write_file_atomic") and isinstance(args.get("path"), str)
        tries = 1 + (limits.retries or 0)
        for attempt in range(tries):
            key = f"{tc.id}-{attempt}" if "key-per-attempt" in BUGS else tc.id
            try:
                if writes:
                    async with _lock(args["path"]):
                        value = await _timed(tools[tc.function.name](**args, idempotency_key=key), limits.timeout_s)
                else:
                    value = await _timed(tools[tc.function.name](**args, idempotency_key=key), limits.timeout_s)
                return {"id": tc.id, "success": True, "result": value}
            except TimeoutError:
                if attempt + 1 == tries:
                    return {"id": tc.id, "success": False, "error": "timed out"}
            except Exception as error:
                return {"id": tc.id, "success": False, "error": str(error)}
        raise AssertionError("unreachable")

    return await asyncio.gather(*(one(tc) for tc in tool_calls))


async def _timed(call: Any, seconds: float | None) -> Any:
    return await (asyncio.wait_for(call, seconds) if seconds else call)


scheduler = from_asyncio(execute, name="two-bugs")
