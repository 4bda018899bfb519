"""Reading the lake's tables: as of a version or a time (time travel), by offset range, file by file."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from lakehouse.delta_commit import read_delta
from lakehouse.lake_root import LakeError, LakeRoot, as_datetime, table_arrow_schema
from lakehouse.tables import SCHEMAS, spark_schema


class LakeReads(LakeRoot):
    """The reading half of `lakehouse.lake.Lake`."""

    def read(self, spark: SparkSession, name: str, version: int | None = None,
             timestamp: datetime | str | None = None) -> DataFrame:
        """The table as a Spark DataFrame, as of a Delta version or a timestamp (latest by default)."""
        if self.delta_spark(spark) is not None:
            if not self.table_exists(name):
                raise LakeError(f"no table {name!r} in the lake at {self.root}")
            reader = spark.read.format("delta")
            if version is not None:
                reader = reader.option("versionAsOf", version)
            elif timestamp is not None:
                reader = reader.option("timestampAsOf", as_datetime(timestamp).isoformat())
            try:
                return reader.load(self.path(name))
            except AnalysisException as error:
                raise LakeError(f"{name}: cannot load version {version if version is not None else timestamp}: "
                                f"{str(error).splitlines()[0]}") from None
        table = self.delta_table(name, version, timestamp)
        return read_delta(spark, self.path(name), table.version())

    def read_offsets(self, spark: SparkSession, name: str, cluster_id: str, first: int, last: int,
                     version: int | None = None) -> DataFrame:
        """Rows of `cluster_id` with `first <= offset <= last`, reading only files whose stats overlap."""
        if self.delta_spark(spark) is not None:  # Delta's data skipping picks the files (a replay's file_statistics)
            return self.read(spark, name, version=version).filter(
                (F.col("cluster_id") == cluster_id) & F.col("offset").between(first, last))
        table = self.delta_table(name, version)
        uris = overlapping_files(table, {cluster_id: (first, last)})
        schema = spark_schema(name) if name in SCHEMAS else None
        if not uris:
            return spark.createDataFrame([], schema or read_delta(spark, self.path(name), table.version()).schema)
        reader = spark.read.schema(schema) if schema is not None else spark.read
        return reader.parquet(*uris).filter(
            (F.col("cluster_id") == cluster_id) & F.col("offset").between(first, last))

    def files_with_nulls(self, name: str, column: str, version: int | None = None) -> list[str]:
        """Paths (relative to the table) of the files of a version that may hold a null ``column``: a
        null count above zero, or no statistics to rule it out."""
        files = pa.table(self.delta_table(name, version).get_add_actions(flatten=True))
        if files.num_rows == 0:
            return []
        nulls = (files.column(f"null_count.{column}").to_pylist() if f"null_count.{column}" in files.column_names
                 else [None] * files.num_rows)
        return [path for path, count in zip(files.column("path").to_pylist(), nulls, strict=True)
                if count is None or count > 0]

    def file_paths(self, name: str, version: int | None = None) -> list[str]:
        """Paths (relative to the table) of the data files of a version."""
        return pa.table(self.delta_table(name, version).get_add_actions(flatten=True)).column("path").to_pylist()

    def split_files(self, name: str, split: str, version: int | None = None) -> list[str] | None:
        """Paths of the files a ``split_by`` write put on the true side of ``split``; None when the table was
        not written that way (delta-spark, an older layout): then any file may hold such rows."""
        paths = self.file_paths(name, version)
        if paths and not any(f"/{split}=" in f"/{path}" for path in paths):
            return None
        return [path for path in paths if f"/{split}=true/" in f"/{path}"]

    def small_rows(self, name: str, version: int | None = None) -> list[dict[str, Any]]:
        """Every row of a small table (the replay's checkpoints, its coverage: a row per cluster or replay) read by
        delta-rs on the driver, maps as dicts: no Spark job, where each Spark read of a table costs one or more
        (issue 42: an increment's planning read four such tables)."""
        table = self.delta_table(name, version)
        kinds = {field.name: field.type for field in table_arrow_schema(table)}
        rows = table.to_pyarrow_table().to_pylist()
        maps = [column for column, kind in kinds.items() if pa.types.is_map(kind)]
        for row in rows:
            for column in maps:
                if row[column] is not None:
                    row[column] = dict(row[column])
        return rows

    def columns(self, name: str) -> list[str]:
        """The column names of a table, from its Delta log (no Spark job)."""
        return list(table_arrow_schema(self.delta_table(name)).names)

    def read_files(self, spark: SparkSession, name: str, paths: list[str], schema: StructType | None = None
                   ) -> DataFrame:
        """The rows of some files of a table (paths relative to it); ``schema`` by default the table's."""
        if schema is None:
            schema = from_arrow_schema(table_arrow_schema(self.delta_table(name)))
        if not paths:
            return spark.createDataFrame([], schema)
        return spark.read.schema(schema).parquet(*(f"{self.path(name)}/{path}" for path in paths))


def clusters_in_files(spark: SparkSession, table: DeltaTable, uris: list[str]) -> set[str]:
    """The cluster ids in some files of ``table`` (URIs as ``file_uris`` gives them): from each file's statistics
    where its smallest and largest ``cluster_id`` are one (an ingest writes a cluster's records apart), else read."""
    if not uris:
        return set()
    files = pa.table(table.get_add_actions(flatten=True))
    names = set(files.column_names)
    lowest = files.column("min.cluster_id").to_pylist() if "min.cluster_id" in names else [None] * files.num_rows
    highest = files.column("max.cluster_id").to_pylist() if "max.cluster_id" in names else [None] * files.num_rows
    single = {path: low for path, low, high in zip(files.column("path").to_pylist(), lowest, highest, strict=True)
              if low is not None and low == high}
    found: set[str] = set()
    unknown = []
    for uri in uris:
        cluster = next((low for path, low in single.items() if uri.endswith(f"/{path}")), None)
        if cluster is None:
            unknown.append(uri)
        else:
            found.add(cluster)
    if unknown:
        found |= {row["cluster_id"] for row in spark.read.parquet(*unknown).select("cluster_id").distinct().collect()}
    return found


def overlapping_files(table: DeltaTable, ranges: Mapping[str, tuple[int, int]]) -> list[str]:
    """URIs of the files whose (cluster_id, offset) statistics may hold a key in one of the ranges.

    Files without statistics are always included (they cannot be ruled out).
    """
    if not ranges:
        return []
    files = pa.table(table.get_add_actions(flatten=True))
    if files.num_rows == 0:
        return []
    names = files.column_names

    def column(name: str) -> list[Any]:
        return files.column(name).to_pylist() if name in names else [None] * files.num_rows

    paths = files.column("path").to_pylist()
    bounds = zip(column("min.cluster_id"), column("max.cluster_id"), column("min.offset"),
                 column("max.offset"), column("num_records"), strict=True)
    root = table.table_uri.rstrip("/")
    if root.startswith("file://"):
        root = root[len("file://"):]
    chosen = []
    for path, (cmin, cmax, omin, omax, rows) in zip(paths, bounds, strict=True):
        if rows == 0:
            continue
        for cluster, (first, last) in ranges.items():
            if (cmin is None or cmin <= cluster) and (cmax is None or cluster <= cmax) and (
                    omin is None or omin <= last) and (omax is None or first <= omax):
                chosen.append(f"{root}/{path}")
                break
    return chosen


def cluster_column_range(table: DeltaTable, cluster_id: str, column: str) -> tuple[int, int, int] | None:
    """(rows, min, max) of the integer ``column`` over the rows of ``cluster_id``, from the Delta log's per-file
    statistics alone (no data read): None when they cannot tell (a file holding the cluster and another, or a
    file without statistics); (0, 0, 0) when no file holds the cluster."""
    files = pa.table(table.get_add_actions(flatten=True))
    names = files.column_names
    needed = ("min.cluster_id", "max.cluster_id", f"min.{column}", f"max.{column}", "num_records")
    if files.num_rows == 0:
        return (0, 0, 0)
    if any(name not in names for name in needed):
        return None
    rows, low, high = 0, None, None
    for cmin, cmax, vmin, vmax, count in zip(*(files.column(name).to_pylist() for name in needed), strict=True):
        if count == 0 or (cmin is not None and cmax is not None and (cluster_id < cmin or cmax < cluster_id)):
            continue  # holds nothing of the cluster
        if cmin != cluster_id or cmax != cluster_id or vmin is None or vmax is None or count is None:
            return None
        rows += count
        low = vmin if low is None else min(low, vmin)
        high = vmax if high is None else max(high, vmax)
    return (0, 0, 0) if low is None or high is None else (rows, int(low), int(high))

