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
