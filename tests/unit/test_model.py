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


def test_parsed_arguments_are_the_callers_own_every_time() -> None:
    """Arguments are parsed once per text and handed out as copies: changing one changes no other."""
    from harness.model import ToolCall

    flat = ToolCall("c", "write_file", '{"path": "a.txt", "content": "x", "n": 1.5, "ok": true}')
    first = flat.parsed_arguments()
    assert first == {"path": "a.txt", "content": "x", "n": 1.5, "ok": True}
    first["path"] = "changed"  # type: ignore[index]
    assert flat.parsed_arguments() == {"path": "a.txt", "content": "x", "n": 1.5, "ok": True}
    nested = ToolCall("d", "edit", '{"edits": [{"old": "a", "new": "b"}]}')
    got = nested.parsed_arguments()
    got["edits"][0]["old"] = "changed"  # type: ignore[index]
    assert nested.parsed_arguments() == {"edits": [{"old": "a", "new": "b"}]}
    assert ToolCall("e", "x", "[1, 2]").parsed_arguments() is None
    assert ToolCall("f", "x", "{broken").parsed_arguments() is None
    long = ToolCall("g", "write_file", '{"content": "' + "y" * 5000 + '"}')
    assert long.parsed_arguments() == {"content": "y" * 5000}
