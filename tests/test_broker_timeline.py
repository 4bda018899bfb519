"""The one broker timeline: each broker's intervals of one state, and the vocabularies derived from its states."""

from __future__ import annotations

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from replay.audit.health import BROKER_STATE_LABELS
from replay.core.broker_timeline import (
    ACTIVE,
    BROKER_STATES,
    CONTROLLED_SHUTDOWN,
    FENCED,
    UNREGISTERED,
    broker_fenced,
    broker_timeline,
    is_active,
    is_unfenced,
)

pytestmark = pytest.mark.spark

HISTORY_SCHEMA = ("cluster_id STRING, broker_id INT, fenced BOOLEAN, in_controlled_shutdown BOOLEAN, "
                  "valid_from_offset BIGINT, valid_to_offset BIGINT, valid_from_time_ms BIGINT, "
                  "valid_to_time_ms BIGINT, cause_offset BIGINT, cause_type STRING")


def _history(spark: SparkSession) -> DataFrame:
    """Broker 1: registered fenced at 3, unfenced at 5, re-registers unfenced at 8 (no state change), shuts down
    at 10, fenced at 12, unregistered at 15, registered again at 20. Broker 2: registered at 0, never changes."""
    rows = [("c", 1, True, False, 3, 5, 30, 50, 3, "RegisterBrokerRecord"),
            ("c", 1, False, False, 5, 8, 50, 80, 5, "UnfenceBrokerRecord"),
            ("c", 1, False, False, 8, 10, 80, 100, 8, "RegisterBrokerRecord"),
            ("c", 1, False, True, 10, 12, 100, 120, 10, "BrokerRegistrationChangeRecord"),
            ("c", 1, True, True, 12, 15, 120, 150, 12, "FenceBrokerRecord"),
            ("c", 1, True, False, 20, None, 200, None, 20, "RegisterBrokerRecord"),
            ("c", 2, False, None, 0, None, 0, None, 0, "RegisterBrokerRecord")]
    return spark.createDataFrame(rows, HISTORY_SCHEMA)


def _intervals(timeline: DataFrame, broker: int) -> list[tuple]:
    return [(r["state"], r["valid_from_offset"], r["valid_to_offset"], r["cause_offset"], r["cause_type"])
            for r in timeline.where(F.col("broker_id") == broker).orderBy("valid_from_offset").collect()]


def test_the_timeline_covers_every_offset_with_one_state_per_interval(spark: SparkSession) -> None:
    timeline = broker_timeline(_history(spark))
    assert _intervals(timeline, 1) == [
        (UNREGISTERED, 0, 3, None, None),
        (FENCED, 3, 5, 3, "RegisterBrokerRecord"),
        (ACTIVE, 5, 10, 5, "UnfenceBrokerRecord"),  # the re-registration at 8 changes no state: one interval
        (CONTROLLED_SHUTDOWN, 10, 12, 10, "BrokerRegistrationChangeRecord"),
        (FENCED, 12, 15, 12, "FenceBrokerRecord"),  # fenced wins over in controlled shutdown
        (UNREGISTERED, 15, 20, 15, "UnregisterBrokerRecord"),
        (FENCED, 20, None, 20, "RegisterBrokerRecord")]
    # an absent inControlledShutdown is false; registered from offset 0: no interval before it
    assert _intervals(timeline, 2) == [(ACTIVE, 0, None, 0, "RegisterBrokerRecord")]
    times = timeline.where("broker_id = 1").orderBy("valid_from_offset").select(
        "valid_from_time_ms", "valid_to_time_ms").collect()
    assert [tuple(r) for r in times][:3] == [(None, 30), (30, 50), (50, 100)]


def test_from_the_first_registration_on(spark: SparkSession) -> None:
    timeline = broker_timeline(_history(spark), before_registration=False)
    assert [i[:3] for i in _intervals(timeline, 1)][:2] == [(FENCED, 3, 5), (ACTIVE, 5, 10)]


def test_a_history_without_causes_still_has_a_timeline(spark: SparkSession) -> None:
    bare = _history(spark).drop("cause_offset", "cause_type")
    assert [i[:3] for i in _intervals(broker_timeline(bare), 1)] == [
        i[:3] for i in _intervals(broker_timeline(_history(spark)), 1)]


def test_kafkas_predicates_and_the_replica_column_read_the_state(spark: SparkSession) -> None:
    states = spark.createDataFrame([(s,) for s in BROKER_STATES], "state STRING")
    read = {r["state"]: (r["active"], r["unfenced"], r["fenced"]) for r in states.select(
        "state", is_active(F.col("state")).alias("active"), is_unfenced(F.col("state")).alias("unfenced"),
        broker_fenced(F.col("state")).alias("fenced")).collect()}
    assert read == {ACTIVE: (True, True, False), CONTROLLED_SHUTDOWN: (False, True, False),
                    FENCED: (False, False, True), UNREGISTERED: (False, False, None)}


def test_the_report_names_every_state_once() -> None:
    assert tuple(BROKER_STATE_LABELS) == BROKER_STATES
    assert len(set(BROKER_STATE_LABELS.values())) == len(BROKER_STATES)
