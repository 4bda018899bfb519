"""replay/audit/effective_configs.py: a topic config in force at an offset and where it came from, in Kafka's order
(topic → the active controller's node → cluster default → static server.properties → Kafka's default), on
hand-built ``config_history`` versions, and ``topic_configs_at`` on the audit stories' lake."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from lakehouse.lake import Lake
from lakehouse.log_rows import entries_frame
from lakehouse.tables import CONFIG_HISTORY, spark_schema
from records.kafka_constants import CONFIG_RESOURCE_BROKER, CONFIG_RESOURCE_TOPIC
from records.kafka_json import make_record
from records.kafka_topic_configs import MIN_IN_SYNC_REPLICAS, UNCLEAN_LEADER_ELECTION_ENABLE
from records.model import LogEntry
from replay.audit.effective_configs import (
    active_controllers,
    effective_min_isr,
    unclean_allowed,
    with_effective_configs,
)
from replay.query.state import QueryError
from replay.query.topic_configs import topic_configs_at
from tests.audit_support import AuditStory

pytestmark = pytest.mark.spark

UNCLEAN, MIN_ISR = UNCLEAN_LEADER_ELECTION_ENABLE, MIN_IN_SYNC_REPLICAS


def config_frame(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    """Hand-made ``config_history`` versions, in the table's declared schema (the input of the join under test)."""
    schema = spark_schema(CONFIG_HISTORY)
    return spark.createDataFrame([tuple(row[f.name] for f in schema.fields) for row in rows], schema)


def _version(resource_type: int, resource_name: str, name: str, value: str, start: int, end: int | None = None
             ) -> dict[str, Any]:
    return {"cluster_id": "c", "resource_type": resource_type, "resource_name": resource_name, "name": name,
            "value": value, "value_fingerprint": None, "valid_from_offset": start, "valid_to_offset": end,
            "valid_from_time_ms": start * 1000, "valid_to_time_ms": None if end is None else end * 1000,
            "cause_offset": start, "cause_type": "ConfigRecord"}


# cluster default unclean true from 10; the controller 3000's own node false from 20 to 40; topic orders true
# from 30 to 50 (then deleted); broker 1's node min.insync.replicas 3 from 5 (not the controller: never read);
# cluster default min.insync.replicas 2 from 60
VERSIONS = [
    _version(CONFIG_RESOURCE_BROKER, "", UNCLEAN, "true", 10),
    _version(CONFIG_RESOURCE_BROKER, "3000", UNCLEAN, "false", 20, 40),
    _version(CONFIG_RESOURCE_TOPIC, "orders", UNCLEAN, "true", 30, 50),
    _version(CONFIG_RESOURCE_BROKER, "1", MIN_ISR, "3", 5),
    _version(CONFIG_RESOURCE_BROKER, "", MIN_ISR, "2", 60),
]


def _resolved(spark: SparkSession, asks: list[tuple[str, int]], static: dict[str, str] | None = None,
              controllers: bool = True) -> dict[tuple[str, int], tuple[Any, ...]]:
    rows = spark.createDataFrame([("c", topic, offset) for topic, offset in asks],
                                 "cluster_id STRING, topic_name STRING, offset BIGINT")
    running = (spark.createDataFrame([("c", 3000, 0, 70), ("c", 3001, 70, None)],
                                     "cluster_id STRING, controller_id INT, valid_from_offset BIGINT, "
                                     "valid_to_offset BIGINT") if controllers else None)
    answer = with_effective_configs(rows, config_frame(spark, VERSIONS), running, static)
    return {(r["topic_name"], r["offset"]): (r["unclean_leader_election_enable"],
                                             r["unclean_leader_election_enable_source"], r["min_insync_replicas"],
                                             r["min_insync_replicas_source"]) for r in answer.collect()}


def test_each_layer_in_kafkas_order(spark: SparkSession) -> None:
    got = _resolved(spark, [("orders", 5), ("orders", 10), ("orders", 25), ("orders", 35), ("orders", 45),
                            ("other", 35), ("orders", 55), ("orders", 65), ("orders", 75)])
    assert got == {
        ("orders", 5): ("false", "DEFAULT_CONFIG", "1", "DEFAULT_CONFIG"),
        ("orders", 10): ("true", "DYNAMIC_DEFAULT_BROKER_CONFIG", "1", "DEFAULT_CONFIG"),
        ("orders", 25): ("false", "DYNAMIC_BROKER_CONFIG", "1", "DEFAULT_CONFIG"),  # the controller's node
        ("orders", 35): ("true", "DYNAMIC_TOPIC_CONFIG", "1", "DEFAULT_CONFIG"),
        ("orders", 45): ("true", "DYNAMIC_TOPIC_CONFIG", "1", "DEFAULT_CONFIG"),  # node config gone at 40
        ("other", 35): ("false", "DYNAMIC_BROKER_CONFIG", "1", "DEFAULT_CONFIG"),
        ("orders", 55): ("true", "DYNAMIC_DEFAULT_BROKER_CONFIG", "1", "DEFAULT_CONFIG"),  # topic's deleted at 50
        ("orders", 65): ("true", "DYNAMIC_DEFAULT_BROKER_CONFIG", "2", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
        ("orders", 75): ("true", "DYNAMIC_DEFAULT_BROKER_CONFIG", "2", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
    }


def test_without_the_controllers_the_node_layer_is_not_read(spark: SparkSession) -> None:
    got = _resolved(spark, [("orders", 25)], controllers=False)
    assert got == {("orders", 25): ("true", "DYNAMIC_DEFAULT_BROKER_CONFIG", "1", "DEFAULT_CONFIG")}


def test_static_configs_come_after_the_log_and_before_kafkas_default(spark: SparkSession) -> None:
    static = {UNCLEAN: "true", MIN_ISR: "3"}
    got = _resolved(spark, [("orders", 5), ("orders", 65)], static)
    assert got == {("orders", 5): ("true", "STATIC_BROKER_CONFIG", "3", "STATIC_BROKER_CONFIG"),
                   ("orders", 65): ("true", "DYNAMIC_DEFAULT_BROKER_CONFIG", "2", "DYNAMIC_DEFAULT_BROKER_CONFIG")}


def test_no_config_history_means_unknown(spark: SparkSession) -> None:
    rows = spark.createDataFrame([("c", "orders", 5)], "cluster_id STRING, topic_name STRING, offset BIGINT")
    row = with_effective_configs(rows, None).first()
    assert row is not None
    assert [row[c] for c in ("unclean_leader_election_enable", "unclean_leader_election_enable_source",
                             "min_insync_replicas", "min_insync_replicas_source")] == [None, None, None, None]


def test_how_the_controller_reads_the_values(spark: SparkSession) -> None:
    """``Boolean.parseBoolean`` (any case; empty is false) and ``getTopicEffectiveMinIsr`` (at most the
    replication factor)."""
    rows = spark.createDataFrame([("TRUE", "3", [1, 2]), ("", "2", [1, 2, 3]), ("yes", "1", [1])],
                                 "value STRING, min_isr STRING, replicas ARRAY<INT>")
    got = [(r[0], r[1]) for r in rows.select(unclean_allowed(rows["value"]),
                                             effective_min_isr(rows["min_isr"], rows["replicas"])).collect()]
    assert got == [(True, 2), (False, 2), (False, 1)]


def test_the_active_controller_is_the_last_leader_change(spark: SparkSession) -> None:
    def change(offset: int, leader: int) -> LogEntry:
        return LogEntry(offset=offset, record=make_record(
            "LeaderChangeMessage", 0, version=0, leaderId=leader, voters=[{"voterId": leader}],
            grantingVoters=[{"voterId": leader}]), batch_base_offset=offset, raft_leader_epoch=1,
            append_time_ms=offset)

    log = entries_frame(spark, [change(0, 3000), change(7, 3002)], "c")
    got = [tuple(r) for r in active_controllers(log).orderBy("valid_from_offset").collect()]
    assert got == [("c", 3000, 0, 7), ("c", 3002, 7, None)]


def test_topic_configs_at(spark: SparkSession, audit_lake: Lake, audit_stories: dict[str, AuditStory]) -> None:
    key = audit_stories["unclean-topic"].key
    before = key["config"] - 1

    def answer(offset: int, **static: str) -> list[tuple[str, str, str]]:
        at, rows = topic_configs_at(spark, audit_lake, "t", offset, cluster_id="unclean-topic",
                                    static={k.replace("_", "."): v for k, v in static.items()})
        assert at == offset
        return [(r["name"], r["value"], r["source"]) for r in rows.collect()]

    assert answer(before) == [(MIN_ISR, "1", "DEFAULT_CONFIG"), (UNCLEAN, "false", "DEFAULT_CONFIG")]
    assert answer(key["config"]) == [(MIN_ISR, "1", "DEFAULT_CONFIG"), (UNCLEAN, "true", "DYNAMIC_TOPIC_CONFIG")]
    assert answer(before, unclean_leader_election_enable="true") == [
        (MIN_ISR, "1", "DEFAULT_CONFIG"), (UNCLEAN, "true", "STATIC_BROKER_CONFIG")]
    with pytest.raises(QueryError, match="no topic 'nope' in cluster unclean-topic as of offset 3"):
        topic_configs_at(spark, audit_lake, "nope", 3, cluster_id="unclean-topic")
