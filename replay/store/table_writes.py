"""Writing the replay's tables in their deterministic layout (``replay.store.layout``): a table overwritten whole,
or only its files of open versions replaced, at most ``ROWS_PER_FILE`` rows a file; the small tables at once."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from lakehouse.concurrent_jobs import run_concurrently
from lakehouse.lake import ROWS_PER_FILE, Lake
from lakehouse.parquet_files import with_spark_schema
from lakehouse.spark_settings import spark_conf
from lakehouse.tables import ANOMALY_ORDER, HISTORY_KEYS, HISTORY_TABLES, REPLAY_ANOMALIES
from replay.store.derived import GROWING_HISTORY
from replay.store.layout import sorted_layout, topic_ranges_of

MAX_RECORDS_CONF = "spark.sql.files.maxRecordsPerFile"
RECORDS_WRITTEN_AT_ONCE = 100_000  # up to this many records replayed, every table is written at once
# Up to this many records replayed (a full replay's; an increment's new ones plus the rows of the files it replaces),
# a table's rows are fetched by the driver in one Arrow request and written by it: a Spark write job costs the server
# about five times that fetch, most of a small table's write (issue 42, BENCHMARKS.md). Larger writes stay on the
# executors.
DRIVER_WRITTEN_UP_TO = 100_000
WRITING = "computing and writing "  # the stage of each table's write (a progress hook times it; bench.floor too)
TABLES_APART = ", "  # between the names of the tables one stage writes at once


def write_sorted(lake: Lake, df: DataFrame, name: str, order: tuple[str, ...], records: int) -> int:
    """Overwrite ``name`` with ``df`` in the deterministic layout of a replay of ``records``; returns the Delta
    version written. The history tables keep Delta's Change Data Feed (``table_changes``: what each replay
    changed)."""
    ordered, split = sorted_layout(df, name, order, records)
    if _driver_written(name, records):
        return lake.write(_fetched(ordered), name, "overwrite", split_by=split,
                          change_data_feed=name in HISTORY_TABLES)
    with spark_conf(df.sparkSession, MAX_RECORDS_CONF, str(ROWS_PER_FILE)):
        return lake.write(ordered, name, "overwrite", split_by=split, change_data_feed=name in HISTORY_TABLES)


def write_tables(spark: SparkSession, lake: Lake, tables: dict[str, DataFrame], tell: Callable[[str], None],
                 records: int, open_files: Mapping[str, tuple[list[str], int]] | None = None) -> dict[str, int]:
    """Write the replay's tables (name → rows) of ``records`` folded records; name → version. A table in
    ``open_files`` (name → its files of open versions and the version they are of) has those replaced
    (``replace_open_versions``), any other is overwritten (``write_sorted``). Small tables are written at once
    (``run_concurrently``): such a write is mostly fixed latency. The growing history tables of more than
    ``RECORDS_WRITTEN_AT_ONCE`` records are large sorts: written first, one after the other."""
    replaced = open_files or {}

    def action(name: str) -> Callable[[], int]:
        order = ANOMALY_ORDER if name == REPLAY_ANOMALIES else (*HISTORY_KEYS[name], "valid_from_offset")
        if name not in replaced:
            return partial(write_sorted, lake, tables[name], name, order, records)
        return partial(replace_open_versions, lake, tables[name], name, order, records, *replaced[name])

    versions: dict[str, int] = {}
    large = [n for n in tables if n in GROWING_HISTORY and records > RECORDS_WRITTEN_AT_ONCE]
    for name in large:
        tell(f"{WRITING}{name}")
        versions[name] = action(name)()
    small = [n for n in tables if n not in large]
    if small:
        tell(WRITING + TABLES_APART.join(small))
        versions |= run_concurrently(spark, {name: action(name) for name in small})
    return versions


def replaceable_rows(spark: SparkSession, lake: Lake, name: str, files: list[str]) -> DataFrame:
    """The stored rows of ``name`` a replay may still change: the rows of ``files`` (those holding open versions or
    other mutable rows, ``replay.store.layout.mutable_where``, written apart from the settled ones)."""
    return lake.read_files(spark, name, files)


def replace_open_versions(lake: Lake, df: DataFrame, name: str, order: tuple[str, ...], records: int,
                          files: list[str], version: int) -> int:
    """Replace the rows ``replaceable_rows`` gave (the files ``files`` of version ``version``) with ``df``, in the
    same layout as ``write_sorted`` (of an increment of ``records`` new records); the table's other files are
    kept."""
    ordered, split = sorted_layout(df, name, order, records)
    if _driver_written(name, records, _rows_in(lake, name, files, version)):
        return lake.replace_files(_fetched(ordered), name, files, version, split_by=split)
    with spark_conf(df.sparkSession, MAX_RECORDS_CONF, str(ROWS_PER_FILE)):
        return lake.replace_files(ordered, name, files, version, split_by=split)


def _driver_written(name: str, records: int, replaced: int = 0) -> bool:
    """Table ``name``'s rows from ``records`` (and the ``replaced`` rows of the files they replace) are written by
    the driver: few, and one file a split value (a table cut into topic ranges keeps a file per range: Spark's
    executors write it)."""
    return records + replaced <= DRIVER_WRITTEN_UP_TO and topic_ranges_of(name, records) == 1


def _fetched(df: DataFrame) -> pa.Table:
    """``df``'s rows as Arrow, in their order, with their Spark schema (``with_spark_schema``), in one request. On
    Spark Connect its ``toArrow`` asks for the schema first, an analysis of the plan that costs the server about as
    much as the fetch itself: the schema the fetch's answer carries is the same."""
    to_table = getattr(df, "_to_table", None)  # Spark Connect's DataFrame: the fetch under its toArrow
    if to_table is None:
        return with_spark_schema(df.toArrow(), df.schema)
    rows, schema = to_table()
    if schema is None:
        schema = df.schema
    return with_spark_schema(rows, schema)


def _rows_in(lake: Lake, name: str, files: list[str], version: int) -> int:
    """The rows of ``files`` of table ``name`` at ``version`` (a file without statistics counts as more than the
    driver writes)."""
    counts = lake.file_rows(name, version)
    return sum(counts.get(path) or DRIVER_WRITTEN_UP_TO + 1 for path in files)


__all__ = ["DRIVER_WRITTEN_UP_TO", "MAX_RECORDS_CONF", "RECORDS_WRITTEN_AT_ONCE", "TABLES_APART", "WRITING",
           "replace_open_versions", "replaceable_rows", "write_sorted", "write_tables"]
