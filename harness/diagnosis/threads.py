"""What each parked thread of a thread bridge waits on, read from the threads' own stacks (the
primitive it blocks in, the variable that names it in the user's code, the call it serves).

Called by the thread bridge when a run stops with threads waiting, before they are released, and by
the hang diagnosis. Reads the turnstile duck-typed: it never imports the bridge. Never raises.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from types import FrameType
from typing import Any

from harness.diagnosis.frames import call_of, global_name, name_in, stack_lines, user_at
from harness.diagnosis.origins import is_user
from harness.diagnosis.wait import Wait
from harness.model import ToolCall


def thread_waits(turnstile: Any, calls: Mapping[str, ToolCall]) -> list[Wait]:
    """What each live thread of a thread bridge's turnstile waits on, with its stack."""
    threads = list(turnstile.alive()) if hasattr(turnstile, "alive") else []
    if not threads:
        return []
    stacks = _stacks(threads)
    waits: list[Wait] = []
    for thread in threads:
        frames = stacks.get(id(thread), [])
        users = [i for i, f in enumerate(frames) if is_user(f.f_code.co_filename)]
        last_user = users[-1] if users else -1
        # The first blocking call under the user's last frame is what the thread waits in; below it
        # is only the bridge's turnstile.
        blocking_at = next((i for i in range(last_user + 1, len(frames))
                            if frames[i].f_code.co_name in _BLOCKING and "self" in frames[i].f_locals), None)
        shown = frames[:blocking_at + 1] if blocking_at is not None else frames
        user = [frames[i] for i in users]
        if blocking_at is not None:
            blocking = frames[blocking_at]
            obj = blocking.f_locals["self"]
            found = name_in(obj, user) or global_name(obj, user)
            kind = type(obj).__name__.lstrip("_").removeprefix("Bridge")
            on = f"waits in {kind}.{blocking.f_code.co_name}()" + (f" on {found[0]}" if found else "")
        else:
            on = "is parked"
        who = call_of(list(reversed(user)), calls) or f"thread {getattr(thread, 'name', '?')}"
        waits.append(Wait(who, "thread", on, user_at(frames), stack_lines(shown)))
    return waits


_BLOCKING = frozenset({"acquire", "wait", "wait_for", "get", "put", "join", "result"})


def _stacks(threads: list[Any]) -> dict[int, list[FrameType]]:
    """Each bridge thread's current stack (outermost first), found through the frame of its main: from
    the innermost frame of every OS thread, and of every thread that waits on a greenlet (`top_frame`)."""
    wanted = {id(thread): thread for thread in threads}
    stacks: dict[int, list[FrameType]] = {}
    tops = list(sys._current_frames().values())
    for thread in threads:
        top_frame = getattr(thread, "top_frame", None)
        top = top_frame() if callable(top_frame) else None
        if isinstance(top, FrameType):
            tops.append(top)
    for top in tops:
        frames: list[FrameType] = []
        frame: FrameType | None = top
        owner = None
        while frame is not None:
            frames.append(frame)
            candidate = frame.f_locals.get("self") if frame.f_code.co_name == "_main" else None
            if candidate is not None and id(candidate) in wanted:
                owner = candidate
                break
            frame = frame.f_back
        if owner is not None:
            stacks[id(owner)] = list(reversed(frames))
    return stacks

