"""hermes-agent's dangerous-command guard (seed 001, `tools/approval.py`): which patterns a terminal
command matches, each by the key hermes files its approval under.

Owns `PATTERNS` (a subset of hermes' `DANGEROUS_PATTERNS`, key and regular expression, in hermes' order)
and `dangerous_patterns(call)`. With `[approvals] guard = "hermes"` a terminal call needs the user's
approval exactly when its command matches one; an answer of `session` approves it and every later
command of the run whose patterns were all approved so (hermes' `approve_session`), which is not asked
again (`SchedulerContext.approval`). It never asks and never judges: the context and the `approvals`
oracle do.
"""

from __future__ import annotations

import json
import re

from harness.model import ToolCall

#: (key, pattern): the key is the description hermes shows and caches a session approval under.
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((key, re.compile(regex, re.IGNORECASE)) for key, regex in (
    ("delete in root path", r"\brm\s+(?:-\S*\s+)*/(?:\s|$)"),
    ("recursive delete", r"\brm\s+(?:-\S*\s+)*-[a-zA-Z]*[rR]|\brm\s+(?:\S+\s+)*--recursive\b"),
    ("world-writable permissions", r"\bchmod\s+(?:-\S*\s+)*(?:777|666|o\+w|a\+w)\b"),
    ("recursive chown to root", r"\bchown\s+(?:-\S*\s+)*-[a-zA-Z]*R\S*\s+root"),
    ("format filesystem", r"\bmkfs\b"),
    ("disk copy", r"\bdd\s+.*\bif="),
    ("write to block device", r">\s*/dev/sd"),
    ("SQL DROP", r"\bDROP\s+(?:TABLE|DATABASE)\b"),
    ("SQL DELETE without WHERE", r"\bDELETE\s+FROM\b(?!.*\bWHERE\b)"),
    ("overwrite system config", r">\s*/etc/"),
    ("stop/disable system service", r"\bsystemctl\s+(?:stop|disable|mask)\b"),
    ("kill all processes", r"\bkill\s+-9\s+-1\b"),
    ("pipe remote content to shell", r"\b(?:curl|wget)\b.*\|\s*(?:ba)?sh\b"),
    ("git reset --hard", r"\bgit\s+reset\s+--hard\b"),
    ("git force push", r"\bgit\s+push\b.*(?:--force\b|-f\b)"),
    ("git clean with force", r"\bgit\s+clean\s+-\S*f"),
))
KEYS: tuple[str, ...] = tuple(key for key, _ in PATTERNS)


def dangerous_patterns(call: ToolCall) -> tuple[str, ...]:
    """The keys of the patterns a `terminal` call's command matches (none for another tool, or
    arguments that are not an object with a string `command`)."""
    if call.name != "terminal":
        return ()
    try:
        args = json.loads(call.arguments)
    except (TypeError, ValueError):
        return ()
    command = args.get("command") if isinstance(args, dict) else None
    if not isinstance(command, str):
        return ()
    return tuple(key for key, pattern in PATTERNS if pattern.search(command))
