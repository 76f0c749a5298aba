"""What a tool is: declared metadata a scheduler may read, and behaviour the world really sees.

Owns `ToolSpec`, its two halves and the `ToolIO` a behaviour acts through. The halves are kept
apart on purpose: a scheduler is fooled exactly when they disagree, and scenarios make tools lie by
overriding one half only. A behaviour is a generator: it acts on the world through `ToolIO`, and
`yield f` waits until fraction `f` (0..1) of the attempt's latency has passed, so touch points sit
at definite virtual times (`write_file` truncates at 0.0 and writes at 1.0). This module never
advances time or picks latencies; the executor does.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from harness.faults.latency import Fixed, LatencyModel
from harness.model import JSONValue
from harness.tools.hints import McpHints
from harness.tools.params import Parameters
from harness.world.ledger import LedgerEntry
from harness.world.paths import absolute_path
from harness.world.state import MEMO_CHARS, small_touch_digest, touch_digest
from harness.world.world import World

Args = Mapping[str, Any]


#: Touch operations that change the world; every other operation (read, stat, list, dedup) observes.
MUTATING_OPS = frozenset({"write", "truncate", "append", "remove", "mkdir"})


class SideEffect(enum.StrEnum):
    NONE = "none"
    LOCAL = "local"  # changes the filesystem or session of this machine
    EXTERNAL = "external"  # changes something outside (a ticket, a message, a payment)


class ToolError(Exception):
    """The tool failed the way a real one reports failure (the model sees the message)."""


@dataclass(frozen=True, slots=True)
class ResourceKeys:
    """Declared resource keys, computed from the arguments as data (so scenarios can override it).

    Each argument named in `path_args` that is present yields `file:<absolute path>` (resolved
    against the cwd a planner sees, `~` expanded, no symlink resolution); `default_path` stands in
    when none is given; `fixed` keys are always declared (e.g. `terminal:session`). `templates` are
    keys over the arguments, such as `"db:{table}"` or `"file:{path}"` (a `file:` key is made
    absolute the same way); a template naming an argument the call lacks (or gives as a non-string)
    declares nothing.
    """

    path_args: tuple[str, ...] = ()
    default_path: str | None = None
    fixed: tuple[str, ...] = ()
    templates: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.path_args:
            data["path_args"] = list(self.path_args)
        if self.default_path is not None:
            data["default_path"] = self.default_path
        if self.fixed:
            data["fixed"] = list(self.fixed)
        if self.templates:
            data["templates"] = list(self.templates)
        return data

    def compute(self, args: Args | None, cwd: str, home: str = "/home/user",
                users: Mapping[str, str] | None = None) -> tuple[str, ...]:
        keys: list[str] = []
        found = False
        for name in self.path_args:
            value = (args or {}).get(name)
            if isinstance(value, str) and value:
                keys.append("file:" + absolute_path(value, cwd, home, users))
                found = True
        if not found and self.default_path is not None:
            keys.append("file:" + absolute_path(self.default_path, cwd, home, users))
        keys.extend(self.fixed)
        for template in self.templates:
            key = _render_key(template, args or {})
            if key is not None:
                kind, _, rest = key.partition(":")
                keys.append(f"file:{absolute_path(rest, cwd, home, users)}" if kind == "file" and rest else key)
        return tuple(keys)


_KEY_REFERENCE = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _render_key(template: str, args: Args) -> str | None:
    """`template` with `{name}` replaced by the string argument `name`; None if one is missing."""
    missing = False

    def replace(match: re.Match[str]) -> str:
        nonlocal missing
        if match.group(1) is None:
            return match.group(0)[0]
        value = args.get(match.group(1))
        if isinstance(value, bool) or not isinstance(value, str | int | float) or value == "":
            missing = True
            return ""
        return str(value)

    key = _KEY_REFERENCE.sub(replace, template)
    return None if missing else key


@dataclass(frozen=True, slots=True)
class Declared:
    """What the tool claims about itself; the only half a scheduler may look at."""

    read_only: bool
    side_effect: SideEffect = SideEffect.NONE
    idempotent: bool = True
    interactive: bool = False
    needs_confirmation: bool = False
    honours_cancel: bool = True
    exclusive: bool = False
    category: str = "default"
    resource_keys: ResourceKeys = field(default_factory=ResourceKeys)
    #: The MCP annotations the tool's server gave (None: not an MCP tool), kept as given: absent hints stay absent.
    hints: McpHints | None = None

    def to_json(self) -> dict[str, Any]:
        data = {
            "read_only": self.read_only,
            "side_effect": self.side_effect.value,
            "idempotent": self.idempotent,
            "interactive": self.interactive,
            "needs_confirmation": self.needs_confirmation,
            "honours_cancel": self.honours_cancel,
            "exclusive": self.exclusive,
            "category": self.category,
            "resource_keys": self.resource_keys.to_json(),
        }
        if self.hints is not None:  # only then: the fingerprints of tools without hints stay as they were
            data["hints"] = self.hints.to_data()
        return data


DEFAULT_LATENCY = Fixed(100)


class Detach(float):
    """What a behaviour yields to report its result now and keep running (a background process:
    `terminal(background=True)`): the call's result is `value` from this moment, while the rest of
    the behaviour goes on touching the world, its touches still the call's. As a latency fraction it
    is 0.0, so a driver that only steps a behaviour (the serial replay) passes over it; the behaviour
    must end by returning the same `value`, which is what a replay observes."""

    value: JSONValue

    def __new__(cls, value: JSONValue) -> Detach:
        marker = super().__new__(cls, 0.0)
        marker.value = value
        return marker

#: A touch observer: (operation, target, content digest or None).
TouchSink = Callable[[str, str, "str | None"], None]

Behaviour = Callable[[Args, "ToolIO"], Generator[float, None, JSONValue]]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A mock tool: name, declared metadata, real behaviour and default latency.

    `stops_on_cancel` is the behavioural truth behind `declared.honours_cancel`: when False, a
    cancelled or timed-out call keeps running and its effects still land. `parameters`: the
    arguments it takes (`harness.tools.params`), which a scenario's calls are checked against when it
    loads; None: not known, not checked. `file_lock`: the tool holds
    an exclusive lock (flock) on every file its resource keys name for the whole call, so two calls
    locking one file run one after the other whoever scheduled them (seed 004's fix for tasks writing
    one report file). `sync`: the real tool is a plain function (blocking I/O such as `requests.get`),
    not a coroutine function: a bridged asyncio runtime that calls it on its event loop blocks the
    loop for the whole call. `blocking_ms`: synchronous work (CPU-bound, a blocking client) the tool
    does on its caller's thread before its call begins, sync or not: on an event loop it holds the loop.
    Both only matter to bridged runtimes (`harness.bridges.asyncio`).
    """

    name: str
    description: str
    declared: Declared
    behaviour: Behaviour
    latency: LatencyModel = DEFAULT_LATENCY
    stops_on_cancel: bool = True
    file_lock: bool = False
    #: The call runs a subagent of the crew to the end of its task (see `harness.agent.delegate`).
    delegates: bool = False
    parameters: Parameters | None = None
    sync: bool = False
    blocking_ms: int = 0
    #: The MCP server the tool comes from (its `serverInfo` name), which `[faults]` MCP faults name; None: not said.
    server: str | None = None
    #: Options a scenario chose for a tool of the catalogue (`harness.tools.options`), sorted; () for its defaults.
    options: tuple[tuple[str, Any], ...] = ()

    def with_declared(self, **changes: Any) -> ToolSpec:
        return replace(self, declared=replace(self.declared, **changes))


class ToolIO:
    """A behaviour's only door to the world: every operation is reported as a touch.

    Paths given to the methods are raw, as in the arguments; they are resolved against the shared
    session cwd at the moment of the touch, which is how a parallel `cd` can misdirect a sibling.
    """

    __slots__ = ("_sink", "call_id", "duplicate_delivery", "idempotency_key", "torn_write", "world")

    def __init__(self, world: World, call_id: str, sink: TouchSink | None = None,
                 idempotency_key: str | None = None, *, duplicate_delivery: bool = False,
                 torn_write: bool = False) -> None:
        self.world = world
        self.call_id = call_id
        self.idempotency_key = idempotency_key
        self._sink = sink
        #: Injected faults for this attempt (see harness.faults.plan); never set by the pure semantics.
        self.duplicate_delivery = duplicate_delivery
        self.torn_write = torn_write

    def _touch(self, op: str, target: str, content: str | None = None) -> None:
        if self._sink is not None:
            self._sink(op, target, None if content is None
                       else small_touch_digest(content) if len(content) <= MEMO_CHARS else touch_digest(content))

    def _file_touch(self, op: str, path: str, content: str | None = None) -> None:
        """A touch of a file, by identity: aliases of one file (symlink, hard link, case) are one
        target; the spelling used goes into the trace as `as` when it differs."""
        if self._sink is not None:
            identity = self.world.canonical(path)
            target = identity if identity == path else f"{identity}\x00{path}"
            self._touch(op, target, content)

    def path(self, raw: str) -> str:
        # Resolving a relative path reads the shared cwd: a sibling's `cd` can change the answer,
        # so it is a touch like any other.
        if not raw.startswith(("/", "~")):
            self._touch("read", "session:cwd", self.world.cwd)
        return self.world.absolute(raw)

    def read(self, raw: str) -> str:
        path = self.path(raw)
        try:
            text = self.world.read_text(path)
        except Exception:
            self._file_touch("read", path)
            raise
        self._file_touch("read", path, text)
        return text

    def exists(self, raw: str) -> bool:
        path = self.path(raw)
        self._file_touch("stat", path)
        return self.world.exists(path)

    def write(self, raw: str, text: str) -> None:
        path = self.path(raw)
        self.world.write_text(path, text)
        self._file_touch("write", path, text)

    def write_atomic(self, raw: str, text: str) -> None:
        """A write that renames a temporary file over the target: a new file, hard links broken."""
        path = self.path(raw)
        self.world.replace_text(path, text)
        self._file_touch("write", path, text)

    def write_resolved(self, raw: str, text: str) -> None:
        """hermes' write: the path's symlinks resolved (`Path.resolve`), then a temporary file renamed over
        the file they reach: a symlink keeps pointing at the new file, other hard links keep the old."""
        path = self.path(raw)
        self.world.replace_text(self.world.realpath(path), text)
        self._file_touch("write", path, text)

    def realpath(self, raw: str) -> str:
        """The absolute path with symlinks resolved (hermes' `Path.resolve()`): what its read cache keys by."""
        return self.world.realpath(self.path(raw))

    def mtime(self, raw: str, *, touch: bool = True) -> float:
        """`os.path.getmtime`; a `stat` touch unless `touch` is False (a check whose outcome the call
        reports by another touch)."""
        path = self.path(raw)
        if touch:
            self._file_touch("stat", path)
        return self.world.mtime(path)

    def cached(self, raw: str, digest: str) -> None:
        """A read answered from a cache: the call observes, as of now, the content whose digest the cache
        holds (a `cached` touch), without reading the file."""
        if self._sink is not None:
            path = self.path(raw)
            identity = self.world.canonical(path)
            self._sink("cached", identity if identity == path else f"{identity}\x00{path}", digest)

    def append(self, raw: str, text: str) -> None:
        """An `O_APPEND` write: the text lands after whatever the file holds at that moment (created if
        missing); no read of the old content is observed, so two appends never lose each other."""
        path = self.path(raw)
        self.world.append_text(path, text)
        self._file_touch("write", path, self.world.read_text(path))

    def truncate(self, raw: str) -> None:
        path = self.path(raw)
        self.world.write_text(path, "")
        self._file_touch("truncate", path, "")

    def remove(self, raw: str) -> None:
        path = self.path(raw)
        self._file_touch("remove", path)
        self.world.remove(path)

    def rename(self, raw_source: str, raw_target: str) -> None:
        """Move a name: the source's name goes away and the target now holds its content."""
        source, target = self.path(raw_source), self.path(raw_target)
        self._file_touch("remove", source)
        self.world.rename(source, target)
        self._file_touch("write", target, self.world.read_text(target) if self.world.exists(target)
                         and not self.world.is_dir(target) else None)

    def make_dir(self, raw: str) -> None:
        path = self.path(raw)
        self.world.make_dir(path)
        self._file_touch("mkdir", path)

    def list_files(self, raw: str) -> list[str]:
        path = self.path(raw)
        files = self.world.list_files(path)
        self._file_touch("list", path)
        return files

    def read_resolved(self, path: str) -> str:
        """Read an absolute path that a listing returned."""
        text = self.world.read_text(path)
        self._file_touch("read", path, text)
        return text

    def get_cwd(self) -> str:
        self._touch("read", "session:cwd", self.world.cwd)
        return self.world.cwd

    def set_cwd(self, raw: str) -> None:
        path = self.path(raw)
        if not self.world.is_dir(path):
            raise ToolError(f"cd: no such directory: {raw}")
        self.world.cwd = path
        self._touch("write", "session:cwd", path)

    def set_env(self, name: str, value: str) -> None:
        self.world.env[name] = value
        self._touch("write", f"session:env:{name}", value)

    def get_env(self, name: str) -> str | None:
        value = self.world.env.get(name)
        self._touch("read", f"session:env:{name}", value)
        return value

    def ledger_append(self, ledger: str, payload: JSONValue, key: str | None = None) -> tuple[LedgerEntry, bool]:
        entry, deduplicated = self.world.ledger(ledger).append(self.call_id, payload, key)
        # A deduplicated append changes nothing: it is an observation, not an effect.
        self._touch("dedup" if deduplicated else "append", f"ledger:{ledger}", entry.entry_id)
        if self.duplicate_delivery:  # the transport delivered the request twice
            again, repeated = self.world.ledger(ledger).append(self.call_id, payload, key)
            self._touch("dedup" if repeated else "append", f"ledger:{ledger}", again.entry_id)
        return entry, deduplicated


def require_str(args: Args, name: str) -> str:
    value = args.get(name)
    if not isinstance(value, str):
        raise ToolError(f"missing or non-string argument {name!r}")
    return value
