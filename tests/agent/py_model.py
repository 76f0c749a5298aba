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


def two_customers(transcript: Transcript) -> dict[str, Any]:
    """Two failing CRM queries with different arguments, then an answer quoting the system messages the
    loop added to the context (what the model was told)."""
    if transcript.round <= 2:
        arguments = {"customer": "acme" if transcript.round == 1 else "globex"}
        return {"type": "tool_call", "calls": [{"id": f"crm{transcript.round}", "name": "query_crm",
                                                "arguments": arguments}]}
    told = [m.content for m in transcript.messages if m.role == "system"][1:]  # past the system prompt
    return {"type": "final_answer", "content": " | ".join(told) or "nothing"}


def keeps_calling(transcript: Transcript) -> dict[str, Any]:
    """A model that calls the failing CRM with the same arguments every round, disabled or not."""
    return {"type": "tool_call", "calls": [{"id": "crm", "name": "query_crm", "arguments": {"customer": "acme"}}]}
