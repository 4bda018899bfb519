"""Maintenance of the lake (``lakehouse.lake_maintenance``): history, optimize, vacuum."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from kraft_replay.lake_commands import standalone_app
from lakehouse.ingest import IngestOptions, ingest
from lakehouse.lake import Lake, read_table
from lakehouse.tables import METADATA_LOG
from tests.test_lake_support import CLUSTER, simulated, stored_offsets, write_jsonl_file


def test_lake_commands_history_tables_optimize_vacuum(spark: SparkSession, tmp_path: Path) -> None:
    entries = simulated()
    lake = Lake(tmp_path / "lake")
    for end in (100, 200, 300):
        ingest(spark, lake, write_jsonl_file(tmp_path / f"{end}.jsonl", entries[:end]),
               IngestOptions(cluster_id=CLUSTER))
    assert len(DeltaTable(lake.path(METADATA_LOG)).file_uris()) == 3
    runner = CliRunner()
    app = standalone_app()
    result = runner.invoke(app, ["lake", "history", METADATA_LOG, "--lake", lake.root])
    assert result.exit_code == 0, result.output
    assert "ingest" in result.output and "CREATE TABLE" in result.output
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    try:  # the command calls get_spark(), which resets the shared session's runtime defaults
        result = runner.invoke(app, ["lake", "optimize", "--lake", lake.root, "--table", METADATA_LOG,
                                     "--master", "local[2]"])
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    assert result.exit_code == 0, result.output
    table = DeltaTable(lake.path(METADATA_LOG))
    files = pa.table(table.get_add_actions(flatten=True))
    assert files.num_rows == 1 and files.column("min.offset")[0].as_py() == 0
    assert files.column("max.offset")[0].as_py() == 299
    assert stored_offsets(lake) == list(range(300))
    assert read_table(spark, lake, METADATA_LOG, version=2).count() == 200  # time travel still works
    assert list((Path(lake.path(METADATA_LOG)) / "_delta_log").glob("*.checkpoint.parquet"))
    result = runner.invoke(app, ["lake", "tables", "--lake", lake.root])
    assert result.exit_code == 0 and "metadata_log" in result.output and "300" in result.output
    result = runner.invoke(app, ["lake", "vacuum", "--lake", lake.root])  # 7 days: nothing is old enough
    assert result.exit_code == 0 and "metadata_log: 0 file(s) deleted" in result.output
    deleted = lake.vacuum(retention_hours=0)
    assert len(deleted[METADATA_LOG]) == 3  # the compacted-away files; the current one stays
    assert stored_offsets(lake) == list(range(300))
    result = runner.invoke(app, ["lake", "history", "nope", "--lake", lake.root])
    assert result.exit_code != 0
