"""The `ToolIO` an attempt hands its tool's behaviour: every touch written straight into the run's trace.

Owns `TracedIO`, a `ToolIO` whose touches become `touch` trace events stamped with the call, the
attempt and the virtual time, built here key for key as `Kernel.record` would build them (in the same
key order: the trace's bytes are sorted anyway, but equal dicts keep tests' comparisons simple). A run
has a few dozen touches per batch and this is their hot path: one call per touch, where a `ToolIO`
with a sink takes two or three. It never decides what a tool touches (the behaviour and `ToolIO` do)
and never advances time.
"""

from __future__ import annotations

from typing import Any

import simpy

from harness.tools.spec import ToolIO
from harness.world.state import MEMO_CHARS, small_touch_digest, touch_digest
from harness.world.world import World


class TracedIO(ToolIO):
    """`ToolIO` recording each touch as a trace event (`events` is the kernel's trace list)."""

    __slots__ = ("_attempt", "_env", "_events")

    def __init__(self, world: World, call_id: str, attempt: int, events: list[dict[str, Any]],
                 env: simpy.Environment, idempotency_key: str | None = None, *, duplicate_delivery: bool = False,
                 torn_write: bool = False) -> None:
        # `ToolIO` asks whether a sink listens before it works out a touch; the overrides below record
        # every touch themselves (a bound method as the sink would make each attempt's IO a cycle).
        super().__init__(world, call_id, recorded_by_the_overrides, idempotency_key,
                         duplicate_delivery=duplicate_delivery, torn_write=torn_write)
        self._attempt, self._events, self._env = attempt, events, env

    def _record(self, op: str, target: str, digest: str | None) -> None:
        """A touch with its digest already made. A target holding a NUL is `identity\\0spelling` (see
        `ToolIO._file_touch`): the spelling goes into `as`."""
        events = self._events
        event: dict[str, Any] = {"t": int(self._env._now), "seq": len(events), "ev": "touch", "call": self.call_id,
                                 "attempt": self._attempt, "op": op, "target": target}
        if digest is not None:
            event["digest"] = digest
        if "\x00" in target:
            identity, _, alias = target.partition("\x00")
            event["target"] = identity
            if alias:
                event["as"] = alias
        events.append(event)

    def cached(self, raw: str, digest: str) -> None:
        path = self.path(raw)
        identity = self.world.canonical(path)
        self._record("cached", identity if identity == path else f"{identity}\x00{path}", digest)

    def _touch(self, op: str, target: str, content: str | None = None) -> None:
        if "\x00" in target:  # the rare spelled alias: the sink splits it
            self._record(op, target, None if content is None else touch_digest(content))
            return
        events = self._events
        event: dict[str, Any] = {"t": int(self._env._now), "seq": len(events), "ev": "touch", "call": self.call_id,
                                 "attempt": self._attempt, "op": op, "target": target}
        if content is not None:
            event["digest"] = small_touch_digest(content) if len(content) <= MEMO_CHARS else touch_digest(content)
        events.append(event)

    def _file_touch(self, op: str, path: str, content: str | None = None) -> None:
        identity = self.world.canonical(path)
        if identity != path:  # an alias: the identity is the target, the spelling goes into `as`
            self._touch(op, f"{identity}\x00{path}", content)
            return
        if "\x00" in path:
            self._touch(op, path, content)
            return
        events = self._events
        event: dict[str, Any] = {"t": int(self._env._now), "seq": len(events), "ev": "touch", "call": self.call_id,
                                 "attempt": self._attempt, "op": op, "target": path}
        if content is not None:
            event["digest"] = small_touch_digest(content) if len(content) <= MEMO_CHARS else touch_digest(content)
        events.append(event)

    # -- the operations built-in tools use most, each with its touches written here (`path`'s cwd touch and
    # `_file_touch`, inlined: two or three calls less per operation). Each does what `ToolIO`'s does, touch
    # for touch (tests/unit/test_core8_traced_io.py runs both over the same worlds and compares the traces).

    def path(self, raw: str) -> str:
        world = self.world
        if not raw.startswith(_ROOTED):  # relative: resolving it reads the shared cwd (see `ToolIO.path`)
            cwd = world.cwd
            events = self._events
            events.append({"t": int(self._env._now), "seq": len(events), "ev": "touch", "call": self.call_id,
                           "attempt": self._attempt, "op": "read", "target": "session:cwd",
                           "digest": small_touch_digest(cwd) if len(cwd) <= MEMO_CHARS else touch_digest(cwd)})
        return world.absolute(raw)

    def read(self, raw: str) -> str:
        path = self.path(raw)
        try:
            return self.read_resolved(path)
        except Exception:  # the file could not be read: the touch says which path was tried
            self._file_touch("read", path)
            raise

    def read_resolved(self, path: str) -> str:
        world = self.world
        text = world.read_text(path)
        identity = world.canonical(path)
        if identity != path or "\x00" in path:  # an alias, or a spelling the sink splits: `_file_touch`'s way
            self._touch("read", path if identity == path else f"{identity}\x00{path}", text)
            return text
        events = self._events
        events.append({"t": int(self._env._now), "seq": len(events), "ev": "touch", "call": self.call_id,
                       "attempt": self._attempt, "op": "read", "target": path,
                       "digest": small_touch_digest(text) if len(text) <= MEMO_CHARS else touch_digest(text)})
        return text


#: What `ToolIO.path` takes as not relative to the cwd.
_ROOTED = ("/", "~")


def recorded_by_the_overrides(op: str, target: str, digest: str | None) -> None:
    """`TracedIO`'s sink, which is never called: its overrides record every touch (an attempt that makes its
    `TracedIO` without `__init__`, `harness.scheduling.attempt`, sets it too)."""
    raise AssertionError(f"a ToolIO method bypassed TracedIO's touch recording ({op} {target})")
