"""A run's trace hash skips the type walk for the events the harness records with plain fields only
(issue 27, item 3): the digest stays json's canonical one, and the events it trusts really are plain."""

from __future__ import annotations

import hashlib
import json

import pytest

from harness.model import Batch
from harness.run import run
from harness.run.result import _LOOKS
from harness.scenario import Scenario, find_scenario, scenario_names
from harness.sim.trace import RECORDED_PLAIN, recorded_sha256, sha256

SCHEDULERS = ["serial", "parallel", "resource_keys"]


def _json_digest(events: list[dict[str, object]] | tuple[dict[str, object], ...]) -> str:
    """The canonical trace hash as json alone spells it (no orjson)."""
    lines = "".join(json.dumps(e, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n" for e in events)
    return hashlib.sha256(lines.encode("utf-8", "surrogatepass")).hexdigest()


@pytest.mark.parametrize("name", scenario_names())
def test_every_builtin_run_hashes_as_json_and_its_trusted_events_hold_only_plain_fields(name: str) -> None:
    scenario = find_scenario(name)
    for scheduler in SCHEDULERS:
        result = run(scenario, scheduler, 7)
        assert result.trace_sha256 == recorded_sha256(result.trace) == sha256(result.trace) == _json_digest(
            result.trace)
        looked = {id(event) for event in result.__dict__[_LOOKS]}
        for event in result.trace:
            plain = {type(value) for value in event.values()} <= {str, int, bool}
            if event["ev"] in RECORDED_PLAIN:
                assert plain, event
            # Every event the trace hash does not look into holds str, int, bool or lists of ids only.
            if id(event) not in looked:
                assert all(type(value) in (str, int, bool) or (type(value) is list and all(
                    type(item) is str for item in value)) for value in event.values()), event
            elif event["ev"] in ("batch", "report", "batch_end"):  # recorded with lists of call ids
                assert not plain and not all(type(v) in (str, int, bool, list) for v in event.values()), event


def test_a_batch_label_that_is_a_float_is_still_looked_at() -> None:
    """The runner vouches for its lists of call ids, not for a label a user's batch may carry."""
    batch = Batch.of([("c1", "web_search", {"query": "q"})])
    object.__setattr__(batch, "label", 1e-05)
    result = run(Scenario(name="float-label", batches=(batch,)), "serial", 1)
    assert any(event.get("label") == 1e-05 for event in result.trace)
    assert result.trace_sha256 == _json_digest(result.trace)


def test_a_jittered_run_whose_run_event_holds_a_float_hashes_as_json() -> None:
    result = run(find_scenario(scenario_names()[0]), "parallel", 3, jitter=0.5)
    assert isinstance(result.trace[0]["jitter"], float)
    assert result.trace_sha256 == _json_digest(result.trace)


def test_a_trace_from_elsewhere_is_still_looked_at() -> None:
    """A float in a read trace (a hand-edited file) is spelled as json spells it by `sha256`."""
    events = [{"t": 0, "seq": 0, "ev": "touch", "call": "c1", "attempt": 1, "op": "read", "target": "/a",
               "weight": 1e-05}]
    assert sha256(events) == _json_digest(events)
