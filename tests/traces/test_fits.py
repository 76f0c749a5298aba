"""Fits beyond one log-normal, only where the data supports them: a two-component mixture when the
log-normal fails its KS test, a split by an argument class when each class has enough samples and the
split lowers the BIC; the scenario then runs each class as its own tool (issue 29 item 2)."""

from __future__ import annotations

import json
import math
import tomllib

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.scenario import scenario_from_data
from harness.sim.streams import RandomStreams
from harness.traces import Attempt, CallRecord, Turn, learn, scenario_text

pytest.importorskip("scipy")


def _turns(draws: list[tuple[float, str]], tool: str = "query_db") -> tuple[Turn, ...]:
    turns = []
    for i, (ms, kind) in enumerate(draws):
        start = i * 10**12
        attempt = Attempt(f"{i:016x}", start, start + round(ms * 1e6), "ok")
        arguments = json.dumps({"kind": kind, "query": f"q{i}"})
        turns.append(Turn("f" * 32, f"p{i}", (CallRecord(f"c{i}", tool, (attempt,), arguments),)))
    return tuple(turns)


def _draws(spec: list[tuple[str, float, float, int]], seed: int = 5) -> list[tuple[float, str]]:
    rng = RandomStreams(seed).stream("test/fits")
    draws = [(rng.lognormvariate(math.log(median), sigma), kind) for kind, median, sigma, n in spec for _ in range(n)]
    order = RandomStreams(seed).stream("test/order")
    order.shuffle(draws)
    return draws


def test_a_bimodal_tool_gets_a_mixture_that_beats_the_lognormal_and_recovers_both_modes() -> None:
    draws = _draws([("a", 80, 0.25, 150), ("a", 900, 0.25, 100)])
    (model,) = learn(_turns(draws)).tools
    assert model.fit is not None and model.fit.p_value < 0.05  # one log-normal fails its test
    mixture = model.mixture
    assert mixture is not None and mixture.chosen and mixture.bic < mixture.single_bic
    assert mixture.median_ms == pytest.approx(80, rel=0.1) and mixture.median2_ms == pytest.approx(900, rel=0.1)
    assert mixture.weight == pytest.approx(0.6, abs=0.07) and mixture.p_value > 0.05
    assert model.split is None and model.latency_model == "mixture"  # one class: nothing to split by


def test_a_lognormal_tool_keeps_its_lognormal() -> None:
    (model,) = learn(_turns(_draws([("a", 300, 0.5, 200), ("b", 300, 0.5, 200)]))).tools
    assert model.fit is not None and model.fit.p_value > 0.05
    assert model.mixture is None and model.split is None and model.latency_model == "lognormal"


def test_a_split_by_an_argument_class_needs_enough_samples_per_class_and_a_better_bic() -> None:
    (split_model,) = learn(_turns(_draws([("lookup", 200, 0.3, 60), ("report", 900, 0.3, 30)]))).tools
    split = split_model.split
    assert split is not None and split.argument == "kind" and split.bic < split.whole_bic
    assert [(c.value, c.calls) for c in split.classes] == [('"lookup"', 60), ('"report"', 30)]
    assert split.classes[0].median_ms == pytest.approx(200, rel=0.1)
    assert split.classes[1].median_ms == pytest.approx(900, rel=0.1)
    assert split_model.latency_model == "split"
    (few,) = learn(_turns(_draws([("lookup", 200, 0.3, 60), ("report", 900, 0.3, 19)]))).tools
    assert few.split is None  # 19 < 20 samples in one class
    (alike,) = learn(_turns(_draws([("lookup", 300, 0.4, 60), ("report", 300, 0.4, 60)]))).tools
    assert alike.split is None  # the same latency either way: two more parameters buy nothing


def test_the_scenario_runs_each_class_as_its_own_tool() -> None:
    turns = _turns(_draws([("lookup", 200, 0.3, 60), ("report", 900, 0.3, 30)]))
    text = scenario_text(learn(turns), turns, name="split", files=["x.jsonl"])
    scenario = scenario_from_data(tomllib.loads(text), "x")
    assert "Split by the argument `kind` (2 classes)" in text and "lookup" not in text  # a class by its number
    assert [b.calls[0].name for b in scenario.batches].count("query_db.kind-2") == 30
    tools = tomllib.loads(text)["tools"]
    assert tools["query_db.kind-1"]["latency"]["lognormal"]["median"] == pytest.approx(200, rel=0.1)
    assert tools["query_db.kind-2"]["latency"]["lognormal"]["median"] == pytest.approx(900, rel=0.1)


def test_summary_of_the_sample_states_both_fits_and_the_split() -> None:
    result = CliRunner().invoke(main, ["traces", "summary", "--sample"])
    assert result.exit_code == 0
    assert "query_db: the log-normal fails its KS test" in result.stdout
    assert "query_db split by its argument `kind` (class 1: 51 calls" in result.stdout
    data = json.loads(CliRunner().invoke(main, ["traces", "summary", "--sample", "--format", "json"]).stdout)
    tools = {t["tool"]: t for t in data["tools"]}
    assert tools["query_db"]["latency_model"] == "split" and tools["query_db"]["mixture"]["chosen"] is True
    assert tools["web_search"]["latency_model"] == "lognormal" and tools["web_search"]["mixture"] is None


@pytest.mark.parametrize(("spec", "chosen"), [
    ([("a", 80, 0.25, 150), ("a", 900, 0.25, 100)], "chosen: mixture"),
    ([("lookup", 200, 0.3, 60), ("report", 900, 0.3, 30)], "chosen: split by kind"),
    ([("a", 300, 0.5, 200), ("b", 300, 0.5, 200)], None),
])
def test_the_plot_draws_the_model_the_scenario_uses(
        tmp_path: object, monkeypatch: pytest.MonkeyPatch, spec: list[tuple[str, float, float, int]],
        chosen: str | None) -> None:
    from pathlib import Path

    from matplotlib.axes import Axes

    from harness.report.trace_fits import draw_fits

    labels: list[str] = []
    plot = Axes.plot

    def recording(self: Axes, *args: object, **kwargs: object) -> object:
        labels.append(str(kwargs.get("label", "")))
        return plot(self, *args, **kwargs)

    monkeypatch.setattr(Axes, "plot", recording)
    draw_fits(learn(_turns(_draws(spec))), Path(str(tmp_path)) / "fits.png")
    assert any(label.startswith("log-normal") for label in labels)
    assert [label for label in labels if label.startswith("chosen")] == ([] if chosen is None else labels[-1:])
    assert chosen is None or labels[-1].startswith(chosen)


def _sized_turns(spec: list[tuple[int, int, float, int]], seed: int = 7) -> tuple[Turn, ...]:
    """write_file calls whose `content` length is drawn from [low, high] and latency from a log-normal
    (median, sigma 0.3): `spec` rows (low, high, median, count)."""
    rng = RandomStreams(seed).stream("test/sizes")
    draws = [(rng.randint(low, high), rng.lognormvariate(math.log(median), 0.3))
             for low, high, median, n in spec for _ in range(n)]
    RandomStreams(seed).stream("test/order").shuffle(draws)
    turns = []
    for i, (size, ms) in enumerate(draws):
        start = i * 10**12
        arguments = json.dumps({"path": "notes.md", "content": "x" * size, "overwrite": i % 2 == 0})
        attempt = Attempt(f"{i:016x}", start, start + round(ms * 1e6), "ok")
        turns.append(Turn("e" * 32, f"p{i}", (CallRecord(f"c{i}", "write_file", (attempt,), arguments),)))
    return tuple(turns)


def test_a_latency_that_grows_with_an_arguments_size_is_split_into_size_buckets() -> None:
    turns = _sized_turns([(10, 400, 100, 60), (2_000, 8_000, 900, 40)])
    (model,) = learn(turns).tools
    split = model.split
    assert split is not None and split.argument == "content" and split.cuts and split.bic < split.whole_bic
    assert split.cuts[0] < 400 and split.cuts[-1] >= 2_000  # the first bucket small calls only, the last large
    assert split.classes[0].median_ms == pytest.approx(100, rel=0.15)
    assert split.classes[-1].median_ms == pytest.approx(900, rel=0.15)
    assert [c.median_ms for c in split.classes] == sorted(c.median_ms for c in split.classes)  # in size order
    assert split.classes[0].value.startswith("len(content) <= ")
    assert split.classes[-1].value.startswith("len(content) > ")
    text = scenario_text(learn(turns), turns, name="sizes", files=["x.jsonl"])
    scenario = scenario_from_data(tomllib.loads(text), "x")
    assert "Split by the size of the argument `content`" in text and f"({split.classes[0].value})" in text
    assert "xxxxxxxx" not in text  # bounds, never a value
    by_call = {b.calls[0].id: b.calls[0].name for b in scenario.batches}
    for number, turn in enumerate(turns, 1):
        size = len(json.loads(turn.calls[0].arguments or "")["content"])
        index = next((i for i, cut in enumerate(split.cuts) if size <= cut), len(split.cuts))
        assert by_call[f"t{number}.1"] == f"traced.write_file.content-{index + 1}"
    from harness.report.trace_summary import summary_data, summary_text

    assert "write_file split by the size of its argument `content` (class 1 (len(content) <= " in summary_text(
        learn(turns), "x")
    data = {t["tool"]: t for t in summary_data(learn(turns))["tools"]}["write_file"]["split"]
    assert data["by"] == "size" and data["cuts"] == list(split.cuts)


def test_a_latency_that_does_not_depend_on_size_is_not_split_by_it() -> None:
    (model,) = learn(_sized_turns([(10, 8_000, 300, 120)])).tools
    assert model.split is None  # the buckets' extra parameters and cuts buy nothing


def test_size_buckets_and_their_labels() -> None:
    from harness.traces.fits import Split, argument_sizes, bucket_label, size_buckets, size_of

    assert size_buckets([1, 2, 3, 4, 5, 6, 7, 8], 2) == (4,) and size_buckets([1, 2, 3, 4, 5, 6, 7, 8], 4) == (2, 4, 6)
    assert size_buckets([1, 1, 1, 1, 1, 1, 9, 9], 4) == (1,)  # repeated sizes: fewer buckets
    assert [size_of(v) for v in ("abc", 7, 2.5, True, None, float("nan"))] == [3, 7, 2.5, None, None, None]
    texts = [json.dumps({"q": "x" * n, "k": n % 2, "flag": True}) for n in range(10)]
    assert list(argument_sizes(texts)) == ["q"]  # k has 2 sizes (a class), flag is a boolean
    assert argument_sizes([*texts, None]) == {}
    labels = [bucket_label("limit", (10, 100), i, text=False) for i in range(3)]
    assert labels == ["limit <= 10", "10 < limit <= 100", "limit > 100"]
    split = Split("limit", (), 0.0, 0.0, (10.0, 100.0))
    assert [split.class_of({"limit": v}) for v in (3, 10, 11, 100, 101, "x" * 50, True)] == [0, 0, 1, 1, 2, 1, None]
