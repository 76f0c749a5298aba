"""What crosses between the supervising parent and the isolated child: frames, and a run as data.

Owns the framing (a 4-byte length, then a pickle), what the parent agrees to unpickle from the child
(`load_from_child`: only the harness's own value classes, dataclasses and enums of a fixed list of
modules, and plain containers; never a function, a module or a class of the user's, so bytes a
hostile child writes cannot run code in the parent), and turning a `RunResult` into such data in the
child (`pack`) and back into a `RunResult` in the parent (`rebuild`). The parent's messages to the
child are ordinary pickles: the child trusts its parent. It never starts a process and never judges.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import io
import os
import pickle
import struct
import types
import typing
from collections.abc import Mapping
from typing import Any, cast

from harness.run.result import BatchRun, RunResult
from harness.scenario.spec import Scenario
from harness.world.state import WorldState
from harness.world.world import World

#: A frame larger than this from the child is refused (a child filling the parent's memory).
MAX_FRAME = 512 * 1024 * 1024
_HEADER = struct.Struct("!I")

#: Modules whose dataclasses and enums a child's data may hold: a run's values, nothing that acts.
_VALUE_MODULES = frozenset({
    "harness.model", "harness.run.result", "harness.sim.kernel", "harness.world.state", "harness.world.ledger",
    "harness.sim.arbiter", "harness.agent.runtime", "harness.diagnosis.wait", "harness.faults.latency",
    "harness.faults.failures",
})
#: Builtins a pickle names for containers that have no opcode of their own.
_BUILTINS = frozenset({"set", "frozenset", "complex", "bytearray"})


class WireError(Exception):
    """The child sent something that is not a frame of harness values (its code wrote garbage to the
    channel, or a value class outside the allowed list)."""


def frame(message: Any) -> bytes:
    """`message` as one frame (the parent's requests)."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(data)) + data


def child_frame(message: Any) -> bytes:
    """`message` as one frame of the child's: each harness dataclass as `_restore(class, values)`, which
    the parent rebuilds several times faster than a dataclass's own `__setstate__` (measured: the
    unpickling of a run went from about 2 ms to a fraction of one)."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = _dispatch_table()
    pickler.dump(message)
    data = buffer.getvalue()
    return _HEADER.pack(len(data)) + data


def write_frame(fd: int, message: Any) -> None:
    """Write one whole frame of the child's to a blocking file descriptor."""
    view = memoryview(child_frame(message))
    while view:
        written = os.write(fd, view)
        view = view[written:]


def read_exactly(fd: int, size: int) -> bytes | None:
    """`size` bytes from a blocking descriptor, or None at end of file (the child's side)."""
    chunks: list[bytes] = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> Any:
    """The next message from the parent (trusted: an ordinary pickle), or None at end of file."""
    header = read_exactly(fd, _HEADER.size)
    if header is None:
        return None
    data = read_exactly(fd, _HEADER.unpack(header)[0])
    return None if data is None else pickle.loads(data)


class FrameReader:
    """Collects the child's bytes as they arrive (non-blocking reads) and cuts them into frames."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[Any]:
        """The messages `data` completes, unpickled with `load_from_child`."""
        self._buffer += data
        messages = []
        while len(self._buffer) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self._buffer)
            if size > MAX_FRAME:
                raise WireError(f"a frame of {size} bytes (more than {MAX_FRAME})")
            if len(self._buffer) < _HEADER.size + size:
                break
            payload = bytes(self._buffer[_HEADER.size:_HEADER.size + size])
            del self._buffer[:_HEADER.size + size]
            messages.append(load_from_child(payload))
        return messages


_FIELDS: dict[type, tuple[str, ...]] = {}


def _names(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def _restore(cls: type, values: tuple[Any, ...]) -> Any:
    """A harness dataclass from its field values, as the child's `_reduce` gave them (`cls` came through
    `find_class`, so it is one of the allowed value classes)."""
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ in _VALUE_MODULES):
        raise WireError(f"cannot restore {cls!r}")
    names = _names(cls)
    if not isinstance(values, tuple) or len(values) != len(names):
        raise WireError(f"{cls.__name__} with {len(values) if isinstance(values, tuple) else '?'} values")
    instance = object.__new__(cls)
    for name, value in zip(names, values, strict=True):
        object.__setattr__(instance, name, value)
    return instance


def _reduce(value: Any) -> tuple[Any, tuple[Any, ...]]:
    return _restore, (type(value), tuple(getattr(value, name) for name in _names(type(value))))


_TABLE: dict[type, Any] = {}
_SCANNED: set[str] = set()


def _dispatch_table() -> dict[type, Any]:
    """`_reduce` for every dataclass of the value modules imported so far (one not imported yet cannot
    be in a run that exists; it is added once it is). Anything else pickles as pickle does."""
    import sys

    for module_name in _VALUE_MODULES - _SCANNED:
        module = sys.modules.get(module_name)
        if module is None:
            continue
        _SCANNED.add(module_name)
        for value in vars(module).values():
            if isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == module_name:
                _TABLE[value] = _reduce
    return _TABLE


class _ValuesOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if module == "builtins" and name in _BUILTINS:
            return super().find_class(module, name)
        if module == __name__ and name == "_restore":
            return _restore
        if module in _VALUE_MODULES and "." not in name:
            found = super().find_class(module, name)
            if isinstance(found, type) and (dataclasses.is_dataclass(found) or issubclass(found, enum.Enum)):
                return found
        raise WireError(f"the child's data names {module}.{name}, which is not a harness value class")


def load_from_child(data: bytes) -> Any:
    """Unpickle what the child sent, refusing any global but the harness's value classes."""
    try:
        return _ValuesOnly(io.BytesIO(data)).load()
    except WireError:
        raise
    except Exception as exc:  # a truncated or forged pickle: whatever the unpickler raised
        raise WireError(f"unreadable data ({type(exc).__name__}: {exc})") from None


#: RunResult fields the child sends as they are; the scenario, its source and the world go as below.
_SENT = tuple(f.name for f in dataclasses.fields(RunResult) if f.name not in ("scenario", "source", "world"))


def pack(result: RunResult, sent: Scenario) -> dict[str, Any]:
    """`result` as data: its fields but the scenario (the parent has it: `sent`), the live world (its
    final state instead) and, for a loop run, what the realized scenario changed."""
    data: dict[str, Any] = {name: getattr(result, name) for name in _SENT}
    data["agents"] = dict(result.agents)
    data["produced"] = dict(result.produced)
    data["final"] = result.final
    data["source_is_sent"] = result.source is sent
    realized = result.scenario
    if realized is sent:
        data["realized"] = None
    else:
        data["realized"] = {"batches": realized.batches, "source": realized.source,
                            "results": dict(realized.catalogue.results),
                            "call_latency": dict(realized.call_latency), "call_failures": dict(realized.call_failures),
                            "depends_on": dict(realized.depends_on),
                            "args_from": {k: dict(v) for k, v in realized.args_from.items()}}
    return data


def rebuild(data: Mapping[str, Any], sent: Scenario) -> RunResult:
    """The `RunResult` the child packed, on the scenario the parent sent (the same call as `realized`
    in harness.run.turns makes for a loop run). Raises `WireError` for data of the wrong shape."""
    try:
        fields = {name: data[name] for name in _SENT}
        realized = data["realized"]
        scenario = sent
        if realized is not None:
            scenario = dataclasses.replace(
                sent, batches=tuple(realized["batches"]), agent=None, agents=(), source=str(realized["source"]),
                catalogue=sent.catalogue.with_results(dict(realized["results"])),
                call_latency=dict(realized["call_latency"]), call_failures=dict(realized["call_failures"]),
                depends_on=dict(realized["depends_on"]),
                args_from={k: dict(v) for k, v in dict(realized["args_from"]).items()})
        final = data["final"]
        if not isinstance(final, WorldState):
            raise WireError(f"a final world that is {type(final).__name__}")
        source = sent if data["source_is_sent"] else None
        if fields["initial"] == scenario.world:  # the very state object: the world built from it is cached
            fields["initial"] = scenario.world
        result = RunResult(scenario=scenario, world=cast(World, _LazyWorld(final)), source=source, **fields)
        _typed(result, depth=2)
        final._digest.clear()  # the parent hashes the world itself (the fingerprint is its own reading)
        result.__dict__["final"] = final  # the `final` it was packed with: no world is built to read it again
        return result
    except WireError:
        raise
    except Exception as exc:
        raise WireError(f"a run's data of the wrong shape ({type(exc).__name__}: {exc})") from None


def _typed(value: Any, depth: int) -> None:
    """Raise `WireError` unless each field of the dataclass `value` holds what its annotation says
    (a class, `X | None`, `tuple[X, ...]`, a mapping), looking `depth` dataclasses deep: the oracles
    read these fields, and a field forged to another type would crash them (exit 70) instead of
    being the child's error."""
    kind: Any = type(value)
    hints = _hints(kind)
    for name, hint in hints.items():
        item = getattr(value, name)
        if not _fits(item, hint):
            raise WireError(f"{type(value).__name__}.{name} is a {type(item).__name__}, expected {hint}")
        if depth > 1:
            for part in item if isinstance(item, tuple) else (item,):
                if dataclasses.is_dataclass(part) and not isinstance(part, type) and type(part) in _DEEP:
                    _typed(part, depth - 1)


@functools.cache
def _hints(cls: Any) -> dict[str, Any]:
    return {name: hint for name, hint in typing.get_type_hints(cls).items()
            if name in {f.name for f in dataclasses.fields(cls)} and name not in ("world", "scenario", "source")}


def _fits(item: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if hint is Any:
        return True
    if origin in (types.UnionType, typing.Union):
        return any(_fits(item, option) for option in typing.get_args(hint))
    if hint is type(None):
        return item is None
    if origin is tuple:
        args = typing.get_args(hint)
        if not isinstance(item, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_fits(part, args[0]) for part in item)
        return True
    if origin is not None:  # Mapping[...], dict[...], list[...]: the container only
        return isinstance(item, origin)
    if hint is float:
        return isinstance(item, int | float) and not isinstance(item, bool)
    return isinstance(item, hint) if isinstance(hint, type) else True


#: The dataclasses whose fields are checked inside a rebuilt run (the rest are values the oracles
#: read through these).
_DEEP = {BatchRun}


class _LazyWorld:
    """The live world of a rebuilt run, built from its final state only when something reads it (two
    oracles, for some findings, and a few reports): building one costs about as much as the run."""

    def __init__(self, state: WorldState) -> None:
        self._state = state
        self._world: World | None = None

    def __getattr__(self, name: str) -> Any:
        if self._world is None:
            self._world = World.from_state(self._state)
        return getattr(self._world, name)
