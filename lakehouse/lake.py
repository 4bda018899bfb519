"""The lake: Delta tables under one root, on one of two engines.

`Lake` is the one entry point for every table of kraft-replay (the ingest's tables here, the replay's
state tables later): where a table lives, reading it as of a version or a time, appending rows exactly once
under optimistic concurrency, and maintenance (history, compaction, vacuum, checkpoints).

Engines (``lakehouse.spark.lake_engine``):
- **delta-spark**, where its jars are (the default after `make setup`): Spark reads and writes every table with
  ``format("delta")``, Delta Lake's own engine commits (``commitInfo.engineInfo`` names it), and ``OPTIMIZE``,
  ``VACUUM`` and ``DESCRIBE HISTORY`` are Delta's SQL.
- **delta-rs**, the fallback without jars (or ``KRAFT_REPLAY_ENGINE=delta-rs``): Spark writes and reads Parquet,
  delta-rs writes the transaction log (``lakehouse.delta_commit``).
The tables are the same Delta tables either way: either engine continues what the other wrote.

Concurrency: every append goes through `Lake.commit_new_rows`, which computes what to add against one
pinned table version v and commits it only if nothing else committed since. delta-rs: as exactly version v + 1
(retries off: a put-if-absent of the next log entry). delta-spark: a Delta idempotent write with
``txnAppId`` = the table's writer id and ``txnVersion`` = v + 1, which Delta skips when that writer id already
reached v + 1 and refuses (``ConcurrentTransactionException``) when another such commit lands first; both
engines record the same application transaction. Either way the rows are recomputed against the new version
and the commit retried, so no two writers can both decide that the same offset is new.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.fs as pafs
from deltalake import DeltaTable, Schema
from deltalake.exceptions import CommitFailedError
from deltalake.transaction import AddAction, RemoveAction
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from lakehouse.delta_commit import (
    arrow_filesystem,
    commit_at_version,
    commit_spark_parquet,
    read_delta,
    stage_spark_parquet,
    table_columns,
)
from lakehouse.spark import DELTA_RS, DELTA_SPARK, lake_engine, spark_conf
from lakehouse.tables import AVRO_SCHEMAS, SCHEMAS, SORT_COLUMNS, spark_schema

DEFAULT_LAKE = "./kraft-lake"
DATABASE = "kraft"  # the session catalog's database the lake's tables are registered in (delta-spark)
LAKE_ENV = "KRAFT_REPLAY_LAKE"
STAGING_DIR = "_staging"  # driver-side scratch (decoded rows) of running ingests; never part of a table
CHECKPOINT_EVERY = 10  # Delta log checkpoint every N versions: readers replay at most N JSON commits
DEFAULT_RETENTION_HOURS = 7 * 24
MAX_COMMIT_ATTEMPTS = 50
ROWS_PER_FILE = 1_000_000
OPERATION_KEY = "kraftReplay.operation"
ROWS_KEY = "kraftReplay.rowsAdded"
INGEST_KEY = "kraftReplay.ingestId"
COMMIT_KEY = "kraftReplay.commit"  # a token naming one commit: finds its version among concurrent ones
CHANGE_DATA_FEED = "delta.enableChangeDataFeed"
# Delta refuses a replaceWhere whose new rows do not all match the condition; an incremental replay replaces the
# rows that may change (open versions) with what they became (many now closed), so the check does not apply.
_REPLACE_WHERE_CHECK = "spark.databricks.delta.replaceWhere.constraintCheck.enabled"
_RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"
# Delta's exceptions for a commit that lost against a concurrent one: recompute and retry.
_CONCURRENT = ("ConcurrentTransactionException", "ConcurrentAppendException", "ConcurrentDeleteReadException",
               "ConcurrentDeleteDeleteException", "MetadataChangedException", "ProtocolChangedException",
               "DELTA_CONCURRENT")


class LakeError(RuntimeError):
    """A lake operation that cannot proceed (unknown table, no such version, commit contention)."""


@dataclass(frozen=True)
class CommitOutcome:
    """What one `commit_new_rows` did: the version it created (None: nothing to add) and rows added."""

    version: int | None
    rows_added: int
    attempts: int


@dataclass(frozen=True)
class HistoryEntry:
    version: int
    timestamp: datetime
    operation: str
    rows_added: int | None
    files_added: int | None
    files_removed: int | None
    ingest_id: str | None
    engine_info: str | None = None  # commitInfo.engineInfo: the engine that made the commit


def resolve_lake_root(lake: str | Path | None = None) -> str:
    """`--lake`, else `$KRAFT_REPLAY_LAKE`, else `./kraft-lake`; local paths made absolute."""
    value = str(lake) if lake is not None else os.environ.get(LAKE_ENV) or DEFAULT_LAKE
    if "://" in value:
        return value.rstrip("/")
    return str(Path(value).expanduser().resolve())


def _now() -> datetime:
    return datetime.now(UTC)


class Lake:
    """Delta tables under one root (a local directory or an object-store URI).

    ``engine``: delta-spark or delta-rs; by default the session's (``lakehouse.spark.lake_engine``)."""

    def __init__(self, root: str | Path | None = None, engine: str | None = None) -> None:
        self.root = resolve_lake_root(root)
        if engine not in (None, DELTA_SPARK, DELTA_RS):
            raise LakeError(f"unknown lake engine {engine!r}: expected {DELTA_SPARK} or {DELTA_RS}")
        self._engine = engine

    def delta_spark(self, spark: SparkSession | None = None) -> SparkSession | None:
        """The session Delta's own Spark engine runs with, or None when this lake runs on delta-rs."""
        if self._engine == DELTA_RS:
            return None
        session = spark if spark is not None else SparkSession.getActiveSession()
        if session is not None and lake_engine(session) == DELTA_SPARK:
            return session
        if self._engine == DELTA_SPARK:
            raise LakeError("the delta-spark engine needs a Spark session with delta-spark: run `make setup`")
        return None

    def engine(self, spark: SparkSession | None = None) -> str:
        return DELTA_SPARK if self.delta_spark(spark) is not None else DELTA_RS

    # --- where things are ------------------------------------------------------------------------

    def path(self, name: str) -> str:
        """The table's root: `<lake>/<name>`."""
        if not name or "/" in name or name.startswith(("_", ".")):
            raise LakeError(f"invalid table name {name!r}")
        return f"{self.root}/{name}"

    def table_exists(self, name: str) -> bool:
        """A Delta table with at least one commit. A ``_delta_log`` without one (a create killed before its
        first commit: delta-spark makes the directory, and ``_staged_commits`` in it, first) is no table."""
        filesystem, base = arrow_filesystem(self.path(name))
        try:
            infos = filesystem.get_file_info(pafs.FileSelector(f"{base}/_delta_log", allow_not_found=True))
        except OSError:
            return False
        return any(info.type == pafs.FileType.File and info.base_name.endswith((".json", ".parquet"))
                   and not info.base_name.startswith(".") for info in infos)

    def table_names(self) -> list[str]:
        """Tables present under the root (any Delta table, not only the ingest's)."""
        filesystem, base = arrow_filesystem(self.root)
        try:
            infos = filesystem.get_file_info(pafs.FileSelector(base, allow_not_found=True))
        except OSError:
            return []
        names = [Path(info.path).name for info in infos if info.type == pafs.FileType.Directory]
        return sorted(n for n in names if not n.startswith(("_", ".")) and self.table_exists(n))

    def register(self, spark: SparkSession, database: str = DATABASE) -> list[str]:
        """Register every table in the session catalog as ``<database>.<table>`` (external Delta tables at this
        lake's paths) and make ``database`` the current one, so Spark SQL reaches them by name with everything
        Delta offers: ``VERSION AS OF``, ``TIMESTAMP AS OF``, ``DESCRIBE HISTORY``, ``DESCRIBE DETAIL``,
        ``table_changes``. A name registered for another lake is re-pointed (dropping an external table keeps
        its files). delta-spark only: returns [] on delta-rs."""
        if self.delta_spark(spark) is None:
            return []
        names = self.table_names()
        spark.sql(f"CREATE DATABASE IF NOT EXISTS `{database}`")
        for name in names:
            qualified = f"`{database}`.`{name}`"
            location = self.path(name)
            if spark.catalog.tableExists(name, database):
                current = str(spark.sql(f"DESCRIBE DETAIL {qualified}").first()["location"])
                if current.removeprefix("file:").rstrip("/") == location.removeprefix("file:").rstrip("/"):
                    continue
                spark.sql(f"DROP TABLE {qualified}")
            spark.sql(f"CREATE TABLE {qualified} USING delta LOCATION '{location}'")
        spark.catalog.setCurrentDatabase(database)
        return names

    def staging_path(self, ingest_id: str) -> str:
        return f"{self.root}/{STAGING_DIR}/{ingest_id}"

    # --- tables ----------------------------------------------------------------------------------

    def ensure_table(self, name: str, schema: pa.Schema | None = None) -> None:
        """Create the empty table (version 0) unless it exists; safe when processes race to create it."""
        if self.table_exists(name):
            return
        schema = schema if schema is not None else SCHEMAS[name]
        try:
            spark = self.delta_spark()
            if spark is not None:
                columns = ", ".join(f"`{f.name}` {f.dataType.simpleString()}"
                                    for f in from_arrow_schema(schema).fields)
                spark.sql(f"CREATE TABLE IF NOT EXISTS delta.`{self.path(name)}` ({columns}) USING delta "
                          f"TBLPROPERTIES ('delta.checkpointInterval' = '{CHECKPOINT_EVERY}')")
                if self.table_exists(name):
                    return
                # Delta's IF NOT EXISTS takes a ``_delta_log`` left by a killed create for a table and does
                # nothing: version 0 then comes from delta-rs (the next commits are delta-spark's again).
            DeltaTable.create(self.path(name), Schema.from_arrow(schema), mode="ignore",
                              configuration={"delta.checkpointInterval": str(CHECKPOINT_EVERY)})
        except Exception:
            if not self.table_exists(name):  # somebody else's version 0 is as good as ours
                raise

    def ensure_tables(self, names: list[str] | None = None) -> None:
        for name in names or list(SCHEMAS):
            self.ensure_table(name)

    def delta_table(self, name: str, version: int | None = None, timestamp: datetime | str | None = None
                    ) -> DeltaTable:
        """delta-rs handle of the table as of a version or a time (the latest version at that time)."""
        if version is not None and timestamp is not None:
            raise LakeError("give a version or a timestamp, not both")
        if not self.table_exists(name):
            raise LakeError(f"no table {name!r} in the lake at {self.root}")
        try:
            table = DeltaTable(self.path(name), version=version)
            if timestamp is not None:
                table.load_as_version(_as_datetime(timestamp))
        except Exception as exc:
            if isinstance(exc, LakeError):
                raise
            raise LakeError(f"{name}: cannot load version {version if version is not None else timestamp}: "
                            f"{exc}") from None
        return table

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
                reader = reader.option("timestampAsOf", _as_datetime(timestamp).isoformat())
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
        if self.delta_spark(spark) is not None:  # Delta's data skipping picks the files
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

    def write(self, df: DataFrame, name: str, mode: Literal["append", "overwrite"] = "append",
              split_by: str | None = None, change_data_feed: bool = False) -> int:
        """Write a DataFrame to a table (created if missing) as one commit; returns the new version.

        A plain write, for state tables computed elsewhere (the replay's): no deduplication. ``split_by``:
        a boolean column (not stored) whose true and false rows go to separate files (delta-rs: directories;
        delta-spark: the writing tasks keep them apart, see ``replay.layout``). ``change_data_feed``: Delta's
        Change Data Feed on (delta-spark), so ``table_changes`` answers what each replay changed.
        """
        spark = self.delta_spark(df.sparkSession)
        if spark is not None:
            writer = table_columns(df, split_by).write.format("delta").mode(mode)
            if mode == "overwrite":
                writer = writer.option("overwriteSchema", "true")
            done = self._spark_write(writer, name, "write", change_data_feed=change_data_feed)
            return done[0] if done is not None else int(DeltaTable(self.path(name)).version())
        version = commit_spark_parquet(df, self.path(name), mode, split_by=split_by)
        self.maybe_checkpoint(name, version)
        return version

    def _spark_write(self, writer: Any, name: str, operation: str, *, change_data_feed: bool = False,
                     metadata: dict[str, str] | None = None) -> tuple[int, int] | None:
        """Save with delta-spark; returns the version of this commit (found by its token: others may commit
        after it) and the rows it wrote, None when Delta made no commit (an idempotent write it had seen, a
        ``replaceWhere`` that changes nothing). Change Data Feed is switched on for a table that wants it (new, or
        written by delta-rs)."""
        root = self.path(name)
        token = uuid.uuid4().hex
        current = DeltaTable(root) if self.table_exists(name) else None
        if change_data_feed:
            if current is None:
                writer = writer.option(CHANGE_DATA_FEED, "true")
            elif current.metadata().configuration.get(CHANGE_DATA_FEED) != "true":
                self.delta_spark().sql(  # type: ignore[union-attr]
                    f"ALTER TABLE delta.`{root}` SET TBLPROPERTIES ('{CHANGE_DATA_FEED}' = 'true')")
                current = DeltaTable(root)  # the ALTER is a commit of its own
        since = int(current.version()) if current is not None else -1
        info = {OPERATION_KEY: operation, COMMIT_KEY: token, **(metadata or {})}
        writer.option("userMetadata", json.dumps(info, sort_keys=True)).save(root)
        return self._committed(name, token, since)

    def _committed(self, name: str, token: str, since: int) -> tuple[int, int] | None:
        """(version, rows added) of the commit made after ``since`` whose user metadata names ``token``."""
        latest = DeltaTable(self.path(name))
        for commit in latest.history(limit=max(1, int(latest.version()) - since)):
            info = _user_metadata(commit)
            if info.get(COMMIT_KEY) == token:
                rows = (commit.get("operationMetrics") or {}).get("numOutputRows")
                return int(commit["version"]), int(rows or 0)
        return None

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

    def added_files(self, name: str, since: int, version: int) -> list[str]:
        """Paths of the files of ``version`` that version ``since`` did not have."""
        before = set(self.file_paths(name, since))
        return [path for path in self.file_paths(name, version) if path not in before]

    def read_files(self, spark: SparkSession, name: str, paths: list[str], schema: StructType | None = None
                   ) -> DataFrame:
        """The rows of some files of a table (paths relative to it); ``schema`` by default the table's."""
        if schema is None:
            schema = from_arrow_schema(_arrow_schema(self.delta_table(name)))
        if not paths:
            return spark.createDataFrame([], schema)
        return spark.read.schema(schema).parquet(*(f"{self.path(name)}/{path}" for path in paths))

    def read_replaceable(self, spark: SparkSession, name: str, version: int, files: list[str], where: str | None
                         ) -> DataFrame:
        """The rows of a table version that a later ``replace_files`` replaces: delta-rs, the rows of ``files``;
        delta-spark, the rows matching ``where`` (SQL; None: every row). The caller keeps the two the same set
        (``replay.layout`` writes the rows matching ``where`` to files of their own)."""
        if self.delta_spark(spark) is not None:
            rows = self.read(spark, name, version=version)
            return rows.where(where) if where is not None else rows
        return self.read_files(spark, name, files)

    def replace_files(self, df: DataFrame, name: str, remove: list[str], version: int,
                      split_by: str | None = None, where: str | None = None) -> int:
        """One commit that replaces the rows ``read_replaceable`` gave with ``df`` (their replacement plus any
        new rows); the other files stay as they are. Refused when the table moved past ``version`` (the
        replaced rows were chosen from it).

        delta-rs removes the files ``remove`` (paths relative to the table, all in ``version``); delta-spark
        replaces the rows matching ``where`` (Delta's ``replaceWhere``: a file of those rows only is removed, not
        rewritten), or the whole table when ``where`` is None.
        """
        spark = df.sparkSession
        root = self.path(name)
        rows = table_columns(df, split_by)
        table = DeltaTable(root)
        if int(table.version()) != version:
            raise LakeError(f"{name}: another writer committed after version {version}: run the replay again")
        if self.delta_spark(spark) is not None:
            change_data_feed = table.metadata().configuration.get(CHANGE_DATA_FEED) == "true"
            if where is None:
                return self.write(rows, name, "overwrite", change_data_feed=change_data_feed)
            writer = rows.write.format("delta").mode("overwrite").option("replaceWhere", where)
            with spark_conf(spark, _REPLACE_WHERE_CHECK, "false"):
                done = self._spark_write(writer, name, "replace where")
            return done[0] if done is not None else version
        staging, adds = stage_spark_parquet(df, root, split_by=split_by)
        files = pa.table(table.get_add_actions(flatten=True))
        sizes = dict(zip(files.column("path").to_pylist(), files.column("size_bytes").to_pylist(), strict=True))
        now_ms = int(time.time() * 1000)
        actions: list[AddAction | RemoveAction] = [*adds]
        actions += [RemoveAction(path, True, now_ms, sizes.get(path)) for path in remove]
        try:
            version = commit_at_version(table, actions, _arrow_schema(table), {OPERATION_KEY: "replace files"})
        except CommitFailedError:
            self._delete_dir(f"{root}/{staging}")
            raise LakeError(f"{name}: another writer committed while the replay replaced its files: "
                            "run the replay again") from None
        self.maybe_checkpoint(name, version)
        return version

    def commit_new_rows(self, name: str, build: Callable[[DeltaTable], DataFrame | None], *,
                        operation: str, ingest_id: str | None = None) -> CommitOutcome:
        """Optimistic append: `build(table)` computes the rows to add against that pinned version.

        Executors write the rows as Parquet, the driver commits them as exactly the next version; when
        another writer committed first, the staged files are deleted and `build` runs again against the
        new version (so deduplication always sees everything committed before us).
        """
        self.ensure_table(name)
        root = self.path(name)
        spark = self.delta_spark()
        for attempt in range(1, MAX_COMMIT_ATTEMPTS + 1):
            table = DeltaTable(root)
            rows = build(table)
            if rows is None:
                return CommitOutcome(None, 0, attempt)
            if spark is not None:
                outcome = self._idempotent_append(rows, name, table, operation, ingest_id, attempt)
                if outcome is not None:
                    return outcome
                time.sleep(random.uniform(0.05, 0.3) * min(attempt, 10))
                continue
            staging, actions = stage_spark_parquet(rows, root)
            added = sum(json.loads(action.stats)["numRecords"] for action in actions)
            if not actions:
                self._delete_dir(f"{root}/{staging}")
                return CommitOutcome(None, 0, attempt)
            metadata = {OPERATION_KEY: operation, ROWS_KEY: str(added)}
            if ingest_id:
                metadata[INGEST_KEY] = ingest_id
            try:
                version = commit_at_version(table, list(actions), SCHEMAS.get(name) or _arrow_schema(table),
                                            metadata, app_transaction=(writer_id(name), table.version() + 1))
            except CommitFailedError:
                self._delete_dir(f"{root}/{staging}")
                time.sleep(random.uniform(0.05, 0.3) * min(attempt, 10))
                continue
            self.maybe_checkpoint(name, version)
            return CommitOutcome(version, added, attempt)
        raise LakeError(f"{name}: gave up after {MAX_COMMIT_ATTEMPTS} attempts: other writers keep committing")

    def _idempotent_append(self, rows: DataFrame, name: str, table: DeltaTable, operation: str,
                           ingest_id: str | None, attempt: int) -> CommitOutcome | None:
        """delta-spark's half of ``commit_new_rows``: append ``rows`` (computed against ``table``'s version v) as
        a Delta idempotent write (txnAppId = ``writer_id``, txnVersion = v + 1). None when another writer
        committed since v (Delta skipped the write or refused it): the caller recomputes."""
        if rows.isEmpty():  # Delta commits an empty write too: a version that adds nothing is noise
            return CommitOutcome(None, 0, attempt)
        pinned = int(table.version())
        writer = (rows.write.format("delta").mode("append").option("txnAppId", writer_id(name))
                  .option("txnVersion", pinned + 1))
        try:
            done = self._spark_write(writer, name, operation, metadata={INGEST_KEY: ingest_id} if ingest_id else None)
        except Exception as error:
            if any(kind in str(error) for kind in _CONCURRENT):
                return None
            raise
        if done is None:
            return None  # skipped: this writer id reached v + 1 through another process's commit
        return CommitOutcome(done[0], done[1], attempt)

    def maybe_checkpoint(self, name: str, version: int) -> None:
        """Write a Delta log checkpoint every CHECKPOINT_EVERY versions (cheap; keeps table loads fast)."""
        if version > 0 and version % CHECKPOINT_EVERY == 0:
            self._checkpoint(name, version)

    # --- avro_schemas ----------------------------------------------------------------------------

    def register_schemas(self) -> int | None:
        """Add the shipped `.avsc` of every record type missing from `avro_schemas`; returns the version."""
        from records.avro_codec import schema_id, schema_text
        from records.definitions import definitions

        self.ensure_table(AVRO_SCHEMAS)
        root = self.path(AVRO_SCHEMAS)

        def missing(table: DeltaTable) -> list[dict[str, Any]]:
            stored = set(table.to_pyarrow_table(columns=["schema_id"]).column("schema_id").to_pylist())
            now = _now()
            return [{"schema_id": schema_id(name), "record_type": name, "api_key": message.api_key,
                     "control_type": message.control_type, "kafka_versions": str(message.valid_versions),
                     "avsc": schema_text(name), "registered_time": now}
                    for name, message in sorted(definitions().items()) if schema_id(name) not in stored]

        spark = self.delta_spark()
        if spark is not None:
            def build(table: DeltaTable) -> DataFrame | None:
                rows = missing(table)
                return spark.createDataFrame(rows, spark_schema(AVRO_SCHEMAS)).coalesce(1) if rows else None

            return self.commit_new_rows(AVRO_SCHEMAS, build, operation="register-schemas").version
        for attempt in range(1, MAX_COMMIT_ATTEMPTS + 1):
            table = DeltaTable(root)
            rows = missing(table)
            if not rows:
                return None
            data = pa.Table.from_pylist(rows, schema=SCHEMAS[AVRO_SCHEMAS])
            try:
                from deltalake import CommitProperties, write_deltalake

                write_deltalake(table, data, mode="append", commit_properties=CommitProperties(
                    custom_metadata={OPERATION_KEY: "register-schemas", ROWS_KEY: str(len(rows))},
                    max_commit_retries=0))
            except CommitFailedError:
                time.sleep(random.uniform(0.05, 0.3) * attempt)
                continue
            return int(DeltaTable(root).version())
        raise LakeError("avro_schemas: gave up registering schemas: other writers keep committing")

    # --- history and maintenance -----------------------------------------------------------------

    def history(self, name: str, limit: int | None = None) -> list[HistoryEntry]:
        """Versions newest first, with the operation and how many rows each added."""
        spark = self.delta_spark()
        if spark is not None:
            described = spark.sql(f"DESCRIBE HISTORY delta.`{self.path(name)}`" + (f" LIMIT {limit}" if limit else ""))
            commits = [{**row.asDict(), "timestamp": row["timestamp"].replace(tzinfo=UTC).timestamp() * 1000}
                       for row in described.collect()]
        else:
            commits = self.delta_table(name).history(limit=limit)
        entries = []
        for commit in commits:
            commit = {**commit, **_user_metadata(commit)}
            metrics = commit.get("operationMetrics") or {}
            rows = commit.get(ROWS_KEY)
            rows_added = int(rows) if rows is not None else _int_or_none(
                metrics.get("num_added_rows", metrics.get("numOutputRows")))
            entries.append(HistoryEntry(
                version=int(commit["version"]),
                timestamp=datetime.fromtimestamp(commit["timestamp"] / 1000, UTC),
                operation=str(commit.get(OPERATION_KEY) or commit.get("operation") or "?"),
                rows_added=rows_added,
                files_added=_int_or_none(metrics.get("num_added_files", metrics.get("numFilesAdded"))),
                files_removed=_int_or_none(metrics.get("num_removed_files", metrics.get("numFilesRemoved"))),
                ingest_id=commit.get(INGEST_KEY),
                engine_info=commit.get("engineInfo") or commit.get("clientVersion"),
            ))
        return entries

    def optimize(self, spark: SparkSession, names: list[str] | None = None,
                 small_file_bytes: int = 64 * 2**20) -> dict[str, dict[str, int]]:
        """Compact small files. Range-sorted tables are rewritten by Spark in key order, so each new
        file covers one contiguous key range and offset lookups still skip all other files; the
        rewrite commits as a `data_change=false` replace of exactly the files it read."""
        results: dict[str, dict[str, int]] = {}
        delta_spark = self.delta_spark(spark)
        for name in names or self.table_names():
            if delta_spark is not None:
                # Delta's own OPTIMIZE; the range-sorted tables clustered on their sort key, so offset lookups
                # still skip the other files
                zorder = [c for c in SORT_COLUMNS.get(name, ()) if c != "cluster_id"]
                sql = f"OPTIMIZE delta.`{self.path(name)}`" + (f" ZORDER BY ({', '.join(zorder)})" if zorder else "")
                metrics = delta_spark.sql(sql).collect()[0]["metrics"]
                results[name] = {"files_removed": int(metrics["numFilesRemoved"]),
                                 "files_added": int(metrics["numFilesAdded"])}
            elif name in (AVRO_SCHEMAS,) or name not in SORT_COLUMNS:
                metrics = self.delta_table(name).optimize.compact(
                    commit_properties=_props("optimize"))
                results[name] = {"files_removed": int(metrics.get("numFilesRemoved", 0)),
                                 "files_added": int(metrics.get("numFilesAdded", 0))}
            else:
                results[name] = self._rewrite_sorted(spark, name, small_file_bytes)
            version = int(self.delta_table(name).version())
            self._checkpoint(name, version)
        return results

    def _rewrite_sorted(self, spark: SparkSession, name: str, small_file_bytes: int) -> dict[str, int]:
        root = self.path(name)
        for attempt in range(1, MAX_COMMIT_ATTEMPTS + 1):
            table = DeltaTable(root)
            files = pa.table(table.get_add_actions(flatten=True))
            small = [(path, size, rows) for path, size, rows in zip(
                files.column("path").to_pylist(), files.column("size_bytes").to_pylist(),
                files.column("num_records").to_pylist(), strict=True) if size < small_file_bytes]
            if len(small) < 2:
                return {"files_removed": 0, "files_added": 0}
            total_rows = sum(rows or 0 for _, _, rows in small)
            df = spark.read.schema(spark_schema(name)).parquet(*(f"{root}/{path}" for path, _, _ in small))
            sort = list(SORT_COLUMNS[name])
            df = df.repartitionByRange(max(1, -(-total_rows // ROWS_PER_FILE)), *sort).sortWithinPartitions(*sort)
            staging, adds = stage_spark_parquet(df, root, "optimized")
            now_ms = int(time.time() * 1000)
            actions: list[AddAction | RemoveAction] = [replace(add, data_change=False) for add in adds]
            actions += [RemoveAction(path, False, now_ms, size) for path, size, _ in small]
            try:
                commit_at_version(table, actions, SCHEMAS[name], {OPERATION_KEY: "optimize", ROWS_KEY: "0"})
            except CommitFailedError:
                self._delete_dir(f"{root}/{staging}")
                time.sleep(random.uniform(0.05, 0.3) * attempt)
                continue
            return {"files_removed": len(small), "files_added": len(adds)}
        raise LakeError(f"{name}: optimize gave up: other writers keep committing")

    def vacuum(self, retention_hours: float = DEFAULT_RETENTION_HOURS, dry_run: bool = False
               ) -> dict[str, list[str]]:
        """Delete files no version younger than the retention needs, and stale ingest scratch space.

        delta-rs never deletes files of the current version whatever the retention; files of older
        versions go only once they have been unreferenced for `retention_hours` (default 7 days), so time
        travel within that window keeps working.
        """
        if retention_hours < 0:
            raise LakeError("retention must be >= 0 hours")
        deleted: dict[str, list[str]] = {}
        spark = self.delta_spark()
        for name in self.table_names():
            if spark is not None:
                deleted[name] = self._spark_vacuum(spark, name, retention_hours, dry_run)
                continue
            deleted[name] = self.delta_table(name).vacuum(
                retention_hours=int(retention_hours), dry_run=dry_run, enforce_retention_duration=False,
                commit_properties=_props("vacuum"))
        deleted[STAGING_DIR] = self._vacuum_staging(retention_hours, dry_run)
        return deleted

    def _spark_vacuum(self, spark: SparkSession, name: str, retention_hours: float, dry_run: bool) -> list[str]:
        """Delta's VACUUM, run only on a table that has something to delete: the candidates are listed from the
        Delta log and the directory (delta-rs's dry run, no Spark job; VACUUM itself names no file and its
        listing job costs seconds per table). Retention under Delta's 7-day safety check is the user's explicit
        choice here, as with delta-rs."""
        candidates = self.delta_table(name).vacuum(retention_hours=int(retention_hours), dry_run=True,
                                                   enforce_retention_duration=False)
        if candidates and not dry_run:
            with spark_conf(spark, _RETENTION_CHECK, "false"):
                spark.sql(f"VACUUM delta.`{self.path(name)}` RETAIN {retention_hours} HOURS").collect()
        return sorted(candidates)

    def _vacuum_staging(self, retention_hours: float, dry_run: bool) -> list[str]:
        """Scratch directories of ingests that were killed (finished ingests delete their own)."""
        if "://" in self.root:
            return []
        base = Path(self.root) / STAGING_DIR
        if not base.is_dir():
            return []
        cutoff = time.time() - retention_hours * 3600
        old = [p for p in base.iterdir() if p.stat().st_mtime < cutoff]
        if not dry_run:
            for p in old:
                shutil.rmtree(p, ignore_errors=True)
        return [str(p) for p in old]

    def _checkpoint(self, name: str, version: int) -> None:
        """A checkpoint is an optimisation: a failed one never fails the commit it follows. (Delta's Spark
        engine writes its own every ``delta.checkpointInterval`` commits; this one is written by delta-rs, for
        a table of either engine, e.g. after a compaction.)"""
        with contextlib.suppress(Exception):
            DeltaTable(self.path(name), version=version).create_checkpoint()

    def _delete_dir(self, uri: str) -> None:
        """Best effort: a leftover directory is only wasted space, removed later by vacuum."""
        try:
            if "://" in uri:
                filesystem, path = arrow_filesystem(uri)
                filesystem.delete_dir(path)
            else:
                shutil.rmtree(uri, ignore_errors=True)
        except OSError:
            pass

    def new_ingest_id(self) -> str:
        return f"{_now():%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:12]}"


def read_table(spark: SparkSession, lake: Lake | str | Path | None, name: str, version: int | None = None,
               timestamp: datetime | str | None = None) -> DataFrame:
    """A lake table as of a version or a timestamp: `read_table(spark, "./kraft-lake", "metadata_log", 3)`."""
    target = lake if isinstance(lake, Lake) else Lake(lake)
    return target.read(spark, name, version=version, timestamp=timestamp)


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


def _as_datetime(value: datetime | str) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def writer_id(name: str) -> str:
    """The application id of every ``commit_new_rows`` commit to a table (its Delta ``txn`` action)."""
    return f"kraft-replay/{name}"


def _user_metadata(commit: Mapping[str, Any]) -> dict[str, Any]:
    """delta-spark keeps a commit's own keys as JSON in ``userMetadata`` (delta-rs: top-level keys)."""
    text = commit.get("userMetadata")
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _int_or_none(value: Any) -> int | None:
    return int(value) if value is not None else None


def _arrow_schema(table: DeltaTable) -> pa.Schema:
    return pa.schema(table.schema().to_arrow())


def _props(operation: str) -> Any:
    from deltalake import CommitProperties

    return CommitProperties(custom_metadata={OPERATION_KEY: operation})


__all__ = ["DATABASE", "DEFAULT_LAKE", "DEFAULT_RETENTION_HOURS", "LAKE_ENV", "CommitOutcome", "HistoryEntry", "Lake",
           "LakeError", "arrow_filesystem", "overlapping_files", "read_table", "resolve_lake_root"]
