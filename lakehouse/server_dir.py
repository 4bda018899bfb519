"""Where this machine's resident processes keep their records: the resident Spark server
(``lakehouse.resident_server``) and the resident command runner (``kraft_replay.command_runner``).

Only the standard library: the ``kraft-replay`` entry point (``kraft_replay.launcher``) reads it before it imports
anything else.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

SERVER_DIR_ENV = "KRAFT_REPLAY_SERVER_DIR"


def server_dir() -> Path:
    """``$KRAFT_REPLAY_SERVER_DIR``, else ``kraft-replay/server`` in the user's cache directory."""
    configured = os.environ.get(SERVER_DIR_ENV)
    if configured:
        return Path(configured)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "kraft-replay" / "server"


def process_alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, ended but not yet reaped by its parent, counts as ended)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return True


def end_process(pid: int, timeout: float, *, group: bool = False) -> None:
    """End ``pid`` (its whole process group when ``group``: a JVM and the workers it started): SIGTERM, and SIGKILL
    when it still runs after ``timeout`` seconds; returns once it ended or, after SIGKILL, ``timeout`` more."""
    send = os.killpg if group else os.kill
    for number in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            send(pid, number)
        deadline = time.monotonic() + timeout
        while process_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not process_alive(pid):
            return
