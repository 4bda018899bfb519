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

from lakehouse.delta_commit import plain_parquet, read_delta
from lakehouse.lake_root import LakeError, LakeRoot, as_datetime, table_arrow_schema
from lakehouse.tables import SCHEMAS, spark_schema

# A table version of at most this many files is read as its Parquet files (``LakeReads.read``): a replay writes a
# small table in one to three (``replay.store.layout``), a large one in a few per topic range.
FEW_FILES = 8


class LakeReads(LakeRoot):
    """The reading half of `lakehouse.lake.Lake`."""

    def read(self, spark: SparkSession, name: str, version: int | None = None,
             timestamp: datetime | str | None = None) -> DataFrame:
        """The table as a Spark DataFrame, as of a Delta version or a timestamp (latest by default). Through
        delta-spark when the session has it, but for a version of at most ``FEW_FILES`` files: read as the Parquet
        files its Delta log lists (``read_as_files``), as delta-spark would rebuild the table's state and choose
        among files it has no room to skip, a Spark job each (issue 42: most of a small summary's queries)."""
        if self.delta_spark(spark) is not None and (timestamp is not None or not self._few_files(name, version)):
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

    def _few_files(self, name: str, version: int | None) -> bool:
        """Whether the version has at most ``FEW_FILES`` files and no Delta feature a Parquet read would miss."""
        table = self.delta_table(name, version)
        return len(table.file_uris()) <= FEW_FILES and plain_parquet(table)

    def read_offsets(self, spark: SparkSession, name: str, cluster_id: str, first: int, last: int,
                     version: int | None = None) -> DataFrame:
        """Rows of `cluster_id` with `first <= offset <= last`, reading only files whose stats overlap: chosen from
        the Delta log on the driver, whichever engine the lake has (delta-spark would run jobs to rebuild the
        table's state and skip files: most of an increment's read of its new records, issue 42)."""
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

    def file_rows(self, name: str, version: int | None = None) -> dict[str, int | None]:
        """Each data file of table ``name`` (its current version by default) → its rows, from the Delta log's per-file
        statistics (no Spark job; None: a file without them)."""
        files = pa.table(self.delta_table(name, version).get_add_actions(flatten=True))
        if files.num_rows == 0:
            return {}
        return dict(zip(files.column("path").to_pylist(), files.column("num_records").to_pylist(), strict=True))

    def rows(self, name: str) -> int:
        """Rows of the table's current version, from the Delta log's per-file statistics (no Spark job)."""
        return sum(n or 0 for n in self.file_rows(name).values())

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

    def read_as_files(self, spark: SparkSession, name: str, version: int | None = None) -> DataFrame:
        """The table as of ``version`` (the latest by default), read as the Parquet files its Delta log lists there
        (delta-rs on the driver): the rows ``read`` gives, without the jobs delta-spark runs to rebuild a table's
        state before each scan (issue 42: they were a third of an increment's time). A table using deletion
        vectors or column mapping (which a plain Parquet read would miss) is refused
        (``lakehouse.delta_commit.read_delta``)."""
        return read_delta(spark, self.path(name), version)


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
    files = _file_bounds(table, (column,))
    if files is None:
        return None
    held = [(cmin, cmax, bounds) for cmin, cmax, bounds in files
            if cmin is None or cmax is None or cmin <= cluster_id <= cmax]
    if any(cmin != cluster_id or cmax != cluster_id for cmin, cmax, _ in held):
        return None
    return _summed([bounds[column] for _, _, bounds in held])


def cluster_column_ranges(table: DeltaTable, column: str) -> dict[str, tuple[int, int, int]] | None:
    """Cluster id → (rows, min, max) of the integer ``column`` (its non-null values) for every cluster of
    ``table``, from the Delta log's per-file statistics alone: None when they cannot tell (a file holding two
    clusters or without statistics)."""
    files = _file_bounds(table, (column,))
    if files is None or any(cmin is None or cmin != cmax for cmin, cmax, _ in files):
        return None
    clusters: dict[str, list[tuple[int, Any, Any] | None]] = {}
    for cluster, _, bounds in files:
        clusters.setdefault(cluster, []).append(bounds[column])
    ranges = {cluster: _summed(found) for cluster, found in clusters.items()}
    if any(found is None for found in ranges.values()):
        return None
    return {cluster: found for cluster, found in ranges.items() if found is not None and found[0] > 0}


def cluster_distinct_values(table: DeltaTable, columns: tuple[str, ...]) -> dict[str, set[tuple[Any, ...]]] | None:
    """Cluster id → the distinct non-null tuples of ``columns`` its rows hold, from the Delta log's per-file
    statistics alone: None unless every file holds one cluster and one value of each column (as an ingest writes
    a snapshot's records: one commit per snapshot)."""
    files = _file_bounds(table, columns)
    if files is None:
        return None
    found: dict[str, set[tuple[Any, ...]]] = {}
    for cmin, cmax, bounds in files:
        single = [value[1] for value in (bounds[column] for column in columns)
                  if value is not None and value[1] is not None and value[1] == value[2]]
        if cmin is None or cmin != cmax or len(single) != len(columns):
            return None
        found.setdefault(cmin, set()).add(tuple(single))
    return found


def _file_bounds(table: DeltaTable, columns: tuple[str, ...]
                 ) -> list[tuple[Any, Any, dict[str, tuple[int, Any, Any] | None]]] | None:
    """Each file holding rows: (min cluster_id, max cluster_id, column → (non-null rows, min, max), None where the
    file's statistics lack the column's), from the Delta log; None when the log keeps no statistics of them."""
    files = pa.table(table.get_add_actions(flatten=True))
    if files.num_rows == 0:
        return []
    names = set(files.column_names)
    if not {"min.cluster_id", "max.cluster_id", "num_records"} <= names or any(
            f"{kind}.{column}" not in names for column in columns for kind in ("min", "max", "null_count")):
        return None

    def values(name: str) -> list[Any]:
        return files.column(name).to_pylist()

    rows = values("num_records")
    per_column = {column: list(zip(values(f"null_count.{column}"), values(f"min.{column}"), values(f"max.{column}"),
                                   strict=True)) for column in columns}
    bounds = []
    for index, (cmin, cmax, count) in enumerate(zip(values("min.cluster_id"), values("max.cluster_id"), rows,
                                                    strict=True)):
        if count == 0:
            continue
        if count is None:
            return None
        stated: dict[str, tuple[int, Any, Any] | None] = {}
        for column in columns:
            nulls, low, high = per_column[column][index]
            stated[column] = None if nulls is None else (count - nulls, low, high)
        bounds.append((cmin, cmax, stated))
    return bounds


def _summed(found: list[tuple[int, Any, Any] | None]) -> tuple[int, int, int] | None:
    """(rows, min, max) over some files' (non-null rows, min, max): None when a file's are unknown."""
    rows, low, high = 0, None, None
    for bounds in found:
        if bounds is None:
            return None
        count, vmin, vmax = bounds
        if count == 0:
            continue
        if vmin is None or vmax is None:
            return None
        rows += count
        low = vmin if low is None else min(low, vmin)
        high = vmax if high is None else max(high, vmax)
    return (0, 0, 0) if low is None or high is None else (rows, int(low), int(high))

