"""The built-in sample trace: a small SYNTHETIC OTLP JSON export, made by this module, not recorded.

Owns how the sample is made, so that `harness traces import --sample` and `harness traces summary
--sample` work on a fresh machine. It imitates an agent service whose runtime runs every call of a turn
at once (the `parallel` policy: calls start in model order about a millisecond apart), with a
2-second per-call timeout, one retry after a transient error, and latencies drawn from log-normal
distributions (`TOOLS`). Its arguments name what a call touches, as a real agent's do: `read_file` and
`edit_file` a `path` out of eight source files (so one turn may read and edit one file), `send_email` a
`thread_id`, `query_db` a `kind` (`lookup` or `report`, which is four times slower), the others a query
text. The shape is the GenAI semantic conventions': per conversation an
`invoke_agent` span, under it per turn a `chat` span and then the turn's `execute_tool` spans (siblings
of the chat span that emitted them). Every draw comes from a named stream of `SEED`
(`harness.sim.streams`), so `python -m harness.traces.sample` rewrites `SAMPLE` byte for byte
(tests/traces/test_sample.py checks it). Nothing here is production data; it never reads a trace.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson

from harness.sim.streams import RandomStreams

SAMPLE = Path(__file__).resolve().parent / "data" / "sample.jsonl"
SEED = 30
CONVERSATIONS = 30
TURNS_PER_CONVERSATION = 3
TIMEOUT_MS = 2000
#: tool -> (weight in a turn's mix, median ms, sigma, transient error rate, argument pool size).
TOOLS: dict[str, tuple[int, int, float, float, int]] = {
    "web_search": (30, 800, 0.5, 0.05, 40),
    "read_file": (24, 40, 0.6, 0.0, 8),
    "edit_file": (12, 150, 0.5, 0.02, 8),
    "query_db": (22, 250, 0.4, 0.02, 25),  # a `report` query takes 4 times a `lookup`'s median
    "run_tests": (4, 1400, 0.3, 0.1, 2),
    "send_email": (3, 250, 0.2, 0.0, 50),  # rare: too few samples for a fit, on purpose
}
#: query_db's `kind`: (weight, factor on its median).
QUERY_KINDS = {"lookup": (2, 1.0), "report": (1, 4.0)}
_START_NS = 1_767_603_600_000_000_000  # 2026-01-05T09:00:00Z
_MS = 1_000_000


def generate(seed: int = SEED, conversations: int = CONVERSATIONS) -> bytes:
    """The sample export: one OTLP JSON document per conversation, one per line (the benchmark asks
    for more conversations than the sample has)."""
    streams = RandomStreams(seed)
    ids = streams.stream("sample/ids")
    lines = []
    for conversation in range(conversations):
        trace_id = f"{ids.getrandbits(128):032x}"
        agent_id = f"{ids.getrandbits(64):016x}"
        clock = _START_NS + conversation * 90_000 * _MS
        begin = clock
        spans: list[dict[str, Any]] = []
        for turn in range(TURNS_PER_CONVERSATION):
            key = f"{conversation}/{turn}"
            shape = streams.stream("sample/shape", key)
            chat_id = f"{ids.getrandbits(64):016x}"
            chat_end = clock + round(shape.lognormvariate(7.0, 0.3) * _MS)  # about 1.1 s of model time
            spans.append(_span(trace_id, chat_id, agent_id, "chat sample-model", clock, chat_end,
                               {"gen_ai.operation.name": "chat", "gen_ai.request.model": "sample-model"}))
            size = shape.choice((1, 2, 2, 3, 3, 4, 4, 5, 6))
            names = shape.choices(list(TOOLS), weights=[t[0] for t in TOOLS.values()], k=size)
            turn_end = chat_end
            for index, tool in enumerate(names):
                _, median, sigma, error_rate, pool = TOOLS[tool]
                call_id = f"call_{conversation:02d}{turn}{index}"
                values = _arguments(tool, shape.randrange(pool))
                if tool == "query_db":
                    values["kind"] = shape.choices(list(QUERY_KINDS), weights=[k[0] for k in QUERY_KINDS.values()])[0]
                    median = round(median * QUERY_KINDS[values["kind"]][1])
                arguments = orjson.dumps(values).decode()
                start = chat_end + index * _MS  # the runtime starts calls in model order, ~1 ms apart
                for attempt in (1, 2):
                    draws = streams.stream("sample/latency", f"{key}/{index}", attempt)
                    ms = draws.lognormvariate(_log(median), sigma)
                    error = ""
                    if ms >= TIMEOUT_MS:
                        ms, error = TIMEOUT_MS, "timeout"
                    elif draws.random() < error_rate:
                        error = "ConnectionError"
                    end = start + round(ms * _MS)
                    attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
                                  "gen_ai.tool.call.id": call_id, "gen_ai.tool.call.arguments": arguments}
                    if error:
                        attributes["error.type"] = error
                    spans.append(_span(trace_id, f"{ids.getrandbits(64):016x}", agent_id, f"execute_tool {tool}",
                                       start, end, attributes, error=bool(error)))
                    turn_end = max(turn_end, end)
                    if error != "ConnectionError":
                        break
                    start = end + 50 * _MS  # one retry after a transient error, 50 ms later
            clock = turn_end + 5 * _MS
        final = clock + round(streams.stream("sample/shape", f"{conversation}/final").lognormvariate(7.0, 0.3) * _MS)
        spans.insert(0, _span(trace_id, agent_id, "", "invoke_agent sample-agent", begin, final,
                              {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "sample-agent"}))
        document = {"resourceSpans": [{
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "sample-agent-service"}}]},
            "scopeSpans": [{"scope": {"name": "harness.traces.sample"}, "spans": spans}]}]}
        lines.append(orjson.dumps(document))
    return b"\n".join(lines) + b"\n"


def _arguments(tool: str, n: int) -> dict[str, str]:
    """A call's arguments: the `n`th of its tool's pool."""
    if tool in ("read_file", "edit_file"):
        return {"path": f"src/module_{n}.py"} | ({"instructions": f"change {n}"} if tool == "edit_file" else {})
    if tool == "send_email":
        return {"thread_id": f"thread-{n}", "body": f"update {n}"}
    return {"query": f"{tool}-{n}"}


def _log(median: int) -> float:
    import math

    return math.log(median)


def _span(trace_id: str, span_id: str, parent_id: str, name: str, start: int, end: int, attributes: dict[str, str],
          *, error: bool = False) -> dict[str, Any]:
    span: dict[str, Any] = {"traceId": trace_id, "spanId": span_id, "parentSpanId": parent_id, "name": name,
                            "kind": 1 if name.startswith("execute_tool") else 3,
                            "startTimeUnixNano": str(start), "endTimeUnixNano": str(end),
                            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()]}
    if error:
        span["status"] = {"code": 2}
    return span


def main() -> None:
    """`python -m harness.traces.sample [PATH]`: write the sample (default: over `SAMPLE`)."""
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else SAMPLE
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(generate())
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
