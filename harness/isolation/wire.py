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
import io
import os
import pickle
import struct
from collections.abc import Mapping
from typing import Any

from harness.run.result import RunResult
from harness.scenario.spec import Scenario
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
    """`message` as one frame (the parent's requests and the child's answers alike)."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(data)) + data


def write_frame(fd: int, message: Any) -> None:
    """Write one whole frame to a blocking file descriptor (the child's side)."""
    view = memoryview(frame(message))
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


class _ValuesOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if module == "builtins" and name in _BUILTINS:
            return super().find_class(module, name)
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
        world = World.from_state(data["final"])
        source = sent if data["source_is_sent"] else None
        return RunResult(scenario=scenario, world=world, source=source, **fields)
    except WireError:
        raise
    except Exception as exc:
        raise WireError(f"a run's data of the wrong shape ({type(exc).__name__}: {exc})") from None
