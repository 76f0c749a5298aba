"""Fuzzing the commands users type, end to end: a mutated scenario file under `harness run`, a
mutated reproducer under `harness replay`, a mutated transcript under `harness import` (issue 26:
exit 70 came from the layers after loading: a report resolving a name with a NUL, a reproducer's
byte that is not UTF-8, lone surrogates reaching the importer's self-check).

Each input is either structurally mutated (tests/fuzz/test_fuzz_inputs.py's `mutated`: a value
replaced by a nasty one, a key deleted or added) or corrupted byte by byte (bytes inserted, replaced
or deleted, bytes that are not UTF-8, NUL, escapes, the file cut short). Every outcome must be an
answer: any exit code but 70, no traceback. The CI profile runs a bounded sample; `nox -s fuzz`
(HARNESS_FUZZ_EXAMPLES=10000) 10,000 of each kind. With HARNESS_FUZZ_COUNTS=FILE each example's
kind and exit code are appended to FILE (one JSON line each), for counting.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import click
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.exitcodes import ExitCode
from tests.fuzz.test_fuzz_inputs import REPRODUCERS, SCENARIOS, TRANSCRIPTS, mutated

EXAMPLES = int(os.environ.get("HARNESS_FUZZ_EXAMPLES", "40"))
COUNTS = os.environ.get("HARNESS_FUZZ_COUNTS")
SETTINGS = settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

#: Bytes that break decoders and parsers: not UTF-8, an encoded lone surrogate, NUL, an escape,
#: quotes and brackets, TOML and JSON escapes of a surrogate.
NASTY_BYTES = st.one_of(
    st.binary(min_size=1, max_size=4),
    st.sampled_from([b"\xff", b"\xfe", b"\xc3", b"\x80", b"\xed\xa0\x80", b"\x00", b"\x1b[2J", b'"', b"'", b"[", b"]",
                     b"{", b"}", b"\\u", b"\\ud800", b"\\uDFFF", b"\\", b"\n", b"=", b",", b"\r"]),
)


@st.composite
def corrupted(draw: st.DrawFn, texts: dict[str, bytes]) -> bytes:
    """One file with one to four byte-level corruptions."""
    data = bytearray(texts[draw(st.sampled_from(sorted(texts)))])
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        at = draw(st.integers(min_value=0, max_value=len(data)))
        action = draw(st.sampled_from(["insert", "replace", "delete", "cut"]))
        if action == "insert":
            data[at:at] = draw(NASTY_BYTES)
        elif action == "replace":
            chunk = draw(NASTY_BYTES)
            data[at:at + len(chunk)] = chunk
        elif action == "delete":
            del data[at:at + draw(st.integers(min_value=1, max_value=8))]
        else:
            del data[at:]
    return bytes(data)


def _toml(document: Any) -> bytes | None:
    """A mutated document as TOML, or None where TOML has no spelling for it (None, a non-str key)."""
    import tomli_w

    try:
        return tomli_w.dumps(document).encode("utf-8", "surrogatepass")
    except (TypeError, ValueError):
        return None


def _json(document: Any) -> bytes:
    return json.dumps(document).encode("utf-8")


SCENARIO_FILES = {name: _toml(data) or b"" for name, data in SCENARIOS.items()}
REPRODUCER_FILES = {name: text.encode("utf-8") for name, text in REPRODUCERS.items()}
TRANSCRIPT_FILES = {name: _json(data) for name, data in TRANSCRIPTS.items()}


def _answer(kind: str, data: bytes, suffix: str, args: list[str], command: click.Command = main) -> None:
    """Write `data` to a file, run the command on it in process, and require an answer (not exit 70)."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / f"fuzz{suffix}"
        path.write_bytes(data)
        result = CliRunner().invoke(command, [a.replace("{file}", str(path)) for a in args])
    if COUNTS:
        with open(COUNTS, "a") as f:
            f.write(json.dumps({"kind": kind, "exit": result.exit_code}) + "\n")
    assert result.exit_code != ExitCode.HARNESS_BUG, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output, result.output


@SETTINGS
@given(st.one_of(mutated(SCENARIOS).map(_toml).filter(bool), corrupted(SCENARIO_FILES)))
def test_harness_run_answers_every_mutated_scenario_file(data: bytes) -> None:
    _answer("scenario", data, ".toml", ["run", "{file}", "--scheduler", "serial", "--format", "json",
                                        "--wall-timeout", "30"])


@SETTINGS
@given(st.one_of(mutated({name: json.loads(text) for name, text in REPRODUCERS.items()}).map(_json),
                 corrupted(REPRODUCER_FILES)))
def test_harness_replay_answers_every_mutated_reproducer(data: bytes) -> None:
    _answer("reproducer", data, ".json", ["replay", "{file}", "--format", "json", "--wall-timeout", "30"])


@SETTINGS
@given(st.one_of(mutated(TRANSCRIPTS).map(_json), corrupted(TRANSCRIPT_FILES)),
       st.sampled_from(["openai", "anthropic"]))
def test_harness_import_answers_every_mutated_transcript(data: bytes, kind: str) -> None:
    from harness.cli.transcripts import import_command

    _answer("transcript", data, ".json", [kind, "{file}"], import_command)

