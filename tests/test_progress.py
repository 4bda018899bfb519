"""kraft_replay.progress: the stages a command shows on a terminal, and silence otherwise."""

from __future__ import annotations

import io
import time

from rich.console import Console

from kraft_replay.progress import stage_progress


def test_progress_on_a_terminal_names_each_stage_and_its_time() -> None:
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=100)
    with stage_progress(console=console, poll_seconds=0.02) as stages:
        stages("decoding segments")
        time.sleep(0.1)
        stages("writing partition_history [x]")
    text = screen.getvalue()
    assert "\x1b[" in text  # a live display
    assert "decoding segments" in text and "writing partition_history [x]" in text  # markup-like names stay
    assert "✓\x1b[0m decoding segments" in text and "done in " in text


def test_progress_is_silent_when_quiet_or_not_a_terminal() -> None:
    for console, quiet in ((Console(file=io.StringIO(), force_terminal=True), True),
                           (Console(file=io.StringIO(), force_terminal=False), False)):
        with stage_progress(quiet=quiet, console=console) as stages:
            stages("decoding")
        assert console.file.getvalue() == ""  # type: ignore[attr-defined]
