"""Reading the lake's Delta tables without a JVM: delta-rs (``deltalake``) and its DataFusion engine.

A fresh command that only looks a few rows up (``kraft-replay state --offset N``) spends most of its time
starting a JVM and loading Delta snapshots in it; this reads the same tables, the same Delta snapshot (the
table's latest version), with the row filter given as SQL text pushed down to DataFusion, whose file
statistics skip the Parquet files that cannot match. It knows where tables are, not what the rows mean: the
caller (``replay.query.light_state``) brings the predicate. Nothing here imports pyspark (that alone costs seconds).
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs

DEFAULT_LAKE = "./kraft-lake"
LAKE_ENV = "KRAFT_REPLAY_LAKE"
# Where Spark runs when a command names none (lakehouse.spark): a lake read there is not this reader's to serve.
SPARK_REMOTE_ENV = "SPARK_REMOTE"
SPARK_MASTER_ENV = "KRAFT_REPLAY_SPARK_MASTER"
# The lake's engine: "delta-spark" (Delta Lake's own Spark engine, the default where its jars are), "delta-rs"
# (Spark writes Parquet, delta-rs commits: the fallback without jars), or "auto" (lakehouse.spark chooses).
ENGINE_ENV = "KRAFT_REPLAY_ENGINE"
DELTA_SPARK, DELTA_RS, AUTO = "delta-spark", "delta-rs", "auto"


def resolve_lake_root(lake: str | Path | None = None) -> str:
    """`--lake`, else `$KRAFT_REPLAY_LAKE`, else `./kraft-lake`; local paths made absolute."""
    value = str(lake) if lake is not None else os.environ.get(LAKE_ENV) or DEFAULT_LAKE
    if "://" in value:
        return value.rstrip("/")
    return str(Path(value).expanduser().resolve())


def is_local(root: str) -> bool:
    """A lake in a local directory (not an object store): the only kind the light reader serves."""
    return "://" not in root


def has_commit(filesystem: pafs.FileSystem, table_root: str) -> bool:
    """A Delta table with at least one commit. A ``_delta_log`` without one (a create killed before its first
    commit: delta-spark makes the directory, and ``_staged_commits`` in it, first) is no table."""
    try:
        infos = filesystem.get_file_info(pafs.FileSelector(f"{table_root}/_delta_log", allow_not_found=True))
    except OSError:
        return False
    return any(info.type == pafs.FileType.File and info.base_name.endswith((".json", ".parquet"))
               and not info.base_name.startswith(".") for info in infos)


def _without_views(kind: pa.DataType) -> pa.DataType:
    """The type with DataFusion's string and binary views as plain strings and binaries (the types the tables
    declare, and the ones every Arrow kernel takes)."""
    if pa.types.is_string_view(kind):
        return pa.string()
    if pa.types.is_binary_view(kind):
        return pa.binary()
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_list_view(kind):
        return pa.list_(kind.value_field.with_type(_without_views(kind.value_type)))
    if pa.types.is_struct(kind):
        return pa.struct([field.with_type(_without_views(field.type)) for field in kind])
    return kind


# DataFusion reads a table's strings as views (Utf8View): a ``CAST(... AS STRING)`` in a predicate makes one too,
# so that a literal struct compares with the table's (``replay.query.image_sections.quota_user_sql``), as in Spark.
_SESSION = {"datafusion.sql_parser.map_string_types_to_utf8view": "true"}


class LightReader:
    """The Delta tables of a local lake, read by delta-rs: which exist, and the rows matching a SQL predicate."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._filesystem = pafs.LocalFileSystem()

    def path(self, name: str) -> str:
        """The table's root: `<lake>/<name>` (as ``lakehouse.lake.Lake.path``)."""
        return f"{self.root}/{name}"

    def exists(self, name: str) -> bool:
        return has_commit(self._filesystem, self.path(name))

    def rows(self, name: str, where: str, columns: tuple[str, ...] | None = None, distinct: bool = False
             ) -> pa.Table:
        """The rows of table ``name`` matching ``where`` (DataFusion SQL over the table's columns), in no
        particular order: its ``columns`` (names or SQL expressions: ``max("offset")``), default all."""
        from deltalake import DeltaTable, QueryBuilder

        selected = ", ".join(columns) if columns else "*"
        query = QueryBuilder(_SESSION).register("t", DeltaTable(self.path(name)))
        sql = f"SELECT {'DISTINCT ' if distinct else ''}{selected} FROM t WHERE {where}"
        found = pa.table(query.execute(sql).read_all())
        return found.cast(pa.schema([field.with_type(_without_views(field.type)) for field in found.schema]))


__all__ = [
    "AUTO",
    "DEFAULT_LAKE",
    "DELTA_RS",
    "DELTA_SPARK",
    "ENGINE_ENV",
    "LAKE_ENV",
    "SPARK_MASTER_ENV",
    "SPARK_REMOTE_ENV",
    "LightReader",
    "has_commit",
    "is_local",
    "resolve_lake_root",
]
