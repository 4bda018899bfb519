"""The lake on Delta Lake's own Spark engine, and on delta-rs, interchangeably.

- On either engine Spark writes the tables' files and delta-rs commits them (``commitInfo.engineInfo`` names it);
  Delta's own engine commits its ``OPTIMIZE``; ``commit_new_rows`` records Delta's application transaction
  (``txn``).
- A lake written by one engine is ingested into, replayed incrementally and optimized by the other; every table
  then equals a full replay.
- After delta-spark's ``OPTIMIZE`` and ``VACUUM`` the tables stay readable by another Delta reader (delta-rs).
- Spark SQL reaches the tables by name in the ``kraft`` database: time travel, ``DESCRIBE HISTORY``,
  ``DESCRIBE DETAIL``, ``table_changes`` (Change Data Feed on the history tables).
(Commands naming their engine: tests/test_delta_spark_engine_commands.py.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession

from lakehouse.ingest import IngestOptions, ingest
from lakehouse.lake import DATABASE, Lake, writer_id
from lakehouse.spark import DELTA_RS, DELTA_SPARK, SHUFFLE_PARTITIONS, has_delta_spark
from lakehouse.spark_settings import LISTING_PARALLELISM
from lakehouse.tables import DERIVED_TABLES, METADATA_LOG
from replay.fold.engine import TABLE_KEYS
from replay.query.views import register_views
from replay.store.runs import ANOMALIES, run_replay
from tests.table_rows import sorted_rows
from tests.test_lake_support import CLUSTER, simulated, write_jsonl_file

pytestmark = pytest.mark.spark

TABLES = (METADATA_LOG, *TABLE_KEYS, ANOMALIES, *DERIVED_TABLES)
DELTA_RS_ENGINE = "delta-rs:"  # commitInfo.engineInfo of delta-rs: "delta-rs:py-1.6.6"
DELTA_SPARK_ENGINE = "Delta-Lake/"  # commitInfo.engineInfo of delta-spark: "Apache-Spark/4.0.1 Delta-Lake/4.0.0"


@pytest.fixture(scope="module", autouse=True)
def _needs_delta_spark(spark: SparkSession) -> None:
    if not has_delta_spark(spark):
        pytest.fail("the test session has no delta-spark: `make setup` fetches its jars (lakehouse.jars)")


def _rows(spark: SparkSession, lake: Lake) -> dict[str, list[tuple]]:
    return {name: sorted_rows([r.asDict(recursive=True) for r in lake.read(spark, name).collect()])
            for name in TABLES}


def _log_actions(lake: Lake, name: str) -> list[dict[str, Any]]:
    log = Path(lake.path(name)) / "_delta_log"
    return [json.loads(line) for path in sorted(log.glob("*.json")) for line in path.read_text().splitlines()]


@pytest.mark.parametrize(("first", "then"), [(DELTA_RS, DELTA_SPARK), (DELTA_SPARK, DELTA_RS)])
def test_either_engine_continues_what_the_other_wrote(spark: SparkSession, tmp_path: Path, first: str, then: str
                                                      ) -> None:
    entries = simulated()
    half, whole = write_jsonl_file(tmp_path / "a.jsonl", entries[:160]), write_jsonl_file(tmp_path / "b.jsonl",
                                                                                          entries)
    before = Lake(tmp_path / "lake", engine=first)
    ingest(spark, before, half, IngestOptions(cluster_id=CLUSTER))
    assert run_replay(spark, before).mode == "full"

    after = Lake(tmp_path / "lake", engine=then)
    added = ingest(spark, after, whole, IngestOptions(cluster_id=CLUSTER))
    assert added.records_added == len(entries) - 160  # the first engine's rows deduplicate the second's
    summary = run_replay(spark, after, incremental=True)
    assert summary.mode == "incremental" and summary.last_offset == entries[-1].offset
    after.optimize(spark)
    incremental = _rows(spark, after)
    assert [row for row in incremental[METADATA_LOG]] and len(incremental[METADATA_LOG]) == len(entries)

    assert run_replay(spark, after, full=True).mode == "full"
    full = _rows(spark, after)
    for name in TABLES:
        assert incremental[name] == full[name], f"{first} then {then}: {name} differs from a full replay"

    # the appends are delta-rs's commits on both engines; delta-spark's OPTIMIZE is Delta's own
    history = after.history(METADATA_LOG)
    appends = [entry.engine_info or "" for entry in history if entry.operation == "ingest"]
    assert len(appends) == 2 and all(e.startswith(DELTA_RS_ENGINE) for e in appends), appends
    optimized = [entry.engine_info or "" for entry in history if entry.operation == "OPTIMIZE"]
    assert all(DELTA_SPARK_ENGINE in e for e in optimized) and bool(optimized) == (then == DELTA_SPARK), optimized
    # Delta's application transaction of every appended ingest commit
    txns = [a["txn"] for a in _log_actions(after, METADATA_LOG) if "txn" in a]
    assert [t["appId"] for t in txns] == [writer_id(METADATA_LOG)] * 2
    assert txns[1]["version"] > txns[0]["version"]


def test_a_create_killed_before_its_first_commit_is_no_table(spark: SparkSession, tmp_path: Path) -> None:
    """kill -9 between delta-spark's ``mkdir _delta_log/_staged_commits`` and its first commit leaves a log
    directory Delta's ``CREATE TABLE IF NOT EXISTS`` takes for a table: the next ingest still creates and fills
    it."""
    lake = Lake(tmp_path / "lake", engine=DELTA_SPARK)
    (Path(lake.path(METADATA_LOG)) / "_delta_log" / "_staged_commits").mkdir(parents=True)
    assert not lake.table_exists(METADATA_LOG)
    entries = simulated()
    added = ingest(spark, lake, write_jsonl_file(tmp_path / "a.jsonl", entries), IngestOptions(cluster_id=CLUSTER))
    assert added.records_added == len(entries)
    assert lake.table_exists(METADATA_LOG)
    assert DeltaTable(lake.path(METADATA_LOG)).version() == 1  # version 0 the empty table, 1 the rows
    assert lake.read(spark, METADATA_LOG).count() == len(entries)


def test_a_delta_spark_lake_is_committed_by_delta_rs_and_keeps_a_change_data_feed(spark: SparkSession,
                                                                                   tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    assert lake.engine(spark) == DELTA_SPARK
    entries = simulated()
    ingest(spark, lake, write_jsonl_file(tmp_path / "a.jsonl", entries[:160]), IngestOptions(cluster_id=CLUSTER))
    run_replay(spark, lake)
    ingest(spark, lake, write_jsonl_file(tmp_path / "b.jsonl", entries), IngestOptions(cluster_id=CLUSTER))
    run_replay(spark, lake, incremental=True)
    for name in (METADATA_LOG, "partition_history", "elections"):  # Spark's files, delta-rs's commits
        commits = [a["commitInfo"] for a in _log_actions(lake, name) if "commitInfo" in a]
        assert commits and all(c["engineInfo"].startswith(DELTA_RS_ENGINE) for c in commits), name
    for name in TABLE_KEYS:
        assert DeltaTable(lake.path(name)).metadata().configuration.get("delta.enableChangeDataFeed") == "true"

    names = register_views(spark, lake)
    assert "partition_history" in names and spark.catalog.currentDatabase() == DATABASE
    history = spark.sql("DESCRIBE HISTORY partition_history").orderBy("version").collect()
    assert [h["operation"] for h in history][:1] == ["CREATE TABLE"] and len(history) >= 2  # by delta-rs
    last = history[-1]["version"]
    assert spark.sql("DESCRIBE DETAIL kraft.partition_history").first()["location"].endswith("/partition_history")
    # the first replay's open versions, and how the incremental one changed them
    now = spark.table(f"{DATABASE}.partition_history").count()
    then = spark.sql("SELECT count(*) AS n FROM partition_history VERSION AS OF 0").first()["n"]
    stamp = history[0]["timestamp"]
    assert spark.sql(f"SELECT count(*) AS n FROM partition_history TIMESTAMP AS OF '{stamp}'").first()["n"] == then
    assert 0 < then < now
    changes = spark.sql(f"SELECT _change_type AS kind, count(*) AS n FROM table_changes('partition_history', "
                        f"{last}) GROUP BY _change_type").collect()
    kinds = {row["kind"]: row["n"] for row in changes}
    # the increment removed the stored open versions and wrote them back (closed or still open) with the new ones
    assert kinds.get("delete", 0) > 0 and kinds.get("insert", 0) > kinds["delete"]
    opened_then = spark.sql("SELECT count(*) AS n FROM partition_history VERSION AS OF 0 "
                            "WHERE valid_to_offset IS NULL").first()["n"]
    assert kinds["delete"] == opened_then


def test_tables_stay_readable_by_delta_rs_after_optimize_and_vacuum(spark: SparkSession, tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    entries = simulated()
    for part in (entries[:100], entries[:200], entries):
        ingest(spark, lake, write_jsonl_file(tmp_path / f"{len(part)}.jsonl", part), IngestOptions(cluster_id=CLUSTER))
    run_replay(spark, lake)
    files_before = len(DeltaTable(lake.path(METADATA_LOG)).file_uris())
    results = lake.optimize(spark, [METADATA_LOG, "partition_history"])
    assert results[METADATA_LOG]["files_removed"] == files_before and results[METADATA_LOG]["files_added"] == 1
    tracker = spark.sparkContext.statusTracker()
    jobs_before = set(tracker.getJobIdsForGroup(None))
    deleted = lake.vacuum(retention_hours=0)
    assert len(deleted[METADATA_LOG]) == files_before  # the compacted files, now unreferenced
    # Delta's listing job of each VACUUM in the session's own tasks, not Spark's default 10,000 (and the setting back)
    stages = [tracker.getStageInfo(stage) for job in set(tracker.getJobIdsForGroup(None)) - jobs_before
              for stage in tracker.getJobInfo(job).stageIds]
    shuffle_partitions = int(spark.conf.get(SHUFFLE_PARTITIONS))
    assert stages and max(stage.numTasks for stage in stages if stage) <= shuffle_partitions
    assert spark.conf.get(LISTING_PARALLELISM, None) is None
    assert all(not (Path(lake.path(METADATA_LOG)) / path).exists() for path in deleted[METADATA_LOG])
    for name in (METADATA_LOG, "partition_history"):
        commits = [a["commitInfo"] for a in _log_actions(lake, name) if "commitInfo" in a]
        assert {"OPTIMIZE", "VACUUM START", "VACUUM END"} <= {c["operation"] for c in commits}, name
        by_delta_rs = DeltaTable(lake.path(name)).to_pyarrow_table()
        by_spark = lake.read(spark, name)
        assert by_delta_rs.num_rows == by_spark.count() > 0, name
    offsets = sorted(DeltaTable(lake.path(METADATA_LOG)).to_pyarrow_table(columns=["offset"])
                     .column("offset").to_pylist())
    assert offsets == [entry.offset for entry in entries]
