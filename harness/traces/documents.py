"""The JSON documents of one trace file, whatever format they hold.

Owns how a file becomes documents: a `.jsonl` file is one document per line, read one line at a time
(its size does not matter); a `.json` file is one document (pretty-printed or not), read whole, or,
when it does not parse as one, one document per line (the OpenTelemetry collector's file exporter
writes JSON lines into a `.json` file). Each document comes with where it was (`line N`, or `""` for a
whole file), for messages. It never knows a trace format's fields (`harness.traces.formats` does).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from harness.traces.records import TraceError

Progress = Callable[[int], None]


def documents(path: Path, progress: Progress | None = None) -> Iterator[tuple[str, Any]]:
    """`(where, document)` for each JSON document of the file at `path`, in file order; `progress` is
    told how many bytes each step consumed. An empty file has none."""
    file = str(path)
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise TraceError(file, "", "", "a readable file", exc.strerror or str(exc), has_got=True) from None
    with handle:
        if path.suffix.lower() != ".jsonl":
            data = handle.read()
            if progress is not None:
                progress(len(data))
            if not data.strip():
                return
            try:
                yield "", orjson.loads(data)
                return
            except orjson.JSONDecodeError:
                pass
            lines: Iterator[bytes] = iter(data.splitlines(keepends=True))  # the file exporter's JSON lines
        else:
            lines = iter(handle)
        for number, line in enumerate(lines, 1):
            if progress is not None:
                progress(len(line))
            if not line.strip():
                continue
            try:
                document = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise TraceError(file, f"line {number}", "", "one JSON document per line",
                                 f"invalid JSON ({exc})") from None
            yield f"line {number}", document
