"""Issue 26's exit-70 cases on inputs and I/O, each a clean error now: a one-line message, the
documented exit code (2 for bad input, 74 for a file that cannot be written), no traceback, and
nothing torn left behind (an old output file stays whole, no partial or temporary file).

Disk full is ENOSPC raised by the write itself (harness.atomic's file, or the sweep file's append)
part-way through; no permission is a path under /proc or /sys (root may write anywhere else).
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import harness.atomic
from harness.agent.runtime import Task
from harness.atomic import OutputError, append_lines, write_text
from harness.cli import main
from harness.cli.transcripts import import_command
from harness.distribute.pool import WorkerDied, WorkerPool
from harness.exitcodes import ExitCode
from harness.policies import get_scheduler
from harness.reproducers.file import ReproducerError, load
from harness.run import run
from harness.scenario import ScenarioError, find_scenario, scenario_from_data
from harness.sweep import grid, sweep

ROOT = Path(__file__).resolve().parents[2]
REGRESSIONS = sorted((ROOT / "fixtures" / "regressions").glob("*.json"))
CHAT = ROOT / "tests" / "transcripts" / "data" / "openai_chat.json"
TINY = {"name": "tiny", "description": "one search", "batches": [
    {"calls": [{"id": "a", "name": "web_search", "arguments": '{"query": "x"}'}]}]}
LOOP = {"name": "loop", "description": "a model", "model": {
    "task": "t", "rules": [{"action": "final_answer", "text": "done"}]}}


def _cli(*args: str, command: Any = main) -> tuple[int, str]:
    result = CliRunner().invoke(command, list(args))
    output = result.output  # stdout and stderr, as a terminal shows them
    assert "Traceback" not in output and result.exit_code != ExitCode.HARNESS_BUG, output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, output


def _toml(data: dict[str, Any]) -> str:
    import tomli_w

    return tomli_w.dumps(data)


# --- bad input: exit 2 ---------------------------------------------------------------------------

def test_a_reproducer_with_a_byte_that_is_not_utf8_is_a_clear_error(tmp_path: Path) -> None:
    raw = REGRESSIONS[0].read_bytes()
    bad = tmp_path / "bad.json"
    bad.write_bytes(raw[:120] + b"\xff" + raw[120:])
    with pytest.raises(ReproducerError, match=r"bad\.json: \(file\): expected UTF-8 text, got byte 0xff at offset 120"):
        load(bad)
    code, output = _cli("replay", str(bad))
    assert code == ExitCode.USAGE_ERROR and output.count("\n") == 1, output


@pytest.mark.parametrize("name", ["a\x00b", "line\nbreak", "\x1b[2Jwiped", "del\x7f"])
def test_a_scenario_name_with_a_control_character_is_refused(name: str, tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="name: expected a name without control characters"):
        scenario_from_data({**TINY, "name": name}, "s.toml")
    path = tmp_path / "s.toml"
    path.write_text(_toml({**TINY, "name": name}))
    code, output = _cli("run", str(path), "--scheduler", "serial")
    assert code == ExitCode.USAGE_ERROR and "expected a name without control characters" in output, output


def test_ordinary_names_still_load() -> None:
    for name in ("tiny", "查一下", "a b/c..d", "emoji-✓"):
        assert scenario_from_data({**TINY, "name": name}, "s.toml").name == name


def test_lone_surrogates_in_an_imported_transcript_are_the_transcripts_problem(tmp_path: Path) -> None:
    transcript = tmp_path / "sur.json"
    transcript.write_text('[{"role": "user", "content": "hi"}, {"role": "assistant", "content": null, "tool_calls": '
                          '[{"id": "c1", "type": "function", "function": {"name": "web_search", "arguments": '
                          '"{\\"query\\": \\"\\\\ud800\\"}"}}]}]')
    code, output = _cli("openai", str(transcript), command=import_command)
    assert code == ExitCode.USAGE_ERROR, output
    assert "sur.json: carries text a scenario cannot hold" in output and "lone surrogates" in output, output


def test_an_imported_transcripts_name_with_a_control_character_asks_for_name(tmp_path: Path) -> None:
    transcript = tmp_path / "chat\x01.json"
    transcript.write_bytes(CHAT.read_bytes())
    code, output = _cli("openai", str(transcript), command=import_command)
    assert code == ExitCode.USAGE_ERROR and "give another with --name" in output, output
    code, output = _cli("openai", str(transcript), "--name", "chat", command=import_command)
    assert code == 0 and 'name = "chat"' in output


class _NotALoop:
    """A callable that is no loop policy: calling it with a task raises, or returns no generator."""

    name = "not-a-loop"

    def __init__(self, returns: Any = None) -> None:
        self.returns = returns

    def __call__(self, task: Task) -> Any:
        if self.returns is None:
            raise TypeError("the first argument must be callable")
        return self.returns


@pytest.mark.parametrize("policy, detail", [(_NotALoop(), "calling the loop policy raised TypeError"),
                                            (_NotALoop(42), "the loop policy returned 42, not a generator")])
def test_a_loop_that_is_not_a_loop_policy_is_a_loop_error(policy: Any, detail: str) -> None:
    """Before: the TypeError escaped the run (exit 70), and a policy returning 42 was blamed on the scheduler."""
    scenario = scenario_from_data(LOOP, "loop.toml")
    assert scenario.agent is not None
    scenario = dataclasses.replace(scenario, agent=dataclasses.replace(scenario.agent, policy=policy))
    result = run(scenario, get_scheduler("serial"), 3)
    assert result.agent is not None and result.agent.status == "loop-error", result.agent
    assert detail in (result.agent.detail or "")


def test_a_file_name_that_is_not_utf8_prints_on_a_strict_utf8_stdout(tmp_path: Path) -> None:
    """`--format json` keeps the name as a JSON escape of the character Python gave it (exit 0, valid JSON)."""
    name = os.fsdecode(b"x\xff.toml")
    (tmp_path / name).write_text(_toml(TINY))
    for command in ("run", "explore"):
        done = subprocess.run([sys.executable, "-m", "harness", command, name, "--scheduler", "serial", "--format",
                               "json"], cwd=tmp_path, capture_output=True, timeout=120,
                              env={**os.environ, "PYTHONIOENCODING": "utf-8:strict", "PYTHONPATH": str(ROOT)})
        assert done.returncode == 0 and not done.stderr, done.stderr
        document = json.loads(done.stdout.decode("utf-8"))
        assert name in json.dumps(document, ensure_ascii=False) or document["scenario"] == "tiny"


# --- files that cannot be written: exit 74, nothing torn --------------------------------------------

class _Full:
    """A file on a disk that fills up: the first write goes through halfway, then ENOSPC."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def write(self, data: Any) -> int:
        self._real.write(data[: len(data) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def __enter__(self) -> _Full:
        return self

    def __exit__(self, *exc: object) -> None:
        self._real.close()


@pytest.fixture
def disk_full(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file harness.atomic writes runs out of space part-way."""
    real = os.fdopen
    monkeypatch.setattr(harness.atomic.os, "fdopen", lambda *a, **k: _Full(real(*a, **k)))


def _untouched(directory: Path, before: dict[str, bytes]) -> None:
    now = {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}
    assert now == before, sorted(set(now) ^ set(before)) or "a file changed"


@pytest.mark.usefixtures("disk_full")
@pytest.mark.parametrize("args", [
    ("run", "config-clobber", "--scheduler", "parallel", "--out", "{d}"),
    ("replay", str(REGRESSIONS[0]), "--out", "{d}"),
    ("explore", "config-clobber", "--scheduler", "parallel", "--runs", "5", "--save-dir", "{d}"),
    ("compare", "config-clobber", "--schedulers", "serial,parallel", "--runs", "2", "--out", "{d}"),
    ("sweep", "--scenarios", "config-clobber", "--schedulers", "serial", "--runs", "2", "--processes", "1",
     "--csv", "{d}/table.csv"),
], ids=["run", "replay", "explore", "compare", "sweep-csv"])
def test_a_full_disk_is_an_io_error_and_tears_nothing(args: tuple[str, ...], tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    old = {"run.json": b"old run\n", "table.csv": b"old,table\n", "summary.json": b"{}\n"}
    for name, data in old.items():
        (out / name).write_bytes(data)
    code, output = _cli(*(arg.replace("{d}", str(out)) for arg in args))
    assert code == ExitCode.IO_ERROR, output
    assert output.splitlines()[-1].startswith("harness: ") and "cannot write: No space left on device" in output
    _untouched(out, old)


def test_a_full_disk_under_sweep_out_keeps_the_rows_already_there(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "s.jsonl"
    assert _cli("sweep", "--scenarios", "config-clobber", "--schedulers", "serial", "--runs", "2", "--processes",
                "1", "--out", str(out))[0] == 0
    before = out.read_bytes()
    real_open = Path.open

    def full_open(self: Path, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        file = real_open(self, mode, *args, **kwargs)
        return _Full(file) if self == out and "a" in mode else file

    monkeypatch.setattr(Path, "open", full_open)
    code, output = _cli("sweep", "--scenarios", "config-clobber", "--schedulers", "serial", "--runs", "4",
                        "--processes", "1", "--out", str(out))
    assert code == ExitCode.IO_ERROR and f"{out}: cannot write: No space left on device" in output, output
    assert out.read_bytes() == before  # the half-written line was cut back: no torn row


@pytest.mark.parametrize("target", ["/proc/harness-test/out", "/sys/harness-test/out", "/proc/version"])
def test_paths_under_proc_and_sys_are_clean_errors(target: str, tmp_path: Path) -> None:
    for args in (("run", "config-clobber", "--scheduler", "serial", "--out", target),
                 ("sweep", "--scenarios", "config-clobber", "--schedulers", "serial", "--runs", "1",
                  "--processes", "1", "--out", target),
                 ("sweep", "--scenarios", "config-clobber", "--schedulers", "serial", "--runs", "1",
                  "--processes", "1", "--csv", target)):
        code, output = _cli(*args)
        assert code in (ExitCode.USAGE_ERROR, ExitCode.IO_ERROR), output
    code, output = _cli("openai", str(CHAT), "--out", target, "--force", command=import_command)
    assert code in (ExitCode.USAGE_ERROR, ExitCode.IO_ERROR), output


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_directory_is_an_io_error(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "summary.json").write_text("{}\n")
    locked.chmod(0o555)
    try:
        code, output = _cli("compare", "config-clobber", "--schedulers", "serial", "--runs", "1", "--out", str(locked))
        assert code in (ExitCode.USAGE_ERROR, ExitCode.IO_ERROR), output
        assert [p.name for p in locked.iterdir()] == ["summary.json"]
    finally:
        locked.chmod(0o755)


def test_the_writer_replaces_whole_or_not_at_all(tmp_path: Path, disk_full: None) -> None:
    path = tmp_path / "f.txt"
    path.write_text("old\n")
    path.chmod(0o640)
    with pytest.raises(OutputError, match=r"f\.txt: cannot write: No space left on device"):
        write_text(path, "new " * 1000)
    assert path.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_the_writer_keeps_a_files_mode(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("old\n")
    path.chmod(0o640)
    write_text(path, "new\n")
    assert path.read_text() == "new\n" and path.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_an_append_that_fails_part_way_is_cut_back(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1}\n')
    with path.open("ab", buffering=0) as raw, pytest.raises(OutputError):
        append_lines(_Full(raw), path, ['{"a": 2}', '{"a": 3}'])
    assert path.read_text() == '{"a": 1}\n'


# --- import: no FIFO, no overwriting what it did not write --------------------------------------

@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_import_refuses_a_fifo_instead_of_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "chat.json"
    os.mkfifo(fifo)
    done = subprocess.run([sys.executable, "-m", "harness", "import", "openai", str(fifo)], capture_output=True,
                          text=True, timeout=60, cwd=ROOT)
    assert done.returncode == ExitCode.USAGE_ERROR and "expected a regular file, got a FIFO" in done.stderr


def test_import_out_overwrites_only_what_an_import_wrote(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    code, output = _cli("openai", str(CHAT), "--out", str(notes), command=import_command)
    assert code == ExitCode.USAGE_ERROR and "give --force to overwrite it" in output, output
    assert notes.read_text() == "my notes\n"
    scenario = tmp_path / "chat.toml"
    assert _cli("openai", str(CHAT), "--out", str(scenario), command=import_command)[0] == 0
    assert scenario.read_text().startswith("# Written by `harness import openai`")
    assert _cli("openai", str(CHAT), "--out", str(scenario), command=import_command)[0] == 0  # its own file
    assert _cli("openai", str(CHAT), "--out", str(notes), "--force", command=import_command)[0] == 0
    assert find_scenario(str(notes)).name == "openai_chat"


# --- Dask and worker processes -------------------------------------------------------------------

def test_an_address_dask_cannot_parse_prints_no_traceback() -> None:
    pytest.importorskip("distributed")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "harness", "sweep", "--scenarios", "config-clobber", "--runs", "1",
                           "--dask", "::::"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == ExitCode.USAGE_ERROR and "cannot reach the Dask scheduler at ::::" in done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr
    assert time.monotonic() - started < 15  # no 20 s wait for a half-built client's finaliser


def _slow(task: int) -> Any:
    yield os.getpid()
    if task == 1:
        os._exit(3)
    time.sleep(600)


def test_a_worker_that_dies_mid_task_is_an_error_not_a_hang() -> None:
    started = time.monotonic()
    with pytest.raises(WorkerDied, match="exit code 3"), WorkerPool(_slow, 2) as pool:
        for _ in pool.as_completed([0, 1]):
            pass
    assert time.monotonic() - started < 30  # the sleeping worker was killed, not waited for


def test_rows_come_back_one_by_one_from_the_workers() -> None:
    """A sweep killed often keeps every cell finished before each kill: rows reach --out (and the
    progress callback) one at a time, not a chunk at a time."""
    cells = grid(["config-clobber"], ["serial", "parallel"], range(1, 9))
    seen: list[int] = []
    rows = sweep(cells, processes=2, chunk_size=8, on_progress=lambda done, total: seen.append(done))
    assert seen == list(range(len(cells) + 1)) and rows == sweep(cells, processes=1)


_WATCHER = """
import sys, time
from harness.distribute.pool import WorkerPool
from tests.containment.test_exits import _slow
with WorkerPool(_slow, 2) as pool:
    for pid in pool.as_completed([0, 2]):
        print(pid, flush=True)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_workers_die_with_a_killed_parent() -> None:
    parent = subprocess.Popen([sys.executable, "-c", _WATCHER], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        workers = [int(parent.stdout.readline()) for _ in range(2)]
        assert all(_alive(pid) for pid in workers)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in workers), "a worker outlived its killed parent"


def test_import_out_overwrites_a_scenario_an_earlier_import_wrote(tmp_path: Path) -> None:
    """Files imported before the first line said so are recognised by their description."""
    old = tmp_path / "old.toml"
    assert _cli("openai", str(CHAT), "--out", str(old), command=import_command)[0] == 0
    old.write_text(old.read_text().split("\n", 1)[1])  # as an import wrote it before the header line
    assert _cli("openai", str(CHAT), "--out", str(old), command=import_command)[0] == 0
    mine = tmp_path / "mine.toml"
    mine.write_text('name = "mine"\ndescription = "my own scenario"\n')
    assert _cli("openai", str(CHAT), "--out", str(mine), command=import_command)[0] == ExitCode.USAGE_ERROR


def test_a_file_written_through_a_symlink_replaces_what_the_link_names(tmp_path: Path) -> None:
    """As open(path, "w") would: the link stays a link, its target gets the text (found in review:
    the rename replaced the link itself and left the target as it was)."""
    from harness.atomic import write_text

    (tmp_path / "real.txt").write_text("old\n")
    (tmp_path / "link.txt").symlink_to("real.txt")
    write_text(tmp_path / "link.txt", "new\n")
    assert (tmp_path / "link.txt").is_symlink() and (tmp_path / "real.txt").read_text() == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.txt", "real.txt"]
