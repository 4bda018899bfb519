"""Several independent Spark actions at once, from one session: a replay's small tables are written in parallel,
because each small write is mostly fixed latency (planning, Delta's log, the commit) that leaves the cores idle.

Each action runs under PySpark's ``inheritable_thread_target``: its own JVM thread (pinned-thread mode) with the
caller's local properties, or the caller's tags on Spark Connect, but no active session (it is per thread): an
action is given its session, never looks it up. Runtime SQL settings are session-wide: actions set the ones they
need with ``lakehouse.spark_settings.spark_conf``, whose blocks of one value may overlap (the last to end restores it);
actions that run at once never need different values of one setting.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from pyspark import inheritable_thread_target
from pyspark.sql import SparkSession

Result = TypeVar("Result")
THREADS = 4  # small writes are latency-bound: four overlap well on two cores, and hold little memory each


def run_concurrently(spark: SparkSession, actions: Mapping[str, Callable[[], Result]], threads: int = THREADS
                     ) -> dict[str, Result]:
    """Run ``actions`` (name → action) on up to ``threads`` threads; name → result. Every action runs even when
    another fails; then the first failure in ``actions``' order is raised."""
    inherit = _inheriting(spark)
    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(actions))),
                            thread_name_prefix="kraft-replay-writer") as pool:
        futures = {name: pool.submit(inherit(action)) for name, action in actions.items()}
    return {name: future.result() for name, future in futures.items()}


def run_ahead(spark: SparkSession, action: Callable[[], Result]) -> Future[Result]:
    """``action`` started now on a thread of its own (as ``run_concurrently``'s actions run), its result the future's:
    something needed later, run while the caller does other work. It runs to its end even when the caller no longer
    waits for it."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kraft-replay-ahead")
    try:
        return pool.submit(_inheriting(spark)(action))
    finally:
        pool.shutdown(wait=False)  # the thread ends with the action


def _inheriting(spark: SparkSession) -> Callable[[Callable[[], Result]], Callable[[], Result]]:
    """What makes an action run on another thread as on the caller's (``inheritable_thread_target``)."""
    inherit = inheritable_thread_target(spark)  # the session itself when threads are not pinned: nothing to carry
    return inherit if callable(inherit) else _as_is


def _as_is(action: Callable[[], Result]) -> Callable[[], Result]:
    return action


__all__ = ["THREADS", "run_ahead", "run_concurrently"]
