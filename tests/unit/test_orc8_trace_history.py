"""Serializability's first answer (the history the trace shows, replayed once and remembered) compares
each reported value with its replayed one by equality before `values.matches` (which tests equality
first itself). The step-by-step replay, which compares with `same_result`, is the reference: every run
of the catalogue (and the correct and parallel policies on its scenarios) gets the same verdict when the
remembered replay is not used."""

from __future__ import annotations

from typing import Any

import pytest

from harness import get_scheduler, run
from harness.oracles import replays, serializability
from tests.catalogue.cases import CASES, CORRECT


def _no_memo(initial: object, catalogue: object, calls: object, replay: Any) -> Any:
    raise RuntimeError("no remembered replay: the step-by-step check decides")


def test_the_remembered_history_judges_as_the_step_by_step_one(monkeypatch: pytest.MonkeyPatch) -> None:
    replays.forget()
    failing = 0
    for case in CASES:
        scenario = case.load()
        for name, scheduler in ((case.name, case.scheduler), *CORRECT[:2], ("parallel", get_scheduler("parallel"))):
            for seed in (1, 2):
                fast = serializability.check(run(scenario, scheduler, seed))
                with monkeypatch.context() as patch:
                    patch.setattr(serializability, "remembered", _no_memo)
                    slow = serializability.check(run(scenario, scheduler, seed))
                assert fast == slow, f"{name} on {scenario.name} seed {seed}"
                failing += not fast.ok
    assert failing
