"""Delta Lake tables without delta-spark: Spark writes and reads Parquet, delta-rs owns the transaction log.

delta-spark's JVM jars come from Maven Central, which the embedded default cannot reach, so:
- `commit_parquet` lets Spark's executors write Parquet into a fresh staging directory inside the
  table root (or the driver, for rows it holds as an Arrow table), takes each file's statistics from its Parquet
  footer (no second pass over the rows), and commits those files with delta-rs as a single Delta transaction (one
  new version; conflict checks and retries are delta-rs's).
- `read_delta` asks delta-rs which files make up a version and has Spark read exactly those.
The tables stay plain Delta (protocol reader 1 / writer 2 for the usual types), readable by delta-spark.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeAlias, cast

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Schema
from deltalake.transaction import AddAction, RemoveAction, Transaction, create_table_with_add_actions
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from lakehouse.parquet_files import (
    add_actions,
    delete_directory,
    spark_columns,
    spark_writer_options,
    write_arrow_files,
)

# Commit-info key naming the staging directory: finds our commit's version and where its files came from.
STAGING_KEY = "kraftReplay.staging"
_STAGING_PREFIX = re.compile(r"[A-Za-z0-9_-]+")  # no '=', '%', '/', leading '.' or '_': plain, visible names
# What a write stages: a Spark DataFrame, whose executors write the files, or an Arrow table the driver holds and
# writes itself (a small replay's tables: fetched in one request each, they cost the server far less than a Spark
# write job each; BENCHMARKS.md, issue 42).
Rows: TypeAlias = DataFrame | pa.Table


def commit_parquet(
    rows: Rows,
    table_root: str,
    mode: Literal["append", "overwrite"],
    staging_prefix: str = "part",
    split_by: str | None = None,
    configuration: Mapping[str, str] | None = None,
    rows_per_file: int | None = None,
) -> int:
    """Write `rows` as Parquet (from Spark, or from the driver: `Rows`) and commit them to the Delta table at
    `table_root`.

    Creates the table (version 0) when there is none. `append` requires the table's column names and
    types (nullability aside); `overwrite` replaces the rows and the schema. Files stay where Spark
    wrote them, in `<table_root>/<staging_prefix>-<uuid>/`, referenced by relative paths. Only
    unpartitioned tables are supported. Returns the Delta version this commit created.

    `split_by`: a column that only sorts the rows into separate files (see `stage_parquet`); it is not
    part of the table. `configuration`: table properties the table has after this commit (set first on an
    existing table that lacks them, as a commit of their own). `rows_per_file`: at most this many rows in a file
    the driver writes (Spark's files: ``spark.sql.files.maxRecordsPerFile``).
    """
    if mode not in ("append", "overwrite"):
        raise ValueError(f"mode must be 'append' or 'overwrite', not {mode!r}")
    root = _normalize_root(table_root)
    existing = DeltaTable(root) if DeltaTable.is_deltatable(root) else None
    if existing is not None and existing.metadata().partition_columns:
        raise ValueError(f"{existing.table_uri} is partitioned: commit_parquet writes unpartitioned files")
    # the schema the files were written with (their footers), checked against the table's before anything commits
    staging, columns, actions = _staged(rows, root, staging_prefix, split_by, None, rows_per_file)
    arrow_schema = to_arrow_schema(columns)
    if existing is not None:
        try:
            _check_target(existing, arrow_schema, mode)
        except ValueError:
            delete_directory(f"{root}/{staging}")
            raise
        properties = existing.metadata().configuration
        missing = {key: value for key, value in (configuration or {}).items() if properties.get(key) != value}
        if missing:
            existing.alter.set_table_properties(missing)

    commit = CommitProperties(custom_metadata={STAGING_KEY: staging})
    if existing is None:
        delta_schema = Schema.from_arrow(arrow_schema)
        create_table_with_add_actions(root, delta_schema, actions, configuration=configuration,
                                      commit_properties=commit)
        return _committed_version(root, staging, since=-1)
    # deltalake only reads the actions, but types them as an (invariant) list of adds and removes
    existing.create_write_transaction(cast("list[AddAction | RemoveAction]", actions), mode=mode, schema=arrow_schema,
                                      commit_properties=commit)
    return _committed_version(root, staging, since=existing.version())


def stage_parquet(
    rows: Rows, table_root: str, staging_prefix: str = "part", split_by: str | None = None,
    columns: StructType | None = None, rows_per_file: int | None = None,
) -> tuple[str, list[AddAction]]:
    """Executors (a DataFrame) or the driver (an Arrow table) write `rows` as Parquet under
    `<table_root>/<prefix>-<uuid>/`; nothing is committed.

    Returns the staging directory (relative to the root) and the AddActions with statistics, for a caller
    that commits them itself (e.g. with its own conflict handling, see `commit_at_version`). Files of a
    staging directory that is never committed are invisible to readers and removed by vacuum.

    `split_by`: a column whose values go to separate files (Spark's ``partitionBy``: one subdirectory per
    value, the column itself left out of the files). The table stays unpartitioned: the column is only a
    way to keep rows apart, e.g. the open versions of a history table from the closed ones. ``columns``: the
    schema of ``table_columns(rows, split_by)``, when the caller has it. ``rows_per_file``: as in `commit_parquet`.
    """
    staging, _columns, actions = _staged(rows, _normalize_root(table_root), staging_prefix, split_by, columns,
                                         rows_per_file)
    return staging, actions


def _staged(rows: Rows, root: str, staging_prefix: str, split_by: str | None, columns: StructType | None,
            rows_per_file: int | None) -> tuple[str, StructType, list[AddAction]]:
    """``stage_parquet``, with the schema of the files written: ``columns`` when given, else the one Spark
    wrote into their footers (no schema request: on Spark Connect one is a request, and the analysis of a deep
    plan costs its server as much as a small job), else asked of Spark (a write that left no file); an Arrow
    table's own (``spark_columns``)."""
    if not _STAGING_PREFIX.fullmatch(staging_prefix):
        raise ValueError(f"staging_prefix must match {_STAGING_PREFIX.pattern}, not {staging_prefix!r}")
    staging = f"{staging_prefix}-{uuid.uuid4().hex}"
    if isinstance(rows, pa.Table):
        if columns is None:
            columns = spark_columns(rows, split_by)
        write_arrow_files(rows, f"{root}/{staging}", columns, split_by, rows_per_file)
        return staging, columns, add_actions(columns, root, staging)[1]
    writer = rows.write.mode("error").options(**spark_writer_options())
    if split_by is not None:
        writer = writer.partitionBy(split_by)
    writer.parquet(f"{root}/{staging}")
    schema, actions = add_actions(columns, root, staging)
    if schema is None:  # no file written (a split write of no rows), or no schema in its footer: asked of Spark
        schema = table_columns(rows, split_by).schema
        actions = add_actions(schema, root, staging)[1]
    return staging, schema, actions


def removed_file(path: str, size: int | None, deletion_ms: int, data_change: bool = True) -> RemoveAction:
    """The ``remove`` action of a file of an unpartitioned table, with its extended metadata (empty partition values,
    size): delta-spark's Change Data Feed reads a removed file's rows only from a ``remove`` that has it."""
    return RemoveAction(path, data_change, deletion_ms, size, {})


def table_columns(spark_df: DataFrame, split_by: str | None) -> DataFrame:
    """`spark_df` without its `split_by` column: what the table holds."""
    return spark_df.drop(split_by) if split_by is not None else spark_df


def commit_at_version(
    table: DeltaTable,
    actions: list[AddAction | RemoveAction],
    schema: pa.Schema,
    custom_metadata: dict[str, str] | None = None,
    app_transaction: tuple[str, int] | None = None,
) -> int:
    """Commit `actions` as exactly version `table.version() + 1`, or raise `CommitFailedError`.

    delta-rs's own retries rebase a commit over concurrent ones and accept it whenever the files do not
    clash, which silently breaks a read-check-write sequence (it even let two commits remove the same
    file). With retries off, the commit is a put-if-absent of the next log entry: if anybody else
    committed since `table` was loaded, this fails and the caller must re-read and recompute.

    `app_transaction`: (application id, version) recorded as Delta's `txn` action, as delta-spark's idempotent
    writes record theirs, so writers of both engines see each other's progress.
    """
    read_version = table.version()
    metadata = dict(custom_metadata or {})
    transactions = [Transaction(app_transaction[0], app_transaction[1])] if app_transaction else None
    table.create_write_transaction(
        actions, mode="append", schema=schema,
        commit_properties=CommitProperties(custom_metadata=metadata, max_commit_retries=0,
                                           app_transactions=transactions),
    )
    return read_version + 1


def read_delta(spark: SparkSession, table_root: str, version: int | None = None) -> DataFrame:
    """Spark DataFrame of a Delta table version (latest by default), file list from delta-rs.

    Reads the Parquet files directly, so tables using deletion vectors or column mapping (written by
    delta-spark with those features on) are refused rather than read wrongly.
    """
    table = DeltaTable(_normalize_root(table_root), version=version)
    if not plain_parquet(table):
        raise ValueError(
            f"{table_root} uses deletion vectors or column mapping: read it with delta-spark instead"
        )
    schema = from_arrow_schema(pa.schema(table.schema().to_arrow()))
    uris = table.file_uris()
    if not uris:
        return spark.createDataFrame([], schema)
    return spark.read.schema(schema).parquet(*uris)


def plain_parquet(table: DeltaTable) -> bool:
    """Whether the table's rows are its Parquet files' rows: no deletion vectors, no column mapping."""
    features = table.protocol().reader_features or []
    mapping = table.metadata().configuration.get("delta.columnMapping.mode") or "none"
    return "deletionVectors" not in features and mapping == "none"


def _normalize_root(table_root: str) -> str:
    """Absolute local path (both Spark and delta-rs accept it) or the URI unchanged, no trailing slash."""
    if "://" in table_root:
        return table_root.rstrip("/")
    return str(Path(table_root).expanduser().resolve())


def _check_target(table: DeltaTable, arrow_schema: pa.Schema, mode: str) -> None:
    """Refuse commits delta-rs would accept but that would corrupt the table."""
    if mode == "overwrite":
        return
    # delta-rs appends files of any schema without complaint; the log would then lie about them.
    table_schema = json.loads(table.schema().to_json())
    new_schema = json.loads(Schema.from_arrow(arrow_schema).to_json())
    if _without_nullability(table_schema) != _without_nullability(new_schema):
        raise ValueError(f"cannot append {new_schema} to {table.table_uri} with schema {table_schema}")
    nullable = {f["name"] for f in new_schema["fields"] if f["nullable"]}
    required = [f["name"] for f in table_schema["fields"] if not f["nullable"] and f["name"] in nullable]
    if required:
        raise ValueError(f"{required} are NOT NULL in {table.table_uri} but nullable in the DataFrame")


def _without_nullability(schema_json: Any) -> Any:
    """A Delta schema JSON with every nullability flag dropped and field metadata ignored."""
    if isinstance(schema_json, dict):
        return {
            key: _without_nullability(value)
            for key, value in schema_json.items()
            if key not in ("nullable", "containsNull", "valueContainsNull", "metadata")
        }
    if isinstance(schema_json, list):
        return [_without_nullability(item) for item in schema_json]
    return schema_json


def staged_add_actions(schema: StructType, table_root: str, staging: str) -> list[AddAction]:
    """AddActions (with stats) for Parquet files a caller wrote itself under ``<table_root>/<staging>/``."""
    return add_actions(schema, _normalize_root(table_root), staging)[1]


def _committed_version(root: str, staging: str, *, since: int) -> int:
    """The version whose commit info names `staging`: concurrent writers may have committed after us."""
    latest = DeltaTable(root)
    for commit in latest.history(limit=latest.version() - since):
        if commit.get(STAGING_KEY) == staging:
            return int(commit["version"])
    raise RuntimeError(f"commit of {staging} is not in the history of {root}")
