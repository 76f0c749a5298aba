"""A Python model for the tests: `model = "tests.agent.py_model:decide"` (a function of the transcript)."""

from __future__ import annotations

from typing import Any

from harness.agent import Transcript


def decide(transcript: Transcript) -> dict[str, Any]:
    if transcript.result("q") is None:
        arguments = {"start_date": "2025-05-12", "end_date": "2025-05-18"}
        return {"type": "tool_call", "calls": [{"id": "q", "name": "query_sales_data", "arguments": arguments}]}
    if transcript.round == 2:
        return {"not": "a decision"}  # wrong field names: taskloop must re-prompt
    total = transcript.result("q").value["total_amount"]  # type: ignore[union-attr]
    return {"type": "final_answer", "content": f"total {total}"}


def raises(transcript: Transcript) -> dict[str, Any]:
    """A model whose own code fails on its first decision."""
    raise KeyError("choices")
