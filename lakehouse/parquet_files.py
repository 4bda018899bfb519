"""The Parquet files Spark writes, as the driver sees them: where they are (pyarrow's filesystem for a lake's
path or object-store URI), the Spark schema Spark wrote into their footers, and the Delta statistics of each file
(row count; min, max and null count per column) from the same footers, without a second pass over the rows; and the
files the driver writes itself from rows it holds, laid out as Spark's writer lays them out."""

from __future__ import annotations

import json
import math
import shutil
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from deltalake.transaction import AddAction
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    ByteType,
    DataType,
    DateType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructType,
    TimestampType,
)

# The footer key under which Spark writes the Spark schema of a Parquet file (ParquetReadSupport.SPARK_METADATA_KEY).
SPARK_ROW_METADATA = b"org.apache.spark.sql.parquet.row.metadata"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Types whose min/max go into Delta stats; the rest (booleans, binary, nested) only get null counts.
_MIN_MAX_TYPES = (ByteType, ShortType, IntegerType, LongType, FloatType, DoubleType, StringType, DateType)
# Hadoop's S3 connector (what Spark uses) names S3 `s3a://`; delta-rs takes both; pyarrow knows only `s3://`.
_ARROW_SCHEMES = {"s3a": "s3"}
# Columns whose values are (nearly) all distinct: the log's offsets, the versions' bounds and causes. Parquet's writer
# builds a dictionary for each column chunk until it outgrows its page, then writes the chunk plain all the same: for
# these columns that work is wasted, so Spark's writer skips it (the large replay tables written faster, their files
# no larger: BENCHMARKS.md, issue 42).
DISTINCT_COLUMNS = ("offset", "valid_from_offset", "valid_to_offset", "valid_from_time_ms", "valid_to_time_ms",
                    "cause_offset")


def arrow_filesystem(uri: str) -> tuple[pafs.FileSystem, str]:
    """pyarrow's filesystem and path for a local path or an object-store URI (s3a:// read as s3://)."""
    if "://" not in uri:
        return pafs.LocalFileSystem(), uri
    scheme, rest = uri.split("://", 1)
    return pafs.FileSystem.from_uri(f"{_ARROW_SCHEMES.get(scheme.lower(), scheme)}://{rest}")


def delete_directory(uri: str) -> None:
    """Remove a directory of files that will not be committed (a staging directory), best effort: a leftover one
    is only wasted space, removed later by vacuum."""
    try:
        if "://" in uri:
            filesystem, path = arrow_filesystem(uri)
            filesystem.delete_dir(path)
        else:
            shutil.rmtree(uri, ignore_errors=True)
    except OSError:
        pass


def parquet_files(filesystem: pafs.FileSystem, directory: str) -> list[pafs.FileInfo]:
    """The data files Spark wrote under ``directory`` (its subdirectories too), in path order."""
    infos = [info for info in filesystem.get_file_info(pafs.FileSelector(directory, recursive=True))
             if info.is_file and info.base_name.endswith(".parquet") and not info.base_name.startswith((".", "_"))]
    return sorted(infos, key=lambda info: info.path)


def _arrow_schema(columns: StructType) -> pa.Schema:
    """The Arrow types of Spark's ``columns``, carrying ``columns`` themselves in the schema's metadata under the key
    Spark's files keep them in (``SPARK_ROW_METADATA``): Arrow's own types lose an array's ``containsNull``."""
    arrow = to_arrow_schema(columns, error_on_duplicated_field_names_in_struct=True)
    return arrow.with_metadata({SPARK_ROW_METADATA: columns.json()})


def with_spark_schema(rows: pa.Table, columns: StructType) -> pa.Table:
    """``rows`` (Arrow, e.g. fetched from Spark) cast to the Arrow types of their Spark schema ``columns``, carrying
    ``columns`` (``spark_columns`` reads them back)."""
    return rows.cast(_arrow_schema(columns))


def spark_rows(rows: list[dict[str, Any]], columns: StructType) -> pa.Table:
    """Rows the driver holds (column → value) as an Arrow table of Spark schema ``columns`` (``with_spark_schema``)."""
    return pa.Table.from_pylist(rows, _arrow_schema(columns))


def spark_columns(rows: pa.Table, split_by: str | None = None) -> StructType:
    """The Spark schema of ``rows`` without ``split_by``: the one ``with_spark_schema`` gave them, else read from
    their Arrow types."""
    written = (rows.schema.metadata or {}).get(SPARK_ROW_METADATA)
    columns = StructType.fromJson(json.loads(written)) if written else from_arrow_schema(rows.schema)
    return StructType([column for column in columns.fields if column.name != split_by])


def spark_writer_options() -> dict[str, str]:
    """The options of Spark's Parquet writer for every table: no dictionary for ``DISTINCT_COLUMNS`` (parquet-mr's
    per-column setting; a table without such a column is written as before)."""
    return {f"parquet.enable.dictionary#{column}": "false" for column in DISTINCT_COLUMNS}


def write_arrow_files(rows: pa.Table, directory: str, columns: StructType, split_by: str | None = None,
                      rows_per_file: int | None = None) -> None:
    """The driver's ``rows`` as Parquet files under ``directory``, in their order, as Spark's writer lays out a
    DataFrame's: with ``split_by`` (a boolean column, left out of the files) one ``<split_by>=true|false``
    subdirectory per value present; at most ``rows_per_file`` rows a file (None: one file a directory); no file
    for no rows. The files hold ``columns`` with their Spark types as Arrow writes them, and in their footers as
    Spark's writer keeps them (``with_spark_schema``), with Parquet's page index (as Spark's its column index)."""
    schema = _arrow_schema(columns)
    filesystem, base = arrow_filesystem(directory)
    filesystem.create_dir(base, recursive=True)  # as Spark's, even for no rows: the staging directory is listed
    groups = {base: rows}
    if split_by is not None:
        split = rows.column(split_by)
        if split.null_count:
            raise ValueError(f"{directory}: {split.null_count} rows have no {split_by} value: a split write needs one")
        groups = {f"{base}/{split_by}={str(value).lower()}": rows.filter(pc.equal(split, value))
                  for value in (False, True)}
    for path, group in groups.items():
        if group.num_rows == 0:
            continue
        filesystem.create_dir(path, recursive=True)
        files = group.select(schema.names).cast(schema)
        size = rows_per_file or files.num_rows
        for number, start in enumerate(range(0, files.num_rows, size)):
            pq.write_table(files.slice(start, size), f"{path}/part-{number:05d}-{uuid.uuid4().hex}.parquet",
                           filesystem=filesystem, write_page_index=True)


def _leaves(schema: StructType, parent: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], DataType]]:
    """Every column outside arrays and maps with its path: Delta stats nest struct fields only."""
    leaves: list[tuple[tuple[str, ...], DataType]] = []
    for struct_field in schema.fields:
        path = (*parent, struct_field.name)
        if isinstance(struct_field.dataType, StructType):
            leaves.extend(_leaves(struct_field.dataType, path))
        elif not isinstance(struct_field.dataType, (ArrayType, MapType)):
            leaves.append((path, struct_field.dataType))
    return leaves


def add_actions(schema: StructType | None, root: str, staging: str) -> tuple[StructType | None, list[AddAction]]:
    """AddActions for the Parquet files Spark (or ``write_arrow_files``) wrote under ``<root>/<staging>/``, with
    Delta stats from each file's footer, and the files' Spark schema: ``schema`` when given, else the one Spark wrote
    into the first footer (None, and no actions, when there is no file or its footer has none). One listing, one
    footer read per file.

    Parquet keeps min, max and null count per row group and column, so the stats cost a footer read per
    file, not a pass over the rows. Array and map columns get none: a footer counts their null *elements*,
    not null values of the column. Files without rows (Spark writes one for an empty DataFrame) are not
    committed.
    """
    filesystem, directory = arrow_filesystem(f"{root}/{staging}")
    actions = []
    for info in parquet_files(filesystem, directory):
        with filesystem.open_input_file(info.path) as handle:
            metadata = pq.ParquetFile(handle).metadata
        if schema is None:
            written = (metadata.metadata or {}).get(SPARK_ROW_METADATA)
            if written is None:
                return None, []  # not written by Spark: the caller knows the schema
            schema = StructType.fromJson(json.loads(written))
        if metadata.num_rows == 0:
            continue
        stats: dict[str, Any] = {"numRecords": metadata.num_rows, "minValues": {}, "maxValues": {}, "nullCount": {}}
        chunks = _footer_columns(metadata)
        for path, data_type in _leaves(schema):
            found = chunks.get(path)
            if found is None:
                continue
            nulls, low, high = found
            _put(stats["nullCount"], path, nulls)
            if isinstance(data_type, (*_MIN_MAX_TYPES, TimestampType)) and low is not None:
                _put(stats["minValues"], path, _stat_value(low, data_type, upper=False))
                _put(stats["maxValues"], path, _stat_value(high, data_type, upper=True))
        actions.append(
            AddAction(
                path=f"{staging}/{info.path[len(directory):].lstrip('/')}",
                size=info.size,
                partition_values={},
                modification_time=int(info.mtime.timestamp() * 1000),
                data_change=True,
                stats=json.dumps(_prune(stats), allow_nan=False),
            )
        )
    return schema, actions


def _footer_columns(metadata: pq.FileMetaData) -> dict[tuple[str, ...], tuple[int | None, Any, Any]]:
    """Column path → (null count, min, max) over every row group of a file: the null count is None when a
    row group lacks one; min and max are None when a row group with values lacks them."""
    nulls: dict[tuple[str, ...], int | None] = {}
    bounds: dict[tuple[str, ...], tuple[Any, Any]] = {}
    unknown: set[tuple[str, ...]] = set()
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for index in range(row_group.num_columns):
            chunk = row_group.column(index)
            path = tuple(chunk.path_in_schema.split("."))
            stats = chunk.statistics
            count = stats.null_count if stats is not None and stats.has_null_count else None
            previous = nulls.get(path, 0)
            nulls[path] = None if count is None or previous is None else previous + count
            if stats is not None and stats.has_min_max:
                # Timestamps as their physical epoch microseconds; everything else as its logical value.
                raw = stats.logical_type.type == "TIMESTAMP"
                low, high = (stats.min_raw, stats.max_raw) if raw else (stats.min, stats.max)
                if path in bounds:
                    low, high = min(bounds[path][0], low), max(bounds[path][1], high)
                bounds[path] = (low, high)
            elif count is None or chunk.num_values > count:
                unknown.add(path)
    return {path: (count, *((None, None) if path in unknown else bounds.get(path, (None, None))))
            for path, count in nulls.items()}


def _stat_value(value: Any, data_type: DataType, *, upper: bool) -> Any:
    """JSON form of a min/max; None (left out) when JSON cannot hold it exactly enough to be a bound.

    Timestamps arrive as epoch microseconds and are written at millisecond precision like delta-spark,
    rounded outwards so the bound still holds.
    """
    if isinstance(data_type, TimestampType):
        millis = -(-value // 1000) if upper else value // 1000
        moment = _EPOCH + timedelta(milliseconds=millis)
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    if isinstance(data_type, DateType):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _put(target: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    """Set a nested stats value (Delta nests struct fields); None values are skipped."""
    if value is None:
        return
    for part in path[:-1]:
        target = target.setdefault(part, {})
    target[path[-1]] = value


def _prune(stats: dict[str, Any]) -> dict[str, Any]:
    """Drop empty stats sections so readers see no stats rather than misleading empty ones."""
    return {key: value for key, value in stats.items() if value != {}}


__all__ = ["DISTINCT_COLUMNS", "SPARK_ROW_METADATA", "add_actions", "arrow_filesystem", "delete_directory",
           "parquet_files", "spark_columns", "spark_rows", "spark_writer_options", "with_spark_schema",
           "write_arrow_files"]
