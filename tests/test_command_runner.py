"""The resident command runner (``kraft_replay.command_runner``) and the entry point that hands it commands
(``kraft_replay.launcher``): real processes, a real Unix socket, commands typed as a user types them, compared with
the same commands run in their own process (``KRAFT_REPLAY_NO_RUNNER=1``). No Spark: the runner is Python only."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

import pytest

from kraft_replay.resident_runner import (
    NO_RUNNER_ENV,
    RUNNER_FILE,
    RUNNER_LOG,
    RUNNER_SOCKET,
    sources_stamp,
    start_runner,
    stop_runner,
)
from kraft_replay.sample import SAMPLE_DIR
from lakehouse.server_dir import SERVER_DIR_ENV, process_alive
from tests.conftest import REPO_ROOT

# one worker runs the module in order: its tests share one runner, the last one stops it
pytestmark = pytest.mark.xdist_group("command-runner")
STARTS_WITHIN = 120  # seconds for a command to start on a loaded machine (imports in its own process)
SEGMENT = next((SAMPLE_DIR / "__cluster_metadata-0").glob("*.log"))


def _typed(directory: Path, *args: str, cwd: Path, runner: bool = True, **env: str) -> subprocess.CompletedProcess[str]:
    """``kraft-replay ARGS`` through the entry point, with the runner of ``directory`` (or in its own process)."""
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT), SERVER_DIR_ENV: str(directory), **env}
    environment.pop(NO_RUNNER_ENV, None)
    if not runner:
        environment[NO_RUNNER_ENV] = "1"
    return subprocess.run([sys.executable, "-m", "kraft_replay.launcher", *args], capture_output=True, text=True,
                          env=environment, cwd=cwd, timeout=300, check=False)


def _children(directory: Path) -> list[tuple[int, str]]:
    """The children the runner's log names: (pid, what it ran)."""
    found = []
    for line in (directory / RUNNER_LOG).read_text().splitlines():
        _stamp, kind, rest = line.split(" ", 2)
        if kind == "child":
            pid, text = rest.split(": ", 1)
            found.append((int(pid), text))
    return found


@pytest.fixture(scope="module")
def runner_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    directory = tmp_path_factory.mktemp("command-runner")
    start_runner(directory)
    try:
        yield directory
    finally:
        stop_runner(directory)


def test_it_records_itself_after_importing_everything(runner_dir: Path) -> None:
    record = json.loads((runner_dir / RUNNER_FILE).read_text())
    assert record["python"] == sys.executable
    assert record["sources"] == sources_stamp() and record["sources"].startswith(f"{REPO_ROOT}:")
    assert record["socket"] == str(runner_dir / RUNNER_SOCKET)
    assert process_alive(record["pid"])
    assert (runner_dir / RUNNER_SOCKET).stat().st_mode & 0o777 == 0o600
    imported = (runner_dir / RUNNER_LOG).read_text().splitlines()[0]
    assert " imported " in imported and "(0 not importable: none)" in imported
    assert start_runner(runner_dir)["pid"] == record["pid"]  # started again: the same runner


def test_a_command_in_the_runners_child_imports_nothing() -> None:
    """What the runner preloads is all a command imports: the product, Spark Connect's client, what the libraries
    import late (typer's option parsing imports pydantic) and the built command line."""
    script = ("import json, sys\n"
              "from kraft_replay.command_runner import preload\n"
              "failed = preload()\n"
              "before = set(sys.modules)\n"
              "from kraft_replay.cli import main\n"
              f"sys.argv = ['kraft-replay', 'dump', {str(SEGMENT)!r}, '--format', 'table']\n"
              "try:\n"
              "    main()\n"
              "except SystemExit as done:\n"
              "    code = done.code\n"
              "print(json.dumps({'failed': failed, 'code': code, 'imported': sorted(set(sys.modules) - before)}),"
              " file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO_ROOT, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, check=False)
    assert "RegisterBrokerRecord" in done.stdout
    assert json.loads(done.stderr.splitlines()[-1]) == {"failed": [], "code": 0, "imported": []}


def test_a_command_answers_as_in_its_own_process(runner_dir: Path, tmp_path: Path) -> None:
    """The child works in the caller's directory (a relative path), writes to the caller's pipes and exits with
    the command's code."""
    relative = tmp_path / "segment.log"
    relative.write_bytes(SEGMENT.read_bytes())
    before = len(_children(runner_dir))
    handed = _typed(runner_dir, "dump", "segment.log", "--format", "table", cwd=tmp_path)
    own = _typed(runner_dir, "dump", "segment.log", "--format", "table", cwd=tmp_path, runner=False)
    assert (handed.returncode, handed.stdout, handed.stderr) == (own.returncode, own.stdout, own.stderr)
    assert handed.returncode == 0 and "RegisterBrokerRecord" in handed.stdout
    assert [text for _pid, text in _children(runner_dir)[before:]] == [
        f"kraft-replay dump segment.log --format table (in {tmp_path})"]


def test_a_failing_command_keeps_its_exit_code_and_the_callers_environment(runner_dir: Path, tmp_path: Path) -> None:
    lake = tmp_path / "no-lake"
    handed = _typed(runner_dir, "state", "--offset", "5", cwd=tmp_path, KRAFT_REPLAY_LAKE=str(lake))
    own = _typed(runner_dir, "state", "--offset", "5", cwd=tmp_path, runner=False, KRAFT_REPLAY_LAKE=str(lake))
    assert (handed.returncode, handed.stdout, handed.stderr) == (own.returncode, own.stdout, own.stderr)
    assert handed.returncode == 2
    assert handed.stderr.strip() == (f"kraft-replay: no table metadata_log in the lake at {lake}: "
                                     "run `kraft-replay ingest` first")


@contextlib.contextmanager
def _sigint(disposition: Callable[[int, FrameType | None], object] | signal.Handlers) -> Iterator[None]:
    """The processes started in the block get SIGINT as ``disposition`` gives it: ignored (``SIG_IGN``: a shell's
    background job) or delivered (Python's handler here, reset to the default by exec: a terminal's foreground job),
    whatever this test process was started with (a CI script run in the background ignores it)."""
    before = signal.signal(signal.SIGINT, disposition)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def _simulating(runner_dir: Path, out: Path, runner: bool) -> subprocess.Popen[str]:
    """``simulate`` of a billion events (minutes of work) typed through the entry point, once it runs (its output
    directory written)."""
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT), SERVER_DIR_ENV: str(runner_dir)}
    environment.pop(NO_RUNNER_ENV, None)
    if not runner:
        environment[NO_RUNNER_ENV] = "1"
    caller = subprocess.Popen([sys.executable, "-m", "kraft_replay.launcher", "simulate", "--out", str(out),
                               "--events", str(10**9)], env=environment, cwd=out.parent, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + STARTS_WITHIN
    while not out.exists() and caller.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # the command runs once it writes its output directory (its imports done)
    assert out.exists(), f"simulate did not start within {STARTS_WITHIN} s"
    return caller


def _interrupted(runner_dir: Path, out: Path, runner: bool) -> tuple[int, str]:
    """That command interrupted as Ctrl-C does it (SIGINT to the process the user started): its exit code and error."""
    with _sigint(signal.default_int_handler):
        caller = _simulating(runner_dir, out, runner)
    caller.send_signal(signal.SIGINT)
    _out, err = caller.communicate(timeout=STARTS_WITHIN)
    return caller.returncode, err


def test_ctrl_c_reaches_the_child(runner_dir: Path, tmp_path: Path) -> None:
    """The entry point forwards the signal to the child, which ends as the command ends in its own process."""
    before = len(_children(runner_dir))
    handed = _interrupted(runner_dir, tmp_path / "handed", runner=True)
    own = _interrupted(runner_dir, tmp_path / "own", runner=False)
    assert handed == own
    assert handed[0] == 130 and handed[1].strip().endswith("kraft-replay: interrupted")
    [(child, text)] = _children(runner_dir)[before:]
    assert text.startswith("kraft-replay simulate --out ")
    assert not process_alive(child)


def test_a_background_job_ignores_ctrl_c_as_in_its_own_process(runner_dir: Path, tmp_path: Path) -> None:
    """Started with SIGINT ignored (``cmd &`` in a script), the child ignores it too; SIGTERM still ends it."""
    before = len(_children(runner_dir))
    with _sigint(signal.SIG_IGN):
        handed = _simulating(runner_dir, tmp_path / "handed", runner=True)
        own = _simulating(runner_dir, tmp_path / "own", runner=False)
    [(child, _text)] = _children(runner_dir)[before:]
    for caller in (handed, own):
        caller.send_signal(signal.SIGINT)
    time.sleep(2)
    assert handed.poll() is None and own.poll() is None and process_alive(child)
    for caller in (handed, own):
        caller.send_signal(signal.SIGTERM)
        caller.communicate(timeout=STARTS_WITHIN)
    assert own.returncode == -signal.SIGTERM
    assert handed.returncode == 1  # the child was killed: no exit code to pass on (``kraft_replay.launcher``)
    deadline = time.monotonic() + 10
    while process_alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not process_alive(child)


def test_older_package_files_are_not_served(runner_dir: Path, tmp_path: Path) -> None:
    """A runner that imported other files than the caller would (an edit, an upgrade) is passed by: the command
    runs in its own process."""
    record_path = runner_dir / RUNNER_FILE
    record = json.loads(record_path.read_text())
    before = len(_children(runner_dir))
    record_path.write_text(json.dumps({**record, "sources": f"{REPO_ROOT}:0:0"}))
    try:
        done = _typed(runner_dir, "schemas", "FenceBrokerRecord", cwd=tmp_path)
    finally:
        record_path.write_text(json.dumps(record))
    assert done.returncode == 0 and json.loads(done.stdout)["name"] == "FenceBrokerRecord"
    assert len(_children(runner_dir)) == before


def test_stop_ends_it_and_is_safe_again(runner_dir: Path, tmp_path: Path) -> None:
    record = json.loads((runner_dir / RUNNER_FILE).read_text())
    assert stop_runner(runner_dir) == record
    assert not process_alive(record["pid"])
    assert not (runner_dir / RUNNER_FILE).exists() and not (runner_dir / RUNNER_SOCKET).exists()
    assert stop_runner(runner_dir) is None
    before = len(_children(runner_dir))
    done = _typed(runner_dir, "schemas", "FenceBrokerRecord", cwd=tmp_path)  # no runner: its own process
    assert done.returncode == 0 and len(_children(runner_dir)) == before
