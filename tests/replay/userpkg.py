"""A user's package outside the repository (`acme`: an asyncio executor whose writes to one file race,
the switch that fixes it in a helper module), and `harness` run in a fresh process as a user runs it."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers import harness_process

LOCKS_PY = '''
import asyncio

SERIALISE_WRITES = False  # the bug: two edits of one file run at once


def lock_for(locks, name):
    return locks.setdefault(name, asyncio.Lock())
'''

SCHED_PY = '''
import asyncio
import json

from harness.bridges import from_asyncio

from acme import locks


async def execute(tool_calls, tools):
    table = {}

    async def one(tc):
        args = json.loads(tc.function.arguments)
        try:
            if locks.SERIALISE_WRITES:
                async with locks.lock_for(table, args.get("path", tc.id)):
                    value = await tools[tc.function.name](**args)
            else:
                value = await tools[tc.function.name](**args)
            return {"id": tc.id, "success": True, "result": value}
        except Exception as error:
            return {"id": tc.id, "success": False, "error": str(error)}

    return await asyncio.gather(*(one(tc) for tc in tool_calls))


scheduler = from_asyncio(execute)
'''


harness = harness_process


def write_acme(root: Path) -> None:
    (root / "acme").mkdir(parents=True)
    (root / "acme" / "__init__.py").write_text("")
    (root / "acme" / "locks.py").write_text(LOCKS_PY)
    (root / "acme" / "sched.py").write_text(SCHED_PY)


def explore_acme(root: Path) -> str:
    """Write `acme` under `root/src`, let `harness explore` save the reproducer of its lost update in
    `root/saved`, and return the printed replay line."""
    write_acme(root / "src")
    found = harness("explore", "config-clobber", "--scheduler", "acme.sched:scheduler", "--seed", "3",
                    "--save-dir", "saved", cwd=root, pythonpath=root / "src")
    assert found.returncode == 1 and "FOUND lost-update" in found.stdout, found.stdout + found.stderr
    line = re.search(r"^replay: (.+)$", found.stdout, re.M)
    assert line is not None
    return line.group(1)


def fix(src: Path) -> None:
    """The fix is in the helper module, not in the module the reproducer names."""
    locks = src / "acme" / "locks.py"
    locks.write_text(locks.read_text().replace("SERIALISE_WRITES = False", "SERIALISE_WRITES = True"))


