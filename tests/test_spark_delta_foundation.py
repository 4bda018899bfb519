"""Spark computes and writes Parquet, delta-rs commits it: the Delta Lake foundation, end to end, no mocks."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakehouse.delta_commit import STAGING_KEY, commit_parquet, read_delta
from lakehouse.jars import installed
from lakehouse.parquet_files import DISTINCT_COLUMNS, add_actions, spark_columns, with_spark_schema
from lakehouse.spark import (
    DEFAULT_DRIVER_MEMORY,
    DELTA_EXTENSION,
    DRIVER_GC,
    DRIVER_JAVA_OPTIONS,
    DRIVER_MEMORY_ENV,
    KRYO_SERIALIZER,
    SparkOptions,
    SparkUnavailableError,
    has_delta_spark,
    local_driver_memory,
    session_conf,
)

pytestmark = pytest.mark.spark

ROWS = 10_000


def _partitions(spark: SparkSession, start: int = 0) -> DataFrame:
    """ROWS partition-change-like rows in 3 files with disjoint offset ranges; every 1000th ISR is null."""
    return spark.range(start, start + ROWS, numPartitions=3).select(
        F.col("id").alias("offset"),
        (F.col("id") % 3).cast("int").alias("leader"),
        F.when(F.col("id") % 1000 == 999, F.lit(None))
        .otherwise(F.array((F.col("id") % 3).cast("int"), ((F.col("id") + 1) % 3).cast("int")))
        .alias("isr"),
    )


def _log_entries(root: Path, version: int) -> list[dict]:
    """The actions of one commit, straight from the JSON log (what any Delta reader sees)."""
    log = root / "_delta_log" / f"{version:020d}.json"
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def test_spark_writes_parquet_and_delta_rs_commits_it(spark: SparkSession, tmp_path: Path) -> None:
    root = tmp_path / "partitions"

    version = commit_parquet(_partitions(spark), str(root), mode="append")

    assert version == 0
    entries = _log_entries(root, 0)
    adds = [entry["add"] for entry in entries if "add" in entry]
    assert len(adds) == 3
    commit_info = next(entry["commitInfo"] for entry in entries if "commitInfo" in entry)
    staging = commit_info[STAGING_KEY]
    assert staging.startswith("part-")
    for add in adds:
        assert add["path"].startswith(f"{staging}/") and add["path"].endswith(".parquet")
        assert add["size"] == (root / add["path"]).stat().st_size
        assert add["partitionValues"] == {} and add["dataChange"] is True
    stats = sorted((json.loads(add["stats"]) for add in adds), key=lambda s: s["minValues"]["offset"])
    assert sum(s["numRecords"] for s in stats) == ROWS
    assert stats[0]["minValues"] == {"offset": 0, "leader": 0}
    assert stats[-1]["maxValues"] == {"offset": ROWS - 1, "leader": 2}
    # Stats come from the Parquet footers, which count an array's null elements, not its null values:
    # array columns get no null count rather than a wrong one.
    assert all("isr" not in s["nullCount"] for s in stats)
    assert all(s["nullCount"]["offset"] == 0 for s in stats)

    table = DeltaTable(str(root))
    protocol = table.protocol()
    assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 2)
    # The stats are valid for delta-rs: a predicate on offset prunes to the one file holding it.
    assert len(table.file_uris(file_pruning_predicate="offset >= 9990")) == 1

    arrow_rows = table.to_pyarrow_table().sort_by("offset").to_pylist()
    assert len(arrow_rows) == ROWS
    assert arrow_rows[4242] == {"offset": 4242, "leader": 0, "isr": [0, 1]}
    assert arrow_rows[999] == {"offset": 999, "leader": 0, "isr": None}

    spark_rows = [row.asDict() for row in read_delta(spark, str(root)).orderBy("offset").collect()]
    assert spark_rows == arrow_rows


def test_spark_writes_distinct_columns_without_a_dictionary(spark: SparkSession, tmp_path: Path) -> None:
    """A version's start time repeats a few times (records of one millisecond): Parquet would keep a dictionary for
    it, and build it until it outgrows its page on a large table; it is written plain. A leader id keeps one."""
    root = tmp_path / "versions"
    rows = spark.range(10_000).select(
        F.col("id").alias("valid_from_offset"), (F.col("id") / 10).cast("long").alias("valid_from_time_ms"),
        (F.col("id") % 3).cast("int").alias("leader"))
    commit_parquet(rows.coalesce(1), str(root), mode="append")

    (uri,) = DeltaTable(str(root)).file_uris()
    row_group = pq.ParquetFile(uri.removeprefix("file://")).metadata.row_group(0)
    chunks = {row_group.column(i).path_in_schema: row_group.column(i) for i in range(row_group.num_columns)}
    assert {"valid_from_offset", "valid_from_time_ms"} <= set(DISTINCT_COLUMNS)
    assert not chunks["valid_from_time_ms"].has_dictionary_page
    assert not chunks["valid_from_offset"].has_dictionary_page
    assert chunks["leader"].has_dictionary_page


def test_append_overwrite_and_time_travel(spark: SparkSession, tmp_path: Path) -> None:
    root = str(tmp_path / "partitions")
    assert commit_parquet(_partitions(spark), root, mode="append") == 0
    assert commit_parquet(_partitions(spark, start=ROWS), root, mode="append") == 1
    assert read_delta(spark, root).count() == 2 * ROWS

    assert commit_parquet(_partitions(spark).limit(5), root, mode="overwrite") == 2
    assert sorted(row.offset for row in read_delta(spark, root).collect()) == [0, 1, 2, 3, 4]
    assert read_delta(spark, root, version=1).count() == 2 * ROWS
    assert read_delta(spark, root, version=0).agg(F.max("offset")).first()[0] == ROWS - 1

    assert commit_parquet(_partitions(spark).limit(0), root, mode="overwrite") == 3
    assert read_delta(spark, root).count() == 0
    assert read_delta(spark, root).columns == ["offset", "leader", "isr"]


def test_append_with_another_schema_is_refused(spark: SparkSession, tmp_path: Path) -> None:
    root = str(tmp_path / "partitions")
    commit_parquet(_partitions(spark), root, mode="append")
    renamed = _partitions(spark).withColumnRenamed("leader", "leader_id")
    with pytest.raises(ValueError, match="cannot append"):
        commit_parquet(renamed, root, mode="append")
    assert DeltaTable(root).version() == 0
    # the refused rows were written before the check (their schema is their files'): nothing of them is left
    committed = next(e["commitInfo"][STAGING_KEY] for e in _log_entries(Path(root), 0) if "commitInfo" in e)
    assert [path.name for path in Path(root).iterdir() if path.name != "_delta_log"] == [committed]


def test_a_write_takes_its_schema_from_the_files_spark_wrote(spark: SparkSession, tmp_path: Path) -> None:
    """The schema committed is the one in the Parquet footers (nullability as Spark's own schema has it), asked of
    Spark only when a write left no file (a split write of no rows)."""
    rows = _partitions(spark).select("offset", "leader", "isr", F.lit(True).alias("open"),
                                     F.coalesce("leader", F.lit(0)).alias("leader_or_0"))
    root = str(tmp_path / "split")
    assert commit_parquet(rows, root, mode="overwrite", split_by="open") == 0
    staging = next(e["commitInfo"][STAGING_KEY] for e in _log_entries(Path(root), 0) if "commitInfo" in e)
    expected = rows.drop("open").schema
    assert add_actions(None, str(Path(root).resolve()), staging)[0] == expected
    assert [(f.name, f.nullable) for f in expected.fields] == [("offset", False), ("leader", True), ("isr", True),
                                                              ("leader_or_0", False)]

    def committed() -> list[tuple[str, bool]]:
        return [(f["name"], f["nullable"]) for f in json.loads(DeltaTable(root).schema().to_json())["fields"]]

    assert committed() == [(f.name, f.nullable) for f in expected.fields]
    assert commit_parquet(rows.limit(0), root, mode="overwrite", split_by="open") == 1  # no file written
    assert read_delta(spark, root).count() == 0 and committed() == [(f.name, f.nullable) for f in expected.fields]


def _split_files(root: str) -> dict[str, list[tuple[list[dict], dict]]]:
    """Each split directory's files in path order: their rows in order, and their Delta statistics."""
    table = DeltaTable(root)
    files: dict[str, list[tuple[list[dict], dict]]] = {}
    for entry in sorted((e["add"] for v in range(table.version() + 1) for e in _log_entries(Path(root), v)
                         if "add" in e), key=lambda add: add["path"]):
        split = entry["path"].split("/")[1]
        files.setdefault(split, []).append((pq.read_table(f"{root}/{entry['path']}").to_pylist(),
                                            json.loads(entry["stats"])))
    return files


def test_the_driver_writes_a_split_table_as_spark_writes_it(spark: SparkSession, tmp_path: Path) -> None:
    """Rows the driver holds (an Arrow table carrying its Spark schema) are committed as Spark's write of the same
    DataFrame: the same split directories, rows in the same order, the same Delta schema (an array's containsNull
    too) and statistics."""
    rows = _partitions(spark).select("offset", "leader", "isr", F.lit("kind").alias("kind"),
                                     (F.col("offset") % 7 == 0).alias("open")
                                     ).repartition(1).sortWithinPartitions("open", "leader", "offset")
    by_spark, by_driver = str(tmp_path / "spark"), str(tmp_path / "driver")
    assert commit_parquet(rows, by_spark, mode="overwrite", split_by="open") == 0
    held = with_spark_schema(rows.toArrow(), rows.schema)
    assert commit_parquet(held, by_driver, mode="overwrite", split_by="open") == 0
    assert DeltaTable(by_driver).schema().to_json() == DeltaTable(by_spark).schema().to_json()
    assert [f.nullable for f in spark_columns(held, "open")] == [False, True, True, False]
    written = _split_files(by_driver)
    assert written == _split_files(by_spark)
    assert sorted(written) == ["open=false", "open=true"]
    assert sum(len(file_rows) for files in written.values() for file_rows, _stats in files) == ROWS
    assert written["open=true"][0][1]["minValues"] == {"offset": 0, "leader": 0, "kind": "kind"}


def test_the_driver_cuts_its_files_at_rows_per_file_and_refuses_a_row_without_split(spark: SparkSession,
                                                                                      tmp_path: Path) -> None:
    rows = _partitions(spark).select("offset", (F.col("offset") >= 9_000).alias("open")).orderBy("offset")
    held = with_spark_schema(rows.toArrow(), rows.schema)
    root = str(tmp_path / "cut")
    commit_parquet(held, root, mode="overwrite", split_by="open", rows_per_file=4_000)
    files = _split_files(root)
    assert [len(file_rows) for file_rows, _stats in files["open=false"]] == [4_000, 4_000, 1_000]
    assert [len(file_rows) for file_rows, _stats in files["open=true"]] == [1_000]
    assert [row["offset"] for file_rows, _stats in files["open=false"] for row in file_rows] == list(range(9_000))
    unsplit = held.set_column(1, "open", pa.array([None] * held.num_rows, pa.bool_()))
    with pytest.raises(ValueError, match=f"{ROWS} rows have no open value"):
        commit_parquet(unsplit, str(tmp_path / "unsplit"), mode="overwrite", split_by="open")
    assert not DeltaTable.is_deltatable(str(tmp_path / "unsplit"))


def test_timestamp_and_struct_stats_are_valid_bounds(spark: SparkSession, tmp_path: Path) -> None:
    root = tmp_path / "events"
    events = spark.createDataFrame(
        [
            (1, datetime(2024, 5, 1, 12, 0, 0, 123_456, tzinfo=UTC), ("broker", 7)),
            (2, datetime(2024, 5, 1, 12, 0, 1, 999_999, tzinfo=UTC), ("broker", None)),
        ],
        "offset long, appended_at timestamp, source struct<kind: string, id: int>",
    ).coalesce(1)

    commit_parquet(events, str(root), mode="append")

    (add,) = [entry["add"] for entry in _log_entries(root, 0) if "add" in entry]
    stats = json.loads(add["stats"])
    # Millisecond precision like delta-spark, rounded outwards so the bounds still hold.
    assert stats["minValues"]["appended_at"] == "2024-05-01T12:00:00.123Z"
    assert stats["maxValues"]["appended_at"] == "2024-05-01T12:00:02.000Z"
    assert stats["minValues"]["source"] == {"kind": "broker", "id": 7}
    assert stats["nullCount"]["source"] == {"kind": 0, "id": 1}
    table = DeltaTable(str(root))
    assert table.file_uris(file_pruning_predicate="appended_at > '2024-05-01T12:00:03Z'") == []
    rows = read_delta(spark, str(root)).orderBy("offset").collect()
    # PySpark gives naive datetimes in the Python process's local time zone.
    assert rows[1].appended_at.astimezone(UTC) == datetime(2024, 5, 1, 12, 0, 1, 999_999, tzinfo=UTC)
    assert rows[1].source.id is None


def test_embedded_default_has_delta_spark_and_spark_avro_from_the_jar_cache(spark: SparkSession) -> None:
    jars = installed()
    assert jars is not None, "make setup fetches the jars (lakehouse.jars)"
    assert has_delta_spark(spark) is True
    assert spark.conf.get("spark.sql.extensions") == DELTA_EXTENSION
    on_classpath = spark.sparkContext.getConf().get("spark.jars") or ""
    assert {path.name for path in jars.paths} <= {Path(uri).name for uri in on_classpath.split(",")}
    assert any(path.name.endswith(f"spark-avro_2.13-{spark.version}.jar") for path in jars.paths)


def test_session_defaults(spark: SparkSession) -> None:
    assert spark.conf.get("spark.sql.shuffle.partitions") == "4"
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert spark.conf.get("spark.sql.parquet.outputTimestampType") == "TIMESTAMP_MICROS"
    assert spark.conf.get("spark.sql.execution.arrow.pyspark.enabled") == "true"
    assert spark.sparkContext.master == "local[2]"


def test_a_driver_started_here_runs_the_throughput_collector(spark: SparkSession) -> None:
    assert DRIVER_GC in session_conf(SparkOptions(), local=True)[DRIVER_JAVA_OPTIONS].split()
    # the run's session is such a driver: the JVM's own collectors say which one it runs (G1's are "G1 ...")
    beans = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    assert sorted(bean.getName() for bean in beans) == ["PS MarkSweep", "PS Scavenge"]


def test_a_commands_driver_heap_is_2_gib_unless_the_environment_says(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DRIVER_MEMORY_ENV, raising=False)
    assert local_driver_memory() == DEFAULT_DRIVER_MEMORY == "2g"
    monkeypatch.setenv(DRIVER_MEMORY_ENV, " 6G ")
    assert local_driver_memory() == "6G"
    assert session_conf(SparkOptions(), local=True)["spark.driver.memory"] == "6G"
    assert session_conf(SparkOptions(driver_memory="3g"), local=True)["spark.driver.memory"] == "3g"
    for wrong in ("lots", "0g", "2 g", "-1g", "2gb"):
        monkeypatch.setenv(DRIVER_MEMORY_ENV, wrong)
        with pytest.raises(SparkUnavailableError, match=f"{DRIVER_MEMORY_ENV}=.*expected a JVM memory size"):
            local_driver_memory()


def test_rows_spilled_to_disk_are_written_with_kryo_and_come_back_whole(spark: SparkSession) -> None:
    assert spark.sparkContext.getConf().get("spark.serializer") == KRYO_SERIALIZER
    rows = [(7, [1, 2, None], {"retention.ms": "604800000"}, Decimal("12345678901234567890.5")), (8, None, {}, None)]
    spilled = spark.createDataFrame(
        rows, "offset long, isr array<int>, configs map<string,string>, big decimal(38,1)",
    ).persist(StorageLevel.DISK_ONLY)
    try:
        assert spilled.storageLevel == StorageLevel.DISK_ONLY
        assert [tuple(row) for row in spilled.orderBy("offset").collect()] == rows
    finally:
        spilled.unpersist()
