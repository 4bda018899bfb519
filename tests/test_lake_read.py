"""Reading the lake (``lakehouse.lake_read``): time travel by version and by timestamp."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from lakehouse.ingest import IngestOptions, ingest
from lakehouse.lake import Lake, LakeError, read_table
from lakehouse.tables import METADATA_LOG
from tests.test_lake_support import CLUSTER, simulated, write_jsonl_file


def test_time_travel_by_version_and_timestamp(spark: SparkSession, tmp_path: Path) -> None:
    entries = simulated()
    lake = Lake(tmp_path / "lake")
    ingest(spark, lake, write_jsonl_file(tmp_path / "a.jsonl", entries[:100]), IngestOptions(cluster_id=CLUSTER))
    time.sleep(1.1)
    between = datetime.now(UTC)
    time.sleep(1.1)
    ingest(spark, lake, write_jsonl_file(tmp_path / "b.jsonl", entries[:250]), IngestOptions(cluster_id=CLUSTER))
    assert read_table(spark, lake, METADATA_LOG, version=1).count() == 100
    assert read_table(spark, lake, METADATA_LOG, version=2).count() == 250
    assert read_table(spark, lake.root, METADATA_LOG, timestamp=between).count() == 100
    assert read_table(spark, lake, METADATA_LOG, timestamp=between.isoformat()).count() == 100
    assert read_table(spark, lake, METADATA_LOG).count() == 250
    history = lake.history(METADATA_LOG)
    assert [(h.version, h.operation, h.rows_added) for h in history] == [
        (2, "ingest", 150), (1, "ingest", 100), (0, "CREATE TABLE", None)]
    with pytest.raises(LakeError):
        lake.read(spark, METADATA_LOG, version=9)
