"""Values are compared as values: a runtime that reports a tool's value as its JSON text (LangGraph's
ToolNode) or as `str()` of it (AutoGen's workbench) is judged on the value, by one rule the protocol
oracle (`mispaired-result`) and the serializability oracle (`divergent-result`) share."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from harness import find_scenario, run
from harness.bridges import from_asyncio
from harness.oracles import check
from harness.oracles.values import matches, reading_digests, readings
from harness.sim.trace import value_digest

VALUE = {"tool": "query_service_logs", "error_count": 236, "ok": True, "pool": None, "tags": ["db", "pool"],
         "ratio": 0.25}


# -- the rule ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [json.dumps(VALUE), json.dumps(VALUE, indent=2), str(VALUE), repr(VALUE)])
def test_json_text_and_str_of_a_value_stand_for_it(text: str) -> None:
    assert matches(text, VALUE)
    assert value_digest(VALUE) in reading_digests(text)


@pytest.mark.parametrize("value", [1, 2.5, True, False, None, [1, "a"], "plain text", "", "1"])
def test_every_spelling_of_a_small_value(value: Any) -> None:
    for text in {json.dumps(value), str(value), repr(value)}:
        assert matches(text, value), (text, value)


@pytest.mark.parametrize(("reported", "value"), [
    (json.dumps({**VALUE, "error_count": 237}), VALUE),  # another value's text
    (str({**VALUE, "ok": False}), VALUE),
    ("True", 1),  # compared canonically once read: true is not 1
    ("1", True),
    ("[1, 2]", [2, 1]),
    ("not a value", VALUE),
    ("{'a': 1", {"a": 1}),  # cut short
    (1, "1"),  # only text is read: a raw value must be the value itself
    ({"a": "1"}, {"a": 1}),  # nested text is not decoded
    ('"{\\"a\\": 1}"', {"a": 1}),  # text of text: decoded once, not twice
])
def test_a_different_value_does_not_match(reported: Any, value: Any) -> None:
    assert not matches(reported, value)


def test_a_short_text_stands_for_each_value_it_spells() -> None:
    """The ambiguous case, as documented: "1" is the text of 1 and of "1", so it matches both, and a
    runtime that swaps two calls whose values both read "1" is not caught (the model reads the same
    text either way); a raw 1 still does not stand for "1"."""
    assert matches("1", 1) and matches("1", "1") and not matches("1", 1.0)  # 1.0 reads "1.0"
    assert readings("1") == (1, 1)
    assert not matches(1, "1")
    assert readings(1) == () and reading_digests({"a": 1}) == ()


def test_undecodable_texts_have_no_reading() -> None:
    assert readings("[" * 100_000) == ()  # too deep for either parser: no reading, no error
    assert reading_digests("{1, 2}") == ()  # a set: Python reads it, JSON cannot spell it


# -- runtimes that stringify -------------------------------------------------------------------------


def _stringifying(spell: Callable[[Any], str], swap: bool = False) -> Any:
    """AutoGen's workbench in miniature: every call at once, each value handed back as text, paired
    by call id; with `swap`, the first two calls' texts exchanged (a true mispairing)."""

    async def execute(tool_calls: Sequence[Any], tools: Any) -> list[dict[str, Any]]:
        async def one(tc: Any) -> Any:
            return await tools[tc.function.name](**json.loads(tc.function.arguments))

        found = await asyncio.gather(*(one(tc) for tc in tool_calls))
        texts = [spell(value) for value in found]
        if swap and len(texts) > 1:
            texts[0], texts[1] = texts[1], texts[0]
        return [{"tool_call_id": tc.id, "content": text} for tc, text in zip(tool_calls, texts, strict=True)]

    return from_asyncio(execute)


def _labels(scenario: str, scheduler: Any, seed: int) -> set[str]:
    return {v.label for v in check(run(find_scenario(scenario), scheduler, seed)) if not v.ok}


@pytest.mark.parametrize("spell", [json.dumps, str], ids=["json", "str"])
@pytest.mark.parametrize("seed", [1, 7])
def test_a_runtime_that_stringifies_every_value_passes(spell: Callable[[Any], str], seed: int) -> None:
    result = run(find_scenario("incident-triage"), _stringifying(spell), seed)
    assert all(isinstance(r.value, str) for b in result.batches for r in b.results)
    assert {v.label for v in check(result) if not v.ok} == set()


@pytest.mark.parametrize("spell", [json.dumps, str], ids=["json", "str"])
def test_a_runtime_that_stringifies_and_swaps_is_still_caught(spell: Callable[[Any], str]) -> None:
    result = run(find_scenario("incident-triage"), _stringifying(spell, swap=True), 3)
    verdicts = [x for v in check(result) for x in v.violations]
    mispaired = [x for x in verdicts if x.label == "mispaired-result"]
    first, second = (c.id for c in result.scenario.calls[:2])
    assert {x.witness["call"]: x.witness["produced_by"] for x in mispaired} == {first: second, second: first}
    assert "divergent-result" in {x.label for x in verdicts}  # and the serializability oracle agrees


def test_stringified_results_still_show_a_real_race() -> None:
    """Text is not a free pass: a lost update under a stringifying all-parallel runtime is found as it
    is under the built-in `parallel` policy."""
    assert "lost-update" in _labels("config-clobber", "parallel", 1)
    assert "lost-update" in _labels("config-clobber", _stringifying(json.dumps), 1)
