"""Which trace format a file holds, and its records: OTLP JSON, openai-agents' export or LangSmith runs.

Owns the detection: a file's first JSON document decides its format (`resourceSpans`: OTLP JSON; an
item with `"object": "trace.span"` or `"trace"`, a list of them or `{"data": [...]}`: openai-agents;
a run with a `run_type`, a list of them or `{"runs": [...]}`: LangSmith), and every later document of
the file is read as that format (one that is not is malformed, named by its line). A file whose
first document is none of them is malformed, and the message lists the three. It never groups records
into turns and never knows a format's fields beyond what tells them apart.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.traces.agents_sdk import agents_records, is_agents_export
from harness.traces.documents import Progress, documents
from harness.traces.langsmith import is_langsmith_export, langsmith_records
from harness.traces.otlp import is_otlp, otlp_records
from harness.traces.records import SpanRecord, TraceError

#: Format names, as `detect` gives them and messages say them.
OTLP, AGENTS, LANGSMITH = "OTLP JSON", "openai-agents", "LangSmith"
_EXPECTED = ("a trace export: OTLP JSON (an object with resourceSpans), openai-agents' exported items (objects "
             "with \"object\": \"trace.span\", as a list, one per line or {\"data\": [...]}) or LangSmith runs "
             "(objects with a run_type, as a list, one per line or {\"runs\": [...]})")


def detect(document: Any) -> str | None:
    """The format `document` is meant as, or None."""
    if is_otlp(document):
        return OTLP
    if is_agents_export(document):
        return AGENTS
    if is_langsmith_export(document):
        return LANGSMITH
    return None


def read_records(path: Path, progress: Progress | None = None) -> Iterator[SpanRecord]:
    """The tool-call and model-call records of the trace file at `path`, whichever format it holds."""
    file = str(path)
    located = documents(path, progress)
    first = next(located, None)
    if first is None:
        return
    kind = detect(first[1])
    if kind is None:
        if isinstance(first[1], dict | list) and not first[1]:
            return  # an empty object or list: no spans, in any format
        raise TraceError(file, first[0], "", _EXPECTED, first[1])
    rest = itertools.chain([first], located)
    if kind == LANGSMITH:
        yield from langsmith_records(rest, file)
        return
    for line, document in rest:
        if kind == OTLP:
            yield from otlp_records(document, file, line)
        else:
            if not is_agents_export(document):
                raise TraceError(file, line, "", f"an {AGENTS} item, as the file's first document is", document)
            yield from agents_records(document, file, line)
