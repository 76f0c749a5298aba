"""The fair reference for `run()`: a lean program that does the same work and nothing else.

`raw_simpy_pair` in bench_run.py prices only the clock: it waits out the eight latencies and touches
no file, records no event and hashes nothing. What a run *does* is more than that: it reads and
writes the world at the tools' touch points, records every start, touch and end, digests every value
and the final world, and hashes the trace. This module does exactly that for bench_run's 8-call batch
under `serial` or `parallel`, as a program written for this one job would: a dict for the world,
SimPy processes for the calls, orjson for the bytes. Its fingerprint is the harness's, byte for byte
(`lean_fingerprint(...) == run(...).fingerprint`, asserted by the benchmark each time it runs and by
tests/unit/test_lean_reference.py), so "`run()` costs N times the lean program" compares equal
outputs.

It knows only the seven tools the batch uses, the cwd-relative path rule and the two policies. It is
not part of the harness: nothing in `harness/` imports it, and it must never grow a second engine.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Callable, Generator
from typing import Any

import orjson
import simpy

_SORTED = orjson.OPT_SORT_KEYS
_LINES = orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE

Touch = Callable[[str, str, "str | None"], None]
Tool = Callable[[dict[str, Any], "LeanWorld", Touch], Generator[float, None, Any]]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class LeanWorld:
    """Regular files and directories in dicts, a cwd, and the touches tools report."""

    __slots__ = ("cwd", "dirs", "files", "home")

    def __init__(self, files: dict[str, str], dirs: list[str], cwd: str, home: str) -> None:
        self.files, self.dirs, self.cwd, self.home = dict(files), list(dirs), cwd, home

    def path(self, path: str, touch: Touch) -> str:
        touch("read", "session:cwd", _sha(self.cwd)[:16])
        return posixpath.normpath(posixpath.join(self.cwd, path))

    def read(self, path: str, touch: Touch) -> str:
        full = self.path(path, touch)
        text = self.files[full]
        touch("read", full, _sha(text)[:16])
        return text

    def read_resolved(self, full: str, touch: Touch) -> str:
        text = self.files[full]
        touch("read", full, _sha(text)[:16])
        return text

    def truncate(self, path: str, touch: Touch) -> None:
        full = self.path(path, touch)
        self.files[full] = ""
        touch("truncate", full, _sha("")[:16])

    def write(self, path: str, text: str, touch: Touch) -> None:
        full = self.path(path, touch)
        self.files[full] = text
        touch("write", full, _sha(text)[:16])

    def list_files(self, root: str, touch: Touch) -> list[str]:
        full = self.path(root, touch)
        touch("list", full, None)
        prefix = full.rstrip("/") + "/"
        return sorted(p for p in self.files if p.startswith(prefix))

    def digest(self) -> str:
        state = {"files": {p: _sha(self.files[p]) for p in sorted(self.files)}, "dirs": self.dirs,
                 "symlinks": {}, "hardlinks": [], "ledgers": {}, "cwd": self.cwd, "env": {},
                 "home": self.home, "case_sensitive": True}
        return hashlib.sha256(orjson.dumps(state, option=_SORTED)).hexdigest()


# -- the tools, each as a generator of touch points (fractions of its latency), as the harness's are --

def read_file(args: dict[str, Any], w: LeanWorld, touch: Touch) -> Generator[float, None, Any]:
    yield 0.5
    text = w.read(args["path"], touch)
    return {"path": w.path(args["path"], touch), "content": text}


def write_file(args: dict[str, Any], w: LeanWorld, touch: Touch) -> Generator[float, None, Any]:
    w.truncate(args["path"], touch)
    yield 1.0
    w.write(args["path"], args["content"], touch)
    return {"path": w.path(args["path"], touch), "bytes_written": len(args["content"].encode())}


def patch(args: dict[str, Any], w: LeanWorld, touch: Touch) -> Generator[float, None, Any]:
    text = w.read(args["path"], touch)
    yield 1.0
    w.write(args["path"], text.replace(args["old"], args["new"], 1), touch)
    return {"path": w.path(args["path"], touch), "replacements": 1}


def search_files(args: dict[str, Any], w: LeanWorld, touch: Touch) -> Generator[float, None, Any]:
    yield 0.5
    matches = [{"path": path, "line": number, "text": line}
               for path in w.list_files(args["path"], touch)
               for number, line in enumerate(w.read_resolved(path, touch).splitlines(), start=1)
               if args["pattern"] in line]
    return {"matches": matches, "count": len(matches)}


def web_search(args: dict[str, Any], w: LeanWorld, touch: Touch) -> Generator[float, None, Any]:
    yield 1.0
    query = args["query"]
    tag = _sha(query)[:8]
    return {"results": [{"title": f"Result {i} for {query}", "url": f"https://example.invalid/{tag}/{i}"}
                        for i in range(1, 4)]}


def query_service_logs(args: dict[str, Any], w: LeanWorld, touch: Touch) -> Generator[float, None, Any]:
    yield 1.0
    return {"tool": "query_service_logs", "service": args["service_name"], "minutes": 30,
            "error_count": 236, "main_error": "Database connection pool exhausted"}


def run_tests(args: dict[str, Any], w: LeanWorld, touch: Touch) -> Generator[float, None, Any]:
    yield 0.1
    base = w.path(args["path"], touch)
    tree = {path: w.read_resolved(path, touch) for path in w.list_files(args["path"], touch)}
    failures, tests = [], 0
    for path in sorted(tree):
        if posixpath.basename(path).startswith("test_"):
            tests += 1
            for line in tree[path].splitlines():
                if line.startswith("requires "):
                    _, target, text = line.split(" ", 2)
                    if text not in tree.get(posixpath.normpath(posixpath.join(base, target)), ""):
                        failures.append(f"{path}: {target} lacks {text!r}")
    yield 1.0
    return {"passed": not failures, "tests": tests, "failures": failures}


#: name -> (behaviour, latency in ms): the built-in tools' fixed latencies.
TOOLS: dict[str, tuple[Tool, int]] = {
    "read_file": (read_file, 100), "write_file": (write_file, 200), "patch": (patch, 300),
    "search_files": (search_files, 400), "web_search": (web_search, 1200),
    "query_service_logs": (query_service_logs, 3000), "run_tests": (run_tests, 2000),
}


def lean_fingerprint(scenario: str, files: dict[str, str], dirs: list[str], cwd: str, home: str,
                     calls: list[tuple[str, str, dict[str, Any]]], policy: str, seed: int) -> str:
    """The fingerprint `run()` gives this one-batch scenario under `serial` or `parallel`."""
    env = simpy.Environment()
    world = LeanWorld(files, dirs, cwd, home)
    events: list[dict[str, Any]] = []

    def record(**event: Any) -> None:
        events.append({"t": int(env.now), "seq": len(events), **event})

    def started(call_id: str, name: str, args: dict[str, Any]) -> simpy.Process:
        # The behaviour runs to its first touch point here, as the call starts: a parallel batch's
        # starts and first touches come in call order.
        record(ev="start", call=call_id, tool=name, attempt=1)
        behaviour, latency = TOOLS[name]

        def touch(op: str, target: str, digest: str | None) -> None:
            event = {"t": int(env.now), "seq": len(events), "ev": "touch", "call": call_id, "attempt": 1,
                     "op": op, "target": target}
            if digest is not None:
                event["digest"] = digest
            events.append(event)

        steps = behaviour(args, world, touch)
        return env.process(finish(call_id, steps, next(steps), env.now, latency))

    def finish(call_id: str, steps: Generator[float, None, Any], at: float, start: float,
               latency: int) -> Generator[simpy.Event, Any, None]:
        try:
            while True:
                yield env.timeout(start + at * latency - env.now)
                at = next(steps)
        except StopIteration as stop:
            value = stop.value
        if env.now < start + latency:  # a call whose last touch is its end ends in the same step
            yield env.timeout(start + latency - env.now)
        vd = hashlib.sha256(orjson.dumps(value, option=_SORTED)).hexdigest()[:16]
        record(ev="end", call=call_id, attempt=1, outcome="ok", vd=vd)

    def batch() -> Generator[simpy.Event, Any, None]:
        ids = [c[0] for c in calls]
        record(ev="batch", index=0, label="", calls=ids)
        if policy == "parallel":
            yield env.all_of([started(*c) for c in calls])
        else:
            for c in calls:
                yield started(*c)
        record(ev="report", order=ids)
        record(ev="batch_end", index=0, status="completed", stop="done", reported=ids)
        record(ev="quiesce", makespan=int(env.now))

    record(ev="run", scenario=scenario, scheduler=policy, seed=seed)
    env.run(env.process(batch()))
    trace = hashlib.sha256(b"".join([orjson.dumps(e, option=_LINES) for e in events])).hexdigest()
    return hashlib.sha256(f"{trace}:{world.digest()}".encode()).hexdigest()
