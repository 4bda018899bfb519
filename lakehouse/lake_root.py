"""The lake's root: where each Delta table lives, creating it, loading it as of a version or a time."""

from __future__ import annotations

import contextlib
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
from deltalake import DeltaTable, Schema
from pyspark.sql import SparkSession

from lakehouse.light_reader import DEFAULT_LAKE as DEFAULT_LAKE
from lakehouse.light_reader import LAKE_ENV as LAKE_ENV
from lakehouse.light_reader import has_commit
from lakehouse.light_reader import resolve_lake_root as resolve_lake_root
from lakehouse.parquet_files import arrow_filesystem, delete_directory
from lakehouse.spark import DELTA_RS, DELTA_SPARK, lake_engine
from lakehouse.tables import SCHEMAS

DATABASE = "kraft"  # the session catalog's database the lake's tables are registered in (delta-spark)
STAGING_DIR = "_staging"  # driver-side scratch (decoded rows) of running ingests; never part of a table
CHECKPOINT_EVERY = 10  # Delta log checkpoint every N versions: readers replay at most N JSON commits


class LakeError(RuntimeError):
    """A lake operation that cannot proceed (unknown table, no such version, commit contention)."""


def utc_now() -> datetime:
    return datetime.now(UTC)


class LakeRoot:
    """Where the tables of `lakehouse.lake.Lake` are, and on which engine (its other halves build on this)."""

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

    def path(self, name: str) -> str:
        """The table's root: `<lake>/<name>`."""
        if not name or "/" in name or name.startswith(("_", ".")):
            raise LakeError(f"invalid table name {name!r}")
        return f"{self.root}/{name}"

    def table_exists(self, name: str) -> bool:
        """A Delta table with at least one commit. A ``_delta_log`` without one (a create killed before its
        first commit: delta-spark makes the directory, and ``_staged_commits`` in it, first) is no table."""
        filesystem, base = arrow_filesystem(self.path(name))
        return has_commit(filesystem, base)

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
            if spark.catalog.tableExists(qualified):  # one qualified name (dbName= is deprecated)
                detail = spark.sql(f"DESCRIBE DETAIL {qualified}").first()
                assert detail is not None  # DESCRIBE DETAIL of a table is one row
                current = str(detail["location"])
                if current.removeprefix("file:").rstrip("/") == location.removeprefix("file:").rstrip("/"):
                    continue
                spark.sql(f"DROP TABLE {qualified}")
            spark.sql(f"CREATE TABLE {qualified} USING delta LOCATION '{location}'")
        spark.catalog.setCurrentDatabase(database)
        return names

    def staging_path(self, ingest_id: str) -> str:
        return f"{self.root}/{STAGING_DIR}/{ingest_id}"

    def ensure_table(self, name: str, schema: pa.Schema | None = None) -> None:
        """Create the empty table (version 0) unless it exists; safe when processes race to create it. delta-rs
        creates it on either engine: through delta-spark a creation is a Spark request and a commit's fixed latency
        (issue 42: a new lake's first ingest creates four tables), and the table is the same plain Delta table."""
        if self.table_exists(name):
            return
        schema = schema if schema is not None else SCHEMAS[name]
        try:
            DeltaTable.create(self.path(name), Schema.from_arrow(schema), mode="ignore",
                              configuration={"delta.checkpointInterval": str(CHECKPOINT_EVERY)})
        except Exception:
            if not self.table_exists(name):  # somebody else's version 0 is as good as ours
                raise

    def ensure_tables(self, names: list[str] | None = None) -> None:
        """``ensure_table`` of each table (every table of the log by default)."""
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
                table.load_as_version(as_datetime(timestamp))
        except Exception as exc:
            if isinstance(exc, LakeError):
                raise
            raise LakeError(f"{name}: cannot load version {version if version is not None else timestamp}: "
                            f"{exc}") from None
        return table

    def maybe_checkpoint(self, name: str, version: int) -> None:
        """Write a Delta log checkpoint every CHECKPOINT_EVERY versions (cheap; keeps table loads fast)."""
        if version > 0 and version % CHECKPOINT_EVERY == 0:
            self._checkpoint(name, version)

    def _checkpoint(self, name: str, version: int) -> None:
        """A checkpoint is an optimisation: a failed one never fails the commit it follows. (Delta's Spark
        engine writes its own every ``delta.checkpointInterval`` commits; this one is written by delta-rs, for
        a table of either engine, e.g. after a compaction.)"""
        with contextlib.suppress(Exception):
            DeltaTable(self.path(name), version=version).create_checkpoint()

    def _delete_dir(self, uri: str) -> None:
        """Best effort (``lakehouse.parquet_files.delete_directory``)."""
        delete_directory(uri)

    def new_ingest_id(self) -> str:
        return f"{utc_now():%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:12]}"


def as_datetime(value: datetime | str) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def table_arrow_schema(table: DeltaTable) -> pa.Schema:
    return pa.schema(table.schema().to_arrow())

