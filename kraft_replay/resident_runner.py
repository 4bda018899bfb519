"""The resident command runner's record and life: where it keeps its record, socket and log (the server directory,
``lakehouse.server_dir``), which package files it serves (``sources_stamp``), its start and its stop. What it runs
is ``kraft_replay.command_runner``; what hands it commands is ``kraft_replay.launcher``.

Only the standard library: the entry point reads the record before it imports anything else.
"""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from lakehouse.server_dir import end_process, process_alive, server_dir

RUNNER_FILE = "commands.json"  # the runner's record: pid, Python, socket, sources stamp
RUNNER_SOCKET = "commands.sock"
RUNNER_LOG = "commands.log"
RUNNER_MODULE = "kraft_replay.command_runner"  # what the runner's process runs (``python -m``)
NO_RUNNER_ENV = "KRAFT_REPLAY_NO_RUNNER"
# the packages a command imports: the runner serves only the files it imported
PACKAGES = ("kraft_replay", "lakehouse", "records", "replay", "schemas", "simulator")
PACKAGE_ROOT = Path(__file__).resolve().parent.parent
STANDARD_STREAMS = (0, 1, 2)  # handed to the runner's child with each command
# the signals the caller forwards to the runner's child (Ctrl-C, kill, a closed terminal, Ctrl-\); the ones the caller
# ignores (a shell starts a background job with SIGINT and SIGQUIT ignored) the child ignores too, as a command in its
# own process would
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
LENGTH = struct.Struct(">I")  # a request's length, before its JSON
START_TIMEOUT = 60.0  # seconds for the runner to import everything and listen
STOP_TIMEOUT = 10.0  # seconds for the runner to end after SIGTERM before SIGKILL


def sources_stamp() -> str:
    """The package files as they are on disk now: where, how many, and the newest modification time (ns)."""
    count, newest = 0, 0
    for package in PACKAGES:
        for root, directories, files in os.walk(PACKAGE_ROOT / package):
            directories[:] = [name for name in directories if name != "__pycache__"]
            for name in files:
                count += 1
                newest = max(newest, os.stat(os.path.join(root, name)).st_mtime_ns)
    return f"{PACKAGE_ROOT}:{count}:{newest}"


def runner_record(directory: Path) -> dict[str, Any] | None:
    """The running runner's record in ``directory``, or None (none recorded, or its process is gone)."""
    try:
        record = json.loads((directory / RUNNER_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or not isinstance(record.get("pid"), int) or not process_alive(record["pid"]):
        return None
    return record


def serves_this_installation(record: dict[str, Any]) -> bool:
    """Whether the runner imported what a command of this process would: the same Python and package files."""
    return record.get("python") == sys.executable and record.get("sources") == sources_stamp()


def write_record(directory: Path, record: dict[str, Any]) -> None:
    """Replace the record at once (a reader never sees half of it)."""
    staged = directory / f".{RUNNER_FILE}.{os.getpid()}"
    staged.write_text(json.dumps(record, indent=2) + "\n")
    staged.replace(directory / RUNNER_FILE)


def start_runner(directory: Path | None = None) -> dict[str, Any]:
    """The running runner's record, or that of one started now in ``directory`` (the server directory by default):
    a detached process logging to ``commands.log``, waited for until it listens."""
    directory = directory or server_dir()
    record = runner_record(directory)
    if record is not None and serves_this_installation(record):
        return record
    if record is not None:
        stop_runner(directory)  # another installation's or older files': replaced
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / RUNNER_LOG).open("ab") as log:
        process = subprocess.Popen([sys.executable, "-m", RUNNER_MODULE, str(directory)], stdin=subprocess.DEVNULL,
                                   stdout=log, stderr=log, start_new_session=True, cwd=directory)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        record = runner_record(directory)
        if record is not None and record.get("pid") == process.pid:
            return record
        if process.poll() is not None:
            break
        time.sleep(0.1)
    if process.poll() is None:
        process.kill()
    raise RuntimeError(f"the command runner did not start: see {directory / RUNNER_LOG}")


def stop_runner(directory: Path | None = None) -> dict[str, Any] | None:
    """Stop the runner of ``directory`` (the server directory by default); its record, None when none ran. The
    commands it is running go on to their end."""
    directory = directory or server_dir()
    record = runner_record(directory)
    if record is not None:
        end_process(int(record["pid"]), STOP_TIMEOUT)
    (directory / RUNNER_FILE).unlink(missing_ok=True)
    (directory / RUNNER_SOCKET).unlink(missing_ok=True)
    return record
