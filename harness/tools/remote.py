"""Read-only remote tools: web search/extract, the incident queries of seed 003, the sales tools of
seed 004.

Owns their canned, deterministic answers (a function of the arguments only) and default latencies
(seed 003: logs 3 s, metrics 4 s, deployment history 2 s; an image takes 8 s). They touch no world state, so any order
of them is equivalent; they exist to give schedulers realistic latency to overlap. Never networked.
"""

from __future__ import annotations

import hashlib
from collections.abc import Generator

from harness.faults.latency import Fixed
from harness.model import JSONValue
from harness.tools.params import Parameters
from harness.tools.spec import Args, Declared, ToolError, ToolIO, ToolSpec, require_str


def _stable_int(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()[:4], "big")


def web_search(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    query = require_str(args, "query")
    yield 1.0
    tag = hashlib.sha256(query.encode()).hexdigest()[:8]
    return {"results": [{"title": f"Result {i} for {query}", "url": f"https://example.invalid/{tag}/{i}"}
                        for i in range(1, 4)]}


def web_extract(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    url = require_str(args, "url")
    yield 1.0
    return {"url": url, "content": f"Extracted text of {url} ({_stable_int(url) % 5000} words)"}


def image_generate(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    prompt = require_str(args, "prompt")
    yield 1.0
    tag = hashlib.sha256(prompt.encode()).hexdigest()[:12]
    return {"image": f"https://images.example.invalid/{tag}.png", "prompt": prompt,
            "aspect_ratio": args.get("aspect_ratio", "square")}


def query_service_logs(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    service = require_str(args, "service_name")
    yield 1.0
    return {"tool": "query_service_logs", "service": service, "minutes": args.get("minutes", 30),
            "error_count": 236, "main_error": "Database connection pool exhausted"}


def query_service_metrics(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    service = require_str(args, "service_name")
    yield 1.0
    return {"tool": "query_service_metrics", "service": service, "cpu": "68%", "memory": "74%",
            "average_latency": "4.8s", "database_pool_usage": "100%"}


def query_deployment_history(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    service = require_str(args, "service_name")
    yield 1.0
    return {"tool": "query_deployment_history", "service": service,
            "last_deployment": "2026-07-24 09:30:00", "version": f"{service}:2.7.1", "status": "success"}


# The two weeks seed 004 walks through; any other range gets a stable made-up total.
_KNOWN_TOTALS = {("2025-05-12", "2025-05-18"): 284730.0, ("2025-05-05", "2025-05-11"): 256890.0}


def query_sales_data(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    start, end = require_str(args, "start_date"), require_str(args, "end_date")
    category = args.get("category")
    yield 1.0
    total = _KNOWN_TOTALS.get((start, end), float(100000 + _stable_int(start, end, category) % 200000))
    return {"rows": 4, "total_amount": total, "currency": "CNY", "category": category}


def calc_growth_rate(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    current, previous = args.get("current"), args.get("previous")
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (current, previous)):
        raise ToolError("calc_growth_rate needs numeric 'current' and 'previous'")
    assert isinstance(current, int | float) and isinstance(previous, int | float)
    if previous == 0:
        raise ToolError("calc_growth_rate: previous period is zero")
    yield 1.0
    return {"growth_rate": round((current - previous) / previous * 100, 2)}


_REMOTE = Declared(read_only=True, category="remote")
#: Seed 003's signature: `(service_name: str, minutes: int)` (the metrics mock ignores `minutes`).
_SERVICE = Parameters.of(service_name="string", minutes="integer?")

SPECS = (
    ToolSpec("web_search", "Search the web (canned results).", _REMOTE, web_search, Fixed(1200),
             parameters=Parameters.of(query="string")),
    ToolSpec("web_extract", "Extract the text of a web page (canned).", _REMOTE, web_extract, Fixed(1500),
             parameters=Parameters.of(url="string")),
    ToolSpec("image_generate", "Generate an image from a prompt (a canned URL; on hermes' safe list).", _REMOTE,
             image_generate, Fixed(8000), parameters=Parameters.of(prompt="string", aspect_ratio="string?")),
    ToolSpec("query_service_logs", "Seed 003: error logs of a service over N minutes.", _REMOTE,
             query_service_logs, Fixed(3000), parameters=_SERVICE),
    ToolSpec("query_service_metrics", "Seed 003: CPU, memory, latency and pool usage.", _REMOTE,
             query_service_metrics, Fixed(4000), parameters=_SERVICE),
    ToolSpec("query_deployment_history", "Seed 003: the last deployment of a service.", _REMOTE,
             query_deployment_history, Fixed(2000), parameters=Parameters.of(service_name="string")),
    ToolSpec("query_sales_data", "Seed 004: sales totals over a date range.", _REMOTE,
             query_sales_data, Fixed(1500),
             parameters=Parameters.of(start_date="string", end_date="string", category="string?")),
    ToolSpec("calc_growth_rate", "Seed 004: period-over-period growth in percent.",
             Declared(read_only=True, category="compute"), calc_growth_rate, Fixed(50),
             parameters=Parameters.of(current="number", previous="number")),
)
