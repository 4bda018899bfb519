"""The replay into the lake and the questions asked of it, on the real ldi-poc log.

ldi-poc: one broker (id 1) that shut down at the end of the log. Offset 4871 starts one record batch
(4871..4925): the broker enters controlled shutdown, then 54 PartitionChangeRecords take every partition
offline (leader -1, epochs 0 → 1); offset 4926 fences the broker.

ONE lake per module: the replay of a log costs tens of seconds of Spark stages.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from typer.testing import CliRunner

from kraft_replay.formatting import format_replay_summary
from kraft_replay.replay_commands import standalone_app
from lakehouse import lake_read, spark_settings
from lakehouse.lake import Lake
from lakehouse.log_rows import entries_frame
from lakehouse.spark import DELTA_SPARK, DELTA_STATS_SKIPPING, SHUFFLE_PARTITIONS, lake_engine
from lakehouse.spark_settings import (
    ADAPTIVE_EXECUTION,
    CONSTRAINT_PROPAGATION,
    INTERPRETED,
    WHOLE_STAGE_CODEGEN,
    file_statistics,
    shuffle_partitions_for,
    spark_conf,
)
from lakehouse.tables import DERIVED_TABLES, ELECTIONS, METADATA_LOG, REPLAY_COVERAGE, REPLAY_SCHEMAS, spark_schema
from records.sources import read_entries
from replay.query.state import (
    QueryError,
    as_of,
    clusters,
    diff,
    history,
    iso_ms,
    resolve_cluster,
    resolve_offset,
    state_at,
)
from replay.query.views import register_views
from replay.store import runs as store
from replay.store import table_writes
from replay.store.runs import (
    ANOMALIES,
    CHECKPOINT_SCHEMA,
    CHECKPOINTS,
    DERIVING,
    HISTORY_TABLES,
    run_replay,
)

pytestmark = [pytest.mark.spark, pytest.mark.real_logs]

CLUSTER = "q1w2e3r4t5y6u7i8o9p0"
BATCH_TIME_MS = 1769793835232  # append time of the batch 4871..4925
runner = CliRunner()


def _data_hashes(lake: Lake) -> dict[str, list[str]]:
    """sha256 of every data file of every replay table, in the Delta log's order."""
    return {name: [hashlib.sha256(Path(uri.removeprefix("file://")).read_bytes()).hexdigest()
                   for uri in DeltaTable(lake.path(name)).file_uris()]
            for name in (*HISTORY_TABLES, ANOMALIES, *DERIVED_TABLES)}


@pytest.fixture(scope="module")
def replayed(spark: SparkSession, real_log: Callable[[str], Path], tmp_path_factory: pytest.TempPathFactory
             ) -> dict[str, Any]:
    lake = Lake(tmp_path_factory.mktemp("replay-lake"))
    lake.write(entries_frame(spark, read_entries(real_log("ldi-poc")), None), "metadata_log", "overwrite")
    with spark_conf(spark, "spark.sql.shuffle.partitions", "2"):
        summary = run_replay(spark, lake)
    return {"lake": lake, "summary": summary, "hashes": _data_hashes(lake)}


@pytest.fixture(scope="module")
def lake(replayed: dict[str, Any]) -> Lake:
    return replayed["lake"]


def _cli(lake: Lake, *args: str) -> Any:
    return runner.invoke(standalone_app(), [*args, "--lake", lake.root])


# --- store ---------------------------------------------------------------------------------------


def test_replay_writes_every_table_and_a_checkpoint(spark: SparkSession, replayed: dict[str, Any]) -> None:
    summary, lake = replayed["summary"], replayed["lake"]
    assert summary.clusters == {CLUSTER: 4928}
    assert summary.last_offset == 4928
    assert summary.rows["partition_history"] == 108  # 54 partitions x (created, taken offline)
    assert summary.rows["broker_history"] == 5
    assert summary.anomalies == 0
    assert set(summary.rows) == {*HISTORY_TABLES, ANOMALIES, *DERIVED_TABLES, REPLAY_COVERAGE}
    for name in HISTORY_TABLES:
        assert lake.table_exists(name)
    checkpoint = lake.read(spark, CHECKPOINTS).orderBy("replayed_at").first()
    assert checkpoint is not None
    assert (checkpoint["cluster_id"], checkpoint["last_offset"], checkpoint["metadata_log_version"],
            checkpoint["mode"]) == (CLUSTER, 4928, 0, "full")
    assert set(checkpoint["tables"]) == {*HISTORY_TABLES, ANOMALIES, *DERIVED_TABLES, REPLAY_COVERAGE}
    assert "partition_history" in "\n".join(format_replay_summary(summary))


def test_the_written_tables_are_exactly_the_registry(spark: SparkSession, replayed: dict[str, Any]) -> None:
    """Every table the replay writes is declared in ``lakehouse.tables``: the same columns in the same order with
    the same types, so a change to the replay's DataFrames that the registry does not follow fails here."""
    lake = replayed["lake"]
    assert set(lake.table_names()) == {METADATA_LOG, *REPLAY_SCHEMAS}
    for name in REPLAY_SCHEMAS:
        written = [(f.name, f.dataType.simpleString()) for f in lake.read(spark, name).schema.fields]
        declared = [(f.name, f.dataType.simpleString()) for f in spark_schema(name).fields]
        assert written == declared, name


def test_the_real_incident_in_the_state_machines_and_the_audit(spark: SparkSession, lake: Lake) -> None:
    """ldi-poc: broker 1 enters controlled shutdown at 4871, its 54 partitions lose their leader at
    4872..4925 (nobody else in the ISR), the broker is fenced at 4926."""
    periods = lake.read(spark, "leaderless_periods").orderBy("valid_from_offset").collect()
    assert [p["valid_from_offset"] for p in periods] == list(range(4872, 4926))
    assert {(p["valid_to_offset"], p["previous_leader"], tuple(p["isr"]), p["cause"], p["cause_broker"],
             p["cause_offset"], p["cause_type"]) for p in periods} == {
        (None, 1, (1,), "controlled-shutdown", 1, 4871, "BrokerRegistrationChangeRecord")}
    elections = lake.read(spark, "elections").collect()
    assert len(elections) == 54 and {e["election_type"] for e in elections} == {"leader-lost"}
    assert all(e["deviation"] is None for e in elections)

    def states(table: str, offset: int) -> dict[str, int]:
        rows = as_of(lake.read(spark, table), offset).groupBy("state").count().collect()
        return {r["state"]: r["count"] for r in rows}

    assert states("partition_state_history", 4871) == {"OnlinePartition": 54}
    assert states("partition_state_history", 4925) == {"OfflinePartition": 54}
    assert states("replica_state_history", 4925) == {"OnlineReplica": 54}  # shutting down, not yet fenced
    assert states("replica_state_history", 4926) == {"OfflineReplica": 54}
    assert lake.read(spark, "replica_state_history").where(~F.col("valid_transition")).count() == 0


# --- state ---------------------------------------------------------------------------------------


def test_state_before_the_shutdown_every_partition_led_by_broker_1(spark: SparkSession, lake: Lake) -> None:
    state = state_at(spark, lake, offset=4870)
    assert state.offset == 4870 and state.cluster_id == CLUSTER
    rows = state.partitions.collect()
    assert len(rows) == 54
    assert {(r["leader"], tuple(r["isr"])) for r in rows} == {(1, (1,))}
    assert state.topics.count() == 5
    broker = state.brokers.collect()
    assert [(b["broker_id"], b["fenced"], b["in_controlled_shutdown"]) for b in broker] == [(1, False, False)]
    assert state.replicas.where(F.col("is_leader")).count() == 54


def test_state_after_the_batch_every_partition_offline(spark: SparkSession, lake: Lake) -> None:
    rows = state_at(spark, lake, offset=4925).partitions.collect()
    assert len(rows) == 54
    assert {(r["leader"], r["leader_epoch"], r["partition_epoch"], tuple(r["isr"])) for r in rows} == {
        (-1, 1, 1, (1,))}
    # sorted by topic name, then partition id
    assert [(r["topic_name"], r["partition_id"]) for r in rows] == sorted(
        (r["topic_name"], r["partition_id"]) for r in rows)


def test_broker_fenced_and_in_controlled_shutdown_at_4926(spark: SparkSession, lake: Lake) -> None:
    brokers = state_at(spark, lake, offset=4926).brokers.collect()
    assert len(brokers) == 1
    broker = brokers[0]
    assert (broker["broker_id"], broker["fenced"], broker["in_controlled_shutdown"]) == (1, True, True)
    assert (broker["valid_from_offset"], broker["cause_type"]) == (4926, "BrokerRegistrationChangeRecord")


def test_time_resolves_to_the_last_offset_appended_at_or_before_it(spark: SparkSession, lake: Lake) -> None:
    at_batch = iso_ms(BATCH_TIME_MS)
    assert at_batch == "2026-01-30T17:23:55.232Z"
    assert resolve_offset(spark, lake, CLUSTER, time=at_batch) == 4925
    assert resolve_offset(spark, lake, CLUSTER, time="2026-01-30T17:23:55.232") == 4925  # naive = UTC
    assert resolve_offset(spark, lake, CLUSTER, time="2026-01-30T19:23:55.232+02:00") == 4925
    assert resolve_offset(spark, lake, CLUSTER, time=iso_ms(BATCH_TIME_MS - 1)) == 4870
    state = state_at(spark, lake, time=at_batch)
    assert state.offset == 4925
    assert {r["leader"] for r in state.partitions.collect()} == {-1}
    with pytest.raises(QueryError, match="before the first record"):
        resolve_offset(spark, lake, CLUSTER, time="2000-01-01T00:00:00Z")


def test_batch_aligned_state_is_the_state_at_the_end_of_the_batch(spark: SparkSession, lake: Lake) -> None:
    assert resolve_offset(spark, lake, CLUSTER, offset=4880, batch_aligned=True) == 4925
    assert resolve_offset(spark, lake, CLUSTER, offset=4870, batch_aligned=True) == 4870  # a batch of one
    mid_batch = state_at(spark, lake, offset=4871)
    assert mid_batch.offset == 4871
    assert {r["leader"] for r in mid_batch.partitions.collect()} == {1}
    aligned = state_at(spark, lake, offset=4871, batch_aligned=True)
    assert aligned.offset == 4925
    assert {r["leader"] for r in aligned.partitions.collect()} == {-1}
    with pytest.raises(QueryError, match="not in the metadata_log"):
        resolve_offset(spark, lake, CLUSTER, offset=10**9, batch_aligned=True)


# --- history and diff ----------------------------------------------------------------------------


def test_history_of_consumer_offsets_0(spark: SparkSession, lake: Lake) -> None:
    versions = history(spark, lake, "__consumer_offsets", 0).collect()
    assert [(v["valid_from_offset"], v["valid_to_offset"]) for v in versions] == [(420, 4876), (4876, None)]
    assert [v["cause_offset"] for v in versions] == [420, 4876]
    assert [v["cause_type"] for v in versions] == ["PartitionRecord", "PartitionChangeRecord"]
    assert versions[1]["valid_from_time_ms"] == BATCH_TIME_MS
    assert [(v["leader"], v["leader_epoch"]) for v in versions] == [(1, 0), (-1, 1)]


def test_a_question_is_planned_without_deltas_skipping_job(spark: SparkSession, lake: Lake,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A session started here leaves Delta's data skipping off (``lakehouse.spark.DELTA_STATS_SKIPPING``): planning
    a question runs no Spark job. In ``file_statistics`` (a replay's reads) Delta runs one to pick the files of a
    table it reads (one of more than ``FEW_FILES`` files; a smaller one is read as its files, no job either way); the
    answer is the same."""
    if lake_engine(spark) != DELTA_SPARK:
        pytest.skip("delta-spark's planning only: this session's lake engine is delta-rs")
    assert spark.conf.get(DELTA_STATS_SKIPPING) == "false"
    context = spark.sparkContext
    history(spark, lake, "__consumer_offsets", 0).collect()  # the cluster resolved, the snapshot loaded

    def planned(group: str) -> tuple[int, list[tuple[int, int | None]]]:
        context.setJobGroup(group, "planning a question")
        try:
            question = history(spark, lake, "__consumer_offsets", 0)
            question._jdf.queryExecution().executedPlan()
            jobs = len(context.statusTracker().getJobIdsForGroup(group))
        finally:
            context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        return jobs, [(v["valid_from_offset"], v["valid_to_offset"]) for v in question.collect()]

    assert planned("question-planned") == (0, [(420, 4876), (4876, None)])
    with file_statistics(spark):
        assert planned("question-planned-few-files") == (0, [(420, 4876), (4876, None)])
        monkeypatch.setattr(lake_read, "FEW_FILES", 0)  # as a table of many files: read through delta-spark
        history(spark, lake, "__consumer_offsets", 0).collect()  # delta-spark's snapshot of the table loaded
        assert planned("question-planned-with-file-statistics") == (1, [(420, 4876), (4876, None)])
    assert spark.conf.get(DELTA_STATS_SKIPPING) == "false"


def test_diff_lists_the_54_partitions_and_the_broker(spark: SparkSession, lake: Lake) -> None:
    rows = diff(spark, lake, 4870, 4926).collect()
    assert len(rows) == 55
    broker = rows[0]
    assert (broker["entity"], broker["key"], broker["change"]) == ("broker", "1", "changed")
    before, after = json.loads(broker["before"]), json.loads(broker["after"])
    assert (before["fenced"], before["inControlledShutdown"]) == (False, False)
    assert (after["fenced"], after["inControlledShutdown"]) == (True, True)
    partitions = rows[1:]
    assert {(r["entity"], r["change"]) for r in partitions} == {("partition", "changed")}
    assert len({r["key"] for r in partitions}) == 54
    assert "__consumer_offsets-0" in {r["key"] for r in partitions}
    for r in partitions:
        b, a = json.loads(r["before"]), json.loads(r["after"])
        assert (b["leader"], b["leaderEpoch"], a["leader"], a["leaderEpoch"], a["partitionEpoch"]) == (1, 0, -1, 1, 1)
    assert diff(spark, lake, 4925, 4925).count() == 0


def test_sql_views_answer_as_of_questions(spark: SparkSession, lake: Lake) -> None:
    names = register_views(spark, lake)
    assert {"metadata_log", "partition_history", "broker_history", ANOMALIES, CHECKPOINTS} <= set(names)
    row = spark.sql("""
        SELECT count(*) AS n, min(leader) AS lo, max(leader) AS hi FROM partition_history
        WHERE valid_from_offset <= 4925 AND (valid_to_offset IS NULL OR valid_to_offset > 4925)""").first()
    assert (row["n"], row["lo"], row["hi"]) == (54, -1, -1)
    cause = spark.sql("""
        SELECT m.record_type, m.batch_base_offset FROM partition_history p
        JOIN metadata_log m ON m.cluster_id = p.cluster_id AND m.offset = p.cause_offset
        WHERE p.topic_name = '__consumer_offsets' AND p.partition_id = 0 AND p.leader_epoch = 1""").collect()
    assert [(c["record_type"], c["batch_base_offset"]) for c in cause] == [("PartitionChangeRecord", 4871)]


def test_several_clusters_need_a_cluster_id(spark: SparkSession, tmp_path: Path) -> None:
    lake = Lake(tmp_path / "two")
    rows = [(c, 10, 0, "full", None, {}) for c in ("cluster-b", "cluster-a")]
    lake.write(spark.createDataFrame(rows, CHECKPOINT_SCHEMA), CHECKPOINTS, "append")
    with pytest.raises(QueryError, match=r"2 clusters.*cluster-a, cluster-b"):
        resolve_cluster(spark, lake)
    assert resolve_cluster(spark, lake, "cluster-b") == "cluster-b"
    with pytest.raises(QueryError, match="'nope' is not in the lake"):
        resolve_cluster(spark, lake, "nope")


def test_the_clusters_follow_each_version_and_a_table_made_anew(spark: SparkSession, tmp_path: Path) -> None:
    """The clusters are asked of Spark once per version of replay_checkpoints: a new commit is seen at once, and
    so is a table made anew at the same path (its versions start again at 0)."""
    lake = Lake(tmp_path / "lake")

    def checkpoint(*clusters_ids: str) -> None:
        rows = [(c, 10, 0, "full", None, {}) for c in clusters_ids]
        lake.write(spark.createDataFrame(rows, CHECKPOINT_SCHEMA), CHECKPOINTS, "append")

    checkpoint("cluster-a")
    assert clusters(spark, lake) == ["cluster-a"]
    checkpoint("cluster-c", "cluster-b")
    assert clusters(spark, lake) == ["cluster-a", "cluster-b", "cluster-c"]
    assert resolve_cluster(spark, lake, "cluster-b") == "cluster-b"
    shutil.rmtree(lake.path(CHECKPOINTS))
    checkpoint("cluster-d")
    assert lake.delta_table(CHECKPOINTS).version() == 0
    assert clusters(spark, lake) == ["cluster-d"]


# --- CLI -----------------------------------------------------------------------------------------


def test_cli_state_json(lake: Lake) -> None:
    result = _cli(lake, "state", "--offset", "4925", "--format", "json")
    assert result.exit_code == 0, result.output
    state = json.loads(result.stdout)
    assert state["offset"] == 4925 and state["clusterId"] == CLUSTER
    assert [(b["brokerId"], b["brokerEpoch"], b["fenced"], b["inControlledShutdown"]) for b in state["brokers"]] \
        == [(1, 8, False, True)]
    assert [t["name"] for t in state["topics"]] == [
        "Retry.TestTopicPatient", "TestTopicPatient", "__consumer_offsets",
        "batch2.work.notification.SHR_PROD.persistence", "subscription.matching.SHR_PROD.persistence"]
    assert all(set(t) == {"topicId", "name"} for t in state["topics"])
    partitions = state["partitions"]
    assert len(partitions) == 54
    expected_keys = {"topicId", "topicName", "partitionId", "leader", "leaderEpoch", "partitionEpoch", "isr",
                     "replicas", "addingReplicas", "removingReplicas", "eligibleLeaderReplicas", "lastKnownElr",
                     "leaderRecoveryState", "directories"}
    for p in partitions:
        assert set(p) == expected_keys
        assert (p["leader"], p["leaderEpoch"], p["partitionEpoch"], p["isr"], p["replicas"]) == (-1, 1, 1, [1], [1])
        assert (p["addingReplicas"], p["removingReplicas"], p["leaderRecoveryState"]) == ([], [], 0)
    assert [(p["topicName"], p["partitionId"]) for p in partitions] == sorted(
        (p["topicName"], p["partitionId"]) for p in partitions)
    assert json.loads(_cli(lake, "state", "--offset", "4925", "--format", "json").stdout) == state


def test_cli_state_table_filters_and_errors(lake: Lake) -> None:
    result = _cli(lake, "state", "--time", iso_ms(BATCH_TIME_MS), "--topic", "__consumer_offsets",
                  "--partition", "7")
    assert result.exit_code == 0, result.output
    assert "as of offset 4925" in result.stdout
    lines = [line for line in result.stdout.splitlines() if line.startswith("__consumer_offsets")]
    assert len(lines) == 1 and lines[0].split()[:5] == ["__consumer_offsets", "7", "-1", "1", "1"]
    assert all(len(line) <= 160 for line in result.stdout.splitlines())
    both = _cli(lake, "state", "--offset", "1", "--time", "2026-01-30T17:00:00Z")
    assert both.exit_code == 2 and "exactly one" in both.output
    unknown = _cli(lake, "state", "--offset", "1", "--cluster-id", "nope")
    assert unknown.exit_code == 2 and CLUSTER in unknown.output


def test_cli_history_diff_and_sql(lake: Lake) -> None:
    versions = _cli(lake, "history", "--topic", "__consumer_offsets", "--partition", "0")
    assert versions.exit_code == 0, versions.output
    assert "2 version(s)" in versions.stdout
    assert "2026-01-30T17:23:55.232Z" in versions.stdout and "PartitionChangeRecord" in versions.stdout
    as_json = [json.loads(line) for line in _cli(lake, "history", "--topic", "__consumer_offsets",
                                                  "--partition", "0", "--format", "json").stdout.splitlines()]
    assert [(v["validFromOffset"], v["causeType"]) for v in as_json] == [(420, "PartitionRecord"),
                                                                           (4876, "PartitionChangeRecord")]
    changes = _cli(lake, "diff", "--from", "4870", "--to", "4926", "--format", "json")
    assert changes.exit_code == 0, changes.output
    assert len(changes.stdout.splitlines()) == 55
    table = _cli(lake, "diff", "--from", "4870", "--to", "4926")
    assert "fenced: no→yes" in table.stdout and "leader: 1→-1" in table.stdout
    query = ("SELECT topic_name, count(*) AS partitions FROM partition_history WHERE valid_from_offset <= 4925 "
             "AND (valid_to_offset IS NULL OR valid_to_offset > 4925) GROUP BY topic_name ORDER BY topic_name")
    result = _cli(lake, "sql", query, "--format", "json")
    assert result.exit_code == 0, result.output
    counts = {row["topic_name"]: row["partitions"] for row in map(json.loads, result.stdout.splitlines())}
    assert counts == {"Retry.TestTopicPatient": 1, "TestTopicPatient": 1, "__consumer_offsets": 50,
                      "batch2.work.notification.SHR_PROD.persistence": 1,
                      "subscription.matching.SHR_PROD.persistence": 1}
    shown = _cli(lake, "sql", query)
    assert shown.exit_code == 0 and "__consumer_offsets" in shown.stdout and "(5 row(s))" in shown.stdout
    bad = _cli(lake, "sql", "SELECT nope FROM broker_history")
    assert bad.exit_code == 2 and "nope" in bad.output


# --- determinism (last: it replays the module's lake once more) -----------------------------------


def test_replay_is_byte_identical_whatever_the_shuffle_partitions_and_code_generation(
        spark: SparkSession, replayed: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The module's replay of 4,929 records ran interpreted (``lakehouse.spark_settings.interpreted``) and planned
    ahead (no adaptive execution) in one shuffle partition (a small log), without constraint propagation; this one
    generates code, plans adaptively, at 7 shuffle partitions, with constraint propagation. Both without Delta's data
    skipping."""
    lake = replayed["lake"]
    monkeypatch.setattr(spark_settings, "INTERPRETED_UP_TO", 0)
    monkeypatch.setattr(spark_settings, "PLANNED_AHEAD_UP_TO", 0)
    monkeypatch.setattr(spark_settings, "RECORDS_PER_TASK_AT_LEAST", 1)
    monkeypatch.setattr(store, "constraints_not_propagated",
                        lambda session: spark_conf(session, CONSTRAINT_PROPAGATION, "true"))
    partitions: set[str | None] = set()
    code_generation: set[str | None] = set()
    file_skipping: set[str | None] = set()
    constraints: set[str | None] = set()
    adaptive: set[str | None] = set()
    before = spark.conf.get(DELTA_STATS_SKIPPING, None)
    with spark_conf(spark, "spark.sql.shuffle.partitions", "7"):
        summary = run_replay(spark, lake, progress=lambda _: (code_generation.add(spark.conf.get(WHOLE_STAGE_CODEGEN)),
                                                               file_skipping.add(spark.conf.get(DELTA_STATS_SKIPPING)),
                                                               partitions.add(spark.conf.get(SHUFFLE_PARTITIONS)),
                                                               constraints.add(spark.conf.get(CONSTRAINT_PROPAGATION)),
                                                               adaptive.add(spark.conf.get(ADAPTIVE_EXECUTION))))
    assert code_generation == {"true"}
    assert adaptive == {"true", "false"}  # the fold is planned ahead at any size (its stages told in it), the rest not
    assert partitions == {"7"}
    assert constraints == {"true"}
    # a log of 4,929 records: its tables are one file per split, nothing for Delta's data skipping to skip (it is on
    # for a log cut into topic ranges: tests/test_layout.py)
    assert file_skipping == {"false"}
    assert spark.conf.get(DELTA_STATS_SKIPPING, None) == before
    assert summary.rows == replayed["summary"].rows
    again = _data_hashes(lake)
    assert replayed["hashes"]["partition_history"], "partition_history has data files"
    assert again == replayed["hashes"]
    assert lake.read(spark, CHECKPOINTS).count() == 2


def test_a_large_log_gets_more_shuffle_partitions() -> None:
    assert shuffle_partitions_for(10_000_000, 8) == 40  # 250,000 records' events per sort task at most
    assert shuffle_partitions_for(1_000_000, 8) == 8
    assert shuffle_partitions_for(1_000_001, 2) == 5
    assert shuffle_partitions_for(10_000_000, 200) == 200  # a cluster's own setting, when larger, stays


def test_a_small_log_or_increment_gets_fewer_shuffle_partitions() -> None:
    assert shuffle_partitions_for(30_000, 8) == 1  # 50,000 records per task at least
    assert shuffle_partitions_for(100, 8) == 1
    assert shuffle_partitions_for(0, 8) == 1  # an increment without new records
    assert shuffle_partitions_for(120_000, 8) == 3
    assert shuffle_partitions_for(120_000, 2) == 2  # never more than configured


def test_a_full_replay_of_a_large_log_sorts_in_more_partitions_and_writes_the_same_files(
        spark: SparkSession, replayed: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """7 configured; the 4,929 records at 500 per partition (a small stand-in for 250,000) make the fold and the
    derivation run at 10, and the setting is restored after; the data files are the ones written at 1."""
    lake = replayed["lake"]
    monkeypatch.setattr(spark_settings, "RECORDS_PER_SHUFFLE_PARTITION", 500)
    seen: dict[str, tuple[str | None, ...]] = {}
    with spark_conf(spark, SHUFFLE_PARTITIONS, "7"):
        summary = run_replay(spark, lake, full=True, progress=lambda stage: seen.setdefault(
            stage, (spark.conf.get(SHUFFLE_PARTITIONS), *map(spark.conf.get, INTERPRETED),
                    spark.conf.get(CONSTRAINT_PROPAGATION), spark.conf.get(ADAPTIVE_EXECUTION))))
        assert spark.conf.get(SHUFFLE_PARTITIONS) == "7"
    # a small log derives while it writes its history: the stage naming the derived tables is the derivation's
    deriving = [settings for stage, settings in seen.items() if stage == DERIVING or ELECTIONS in stage]
    assert deriving and all(settings == seen["folding the log into states (Spark window functions)"] == (
        "10", *INTERPRETED.values(), "false", "false") for settings in deriving)  # small: no generated code, planned
    assert spark.conf.get(WHOLE_STAGE_CODEGEN) == "true"  # restored
    assert spark.conf.get(ADAPTIVE_EXECUTION) == "true"  # restored: queries keep it
    assert spark.conf.get(CONSTRAINT_PROPAGATION) == "true"  # restored: queries keep it
    assert summary.rows == replayed["summary"].rows
    assert _data_hashes(lake) == replayed["hashes"]


def _files_by_split(lake: Lake, name: str) -> dict[str, tuple[str, list[dict[str, Any]], dict[str, Any]]]:
    """Each data file of a table by its split directory ("" for none): its writer, its rows in order, and its
    statistics in the Delta log."""
    table = DeltaTable(lake.path(name))
    adds = pa.table(table.get_add_actions(flatten=True)).to_pylist()
    files: dict[str, tuple[str, list[dict[str, Any]], dict[str, Any]]] = {}
    for add in adds:
        parts = add["path"].split("/")
        split = parts[1] if len(parts) > 2 else ""
        assert split not in files, f"{name}: one file per split in a small replay"
        data = pq.ParquetFile(f"{lake.path(name)}/{add['path']}")
        stats = {key: value for key, value in add.items() if key.startswith(("num_records", "null_count", "min.",
                                                                             "max."))}
        files[split] = (data.metadata.created_by, data.read().to_pylist(), stats)
    return files


def test_a_small_replay_is_written_by_the_driver_as_spark_would_write_it(
        spark: SparkSession, replayed: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The module's replay of 4,929 records fetched each table's rows and wrote their files in the driver
    (``replay.store.table_writes.DRIVER_WRITTEN_UP_TO``); the same replay with Spark's executors writing them has
    the same files: the same split directories, rows in the same order, the same statistics."""
    copy = Lake(tmp_path / "lake")
    shutil.copytree(replayed["lake"].root, copy.root)
    monkeypatch.setattr(table_writes, "DRIVER_WRITTEN_UP_TO", 0)
    run_replay(spark, copy, full=True)
    for name in (*HISTORY_TABLES, ANOMALIES, *DERIVED_TABLES):
        by_driver, by_spark = _files_by_split(replayed["lake"], name), _files_by_split(copy, name)
        assert sorted(by_driver) == sorted(by_spark), name
        for split, (writer, rows, stats) in by_driver.items():
            spark_writer, spark_rows, spark_stats = by_spark[split]
            assert writer.startswith("parquet-cpp-arrow") and spark_writer.startswith("parquet-mr"), name
            assert (rows, stats) == (spark_rows, spark_stats), f"{name} {split}"
    offsets = [row["valid_from_offset"] for row in _files_by_split(copy, "partition_history")["open=true"][1]]
    assert len(offsets) == 54 and offsets == sorted(offsets)
