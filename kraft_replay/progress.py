"""Progress on the terminal while Spark works: the stage running, how long it has run, and Spark's tasks.

Long commands (ingest, replay, run, demo, report) pass a ``stages`` callback down to the library, which names
each stage as it starts. On a terminal a spinner shows it (with the running Spark stage's tasks done / total
when the session is a local one), and each finished stage stays on screen with its duration. Nothing at all is
written when stdout or stderr is not a terminal (pipes, files, CI logs, tests) or with ``--quiet``: the
command's output is then exactly its answer, without escape codes.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.markup import escape


def _interactive(console: Console | None) -> bool:
    if console is not None:
        return console.is_terminal
    return sys.stdout.isatty() and sys.stderr.isatty()


def _spark_tasks(spark: Any) -> str:
    """`Spark stage 12: 3/8 tasks` for the running stage of a local session; '' when unknown (Spark Connect)."""
    try:
        tracker = spark.sparkContext.statusTracker()
        stages = [tracker.getStageInfo(i) for i in tracker.getActiveStageIds()]
    except Exception:  # Spark Connect has no SparkContext; a stopped session has no tracker
        return ""
    stages = [s for s in stages if s is not None]
    if not stages:
        return ""
    stage = max(stages, key=lambda s: s.stageId)
    return f"Spark stage {stage.stageId}: {stage.numCompletedTasks}/{stage.numTasks} tasks"


class Stages:
    """The callback long operations call with each stage's name; ``attach`` a session to see its tasks."""

    def __init__(self, show: Callable[[str], None] | None = None) -> None:
        self._show = show
        self.spark: Any = None

    def __call__(self, stage: str) -> None:
        if self._show is not None:
            self._show(stage)

    def attach(self, spark: Any) -> Any:
        """Follow this session's running Spark stage from now on; returns the session."""
        self.spark = spark
        return spark


@contextmanager
def stage_progress(quiet: bool = False, console: Console | None = None, poll_seconds: float = 0.5
                   ) -> Iterator[Stages]:
    """Yield the ``Stages`` callback: a spinner on a terminal, a no-op otherwise or when ``quiet``."""
    if quiet or not _interactive(console):
        yield Stages()
        return
    out = console or Console(stderr=True)
    current: dict[str, Any] = {"stage": "", "since": time.monotonic()}
    first = time.monotonic()
    stop = threading.Event()
    lock = threading.Lock()

    with out.status("starting", spinner="dots") as status:

        def show() -> None:
            with lock:
                if not current["stage"]:
                    return
                elapsed = time.monotonic() - current["since"]
                tasks = _spark_tasks(stages.spark) if stages.spark is not None else ""
                detail = f" — {tasks}" if tasks else ""
                status.update(f"{escape(current['stage'])} [dim]({elapsed:.0f}s{detail})[/dim]")

        def finish_stage() -> None:
            if current["stage"]:
                took = time.monotonic() - current["since"]
                out.print(f"[green]✓[/green] {escape(current['stage'])} [dim]({took:.1f}s)[/dim]", highlight=False)

        def start(stage: str) -> None:
            with lock:
                finish_stage()
                current["stage"], current["since"] = stage, time.monotonic()
            show()

        def poll() -> None:
            while not stop.wait(poll_seconds):
                show()

        stages = Stages(start)
        ticker = threading.Thread(target=poll, name="kraft-replay-progress", daemon=True)
        ticker.start()
        try:
            yield stages
        finally:
            stop.set()
            ticker.join()
            with lock:
                finish_stage()
    out.print(f"[dim]done in {time.monotonic() - first:.1f}s[/dim]", highlight=False)


__all__ = ["Stages", "stage_progress"]
