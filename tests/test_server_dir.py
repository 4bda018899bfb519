"""Ending a resident process (``lakehouse.server_dir.end_process``): SIGTERM, then SIGKILL when it is ignored."""

from __future__ import annotations

import subprocess
import sys
import time

from lakehouse.server_dir import end_process, process_alive

IGNORES_SIGTERM = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); "
                   "time.sleep(60)")
ENDS_ON_SIGTERM = "import time; print('ready', flush=True); time.sleep(60)"


def _started(code: str) -> subprocess.Popen[str]:
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                               start_new_session=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    return process


def test_a_process_that_ignores_sigterm_is_killed_after_the_timeout() -> None:
    process = _started(IGNORES_SIGTERM)
    began = time.monotonic()
    end_process(process.pid, 0.5, group=True)
    assert not process_alive(process.pid)
    assert process.wait(timeout=5) == -9
    assert 0.5 <= time.monotonic() - began < 5


def test_a_process_that_ends_on_sigterm_is_not_killed() -> None:
    process = _started(ENDS_ON_SIGTERM)
    end_process(process.pid, 10.0)
    assert not process_alive(process.pid)
    assert process.wait(timeout=5) == -15
