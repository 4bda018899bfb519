"""lakehouse.concurrent_jobs: independent Spark actions at once from one session, each in a thread that carries
the caller's local properties; every action runs, then the first failure is raised."""

from __future__ import annotations

import threading

import pytest
from pyspark.sql import SparkSession

from lakehouse.concurrent_jobs import run_concurrently
from lakehouse.spark_settings import spark_conf

pytestmark = pytest.mark.spark

PROPERTY = "kraft.replay.test.caller"


def test_actions_run_in_threads_with_the_callers_properties(spark: SparkSession) -> None:
    context = spark.sparkContext
    context.setLocalProperty(PROPERTY, "the replay")
    seen: dict[str, tuple[str | None, str]] = {}

    def action(n: int) -> int:
        seen[str(n)] = (context.getLocalProperty(PROPERTY), threading.current_thread().name)
        return spark.range(n).count()

    try:
        results = run_concurrently(spark, {str(n): (lambda n=n: action(n)) for n in (5, 10, 15, 20, 25)}, threads=3)
    finally:
        context.setLocalProperty(PROPERTY, None)  # type: ignore[arg-type]
    assert list(results.items()) == [("5", 5), ("10", 10), ("15", 15), ("20", 20), ("25", 25)]
    assert {prop for prop, _ in seen.values()} == {"the replay"}
    assert all(name.startswith("kraft-replay-writer") for _, name in seen.values())
    assert len({name for _, name in seen.values()}) <= 3


def test_every_action_runs_and_the_first_failure_in_order_is_raised(spark: SparkSession) -> None:
    ran: list[str] = []

    def failing(name: str) -> int:
        ran.append(name)
        raise ValueError(f"{name} failed")

    def counting(name: str) -> int:
        ran.append(name)
        return spark.range(3).count()

    actions = {"a": lambda: counting("a"), "b": lambda: failing("b"), "c": lambda: failing("c"),
               "d": lambda: counting("d")}
    with pytest.raises(ValueError, match=r"^b failed$"):
        run_concurrently(spark, actions, threads=2)
    assert sorted(ran) == ["a", "b", "c", "d"]


def test_a_setting_held_by_overlapping_actions_is_restored_by_the_last_one(spark: SparkSession) -> None:
    """Two actions set the same runtime setting (``spark_conf``); the first ends while the second still runs: the
    second still sees the setting, and only after both is it unset again. A nested block of another value is
    restored to the outer one's."""
    key = "spark.kraft.replay.test.setting"
    first_in, second_in, first_done = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, str | None] = {}

    def first() -> str | None:
        try:
            with spark_conf(spark, key, "on"):
                first_in.set()
                second_in.wait(60)
                return spark.conf.get(key, None)
        finally:
            first_done.set()

    def second() -> str | None:
        first_in.wait(60)
        with spark_conf(spark, key, "on"):
            second_in.set()
            first_done.wait(60)
            seen["after the first ended"] = spark.conf.get(key, None)
            with spark_conf(spark, key, "nested"):
                seen["nested"] = spark.conf.get(key, None)
            return spark.conf.get(key, None)

    assert spark.conf.get(key, None) is None
    assert run_concurrently(spark, {"first": first, "second": second}, threads=2) == {"first": "on", "second": "on"}
    assert seen == {"after the first ended": "on", "nested": "nested"}
    assert spark.conf.get(key, None) is None
