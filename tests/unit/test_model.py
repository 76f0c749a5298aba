import pytest

from harness.model import Batch, CallResult, Outcome, ToolCall


def test_arguments_are_kept_byte_for_byte_and_parsed_on_demand() -> None:
    call = ToolCall("c1", "read_file", '{"path":  "a.txt"}', 0)
    assert call.arguments == '{"path":  "a.txt"}'
    assert call.parsed_arguments() == {"path": "a.txt"}


@pytest.mark.parametrize("raw", ["", "{", "[1]", "null", '"x"', "{} {}"])
def test_malformed_or_non_object_arguments_parse_to_none(raw: str) -> None:
    assert ToolCall("c1", "read_file", raw).parsed_arguments() is None


def test_batch_rejects_duplicate_ids_and_wrong_indexes() -> None:
    with pytest.raises(ValueError, match="two calls with id"):
        Batch((ToolCall("a", "x", "{}", 0), ToolCall("a", "x", "{}", 1)))
    with pytest.raises(ValueError, match="index must equal"):
        Batch((ToolCall("a", "x", "{}", 1),))


def test_batch_of_numbers_calls_and_serialises_mappings() -> None:
    batch = Batch.of([("a", "read_file", {"path": "x"}), ("b", "read_file", '{"path":"y"}')])
    assert [c.index for c in batch] == [0, 1]
    assert batch.calls[0].arguments == '{"path": "x"}'
    assert batch.ids == ("a", "b")


def test_call_result_validates_times_and_coerces_outcome() -> None:
    assert CallResult("a", "ok").outcome is Outcome.OK  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ends"):
        CallResult("a", Outcome.OK, start_ms=5, end_ms=4)
    with pytest.raises(ValueError):
        CallResult("a", "exploded")  # type: ignore[arg-type]
