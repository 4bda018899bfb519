"""`kraft-replay ingest`: a metadata log (any input format) into the lake, exactly once.

Pipeline per chunk of input (a group of segments, one snapshot, one JSON-lines/dump-log/Avro file):
1. decode into *staged* Parquet under `<lake>/_staging/<ingest id>/`: big segment inputs on the executors
   (`lakehouse.spark_decode.decode_segments`), small ones and the other formats in the driver process,
   streamed in Arrow batches. Decoding runs once; every later step reads the staged files.
2. classify against what is stored (`Lake.commit_new_rows`, optimistic: computed against one pinned table
   version, committed as exactly the next one, recomputed when another writer got there first): offsets
   not stored yet are written in (cluster_id, offset) order; identical rows are skipped; a different
   record at a stored offset is a conflict and goes to `ingest_rejects`, never to the log.
3. rejects (conflicts, skipped/partial batches, gaps) go to `ingest_rejects`, deduplicated as well.
A process killed anywhere leaves each table at a committed version (staged files are never referenced
before their commit); running the ingest again adds exactly what is missing.

Jobs: planning (`lakehouse.ingest_plan`), staging (`lakehouse.ingest_stage`), gaps (`lakehouse.ingest_gaps`); the
classifying and committing are here.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import reduce
from pathlib import Path

from deltalake import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from lakehouse.fingerprint_key import fingerprint_key
from lakehouse.ingest_gaps import find_gaps
from lakehouse.ingest_plan import (
    CHUNK_BYTES,
    SPARK_DECODE_MIN_BYTES,
    IngestOptions,
    SegmentInput,
    SnapshotInput,
    SourcePlan,
    plan_source,
    segment_chunks,
)
from lakehouse.ingest_stage import Staged, Staging
from lakehouse.lake import ROWS_PER_FILE, Lake, arrow_filesystem, overlapping_files
from lakehouse.lake_redact import require_redacted_lake
from lakehouse.log_rows import ROW_KIND_ISSUE, ROW_KIND_RECORD
from lakehouse.tables import AVRO_SCHEMAS, INGEST_REJECTS, KEYS, METADATA_LOG, SNAPSHOTS, SORT_COLUMNS, spark_schema


@dataclass
class IngestSummary:
    """What an ingest did; `versions` lists the Delta versions it created per table."""

    ingest_id: str
    source: str
    cluster_ids: list[str] = field(default_factory=list)
    records_read: int = 0
    records_added: int = 0
    records_skipped: int = 0
    conflicts: int = 0
    rejects_added: int = 0
    issues: int = 0
    snapshot_records_added: int = 0
    snapshot_records_skipped: int = 0
    gaps: list[tuple[str, int, int]] = field(default_factory=list)
    commit_retries: int = 0  # commits redone because another writer committed first
    versions: dict[str, list[int]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add_version(self, table: str, version: int | None) -> None:
        if version is not None:
            self.versions.setdefault(table, []).append(version)


class _Ingest(Staging):
    """One ingest run: shared Spark session, lake, ids and the running summary."""

    def __init__(self, spark: SparkSession, lake: Lake, options: IngestOptions, summary: IngestSummary) -> None:
        super().__init__(spark, options, lake.staging_path(summary.ingest_id), fingerprint_key(lake.root))
        self.lake = lake
        self.summary = summary
        self.ingest_time = datetime.now(UTC)
        self.touched: dict[str, tuple[int, int]] = {}

    # --- the log ---------------------------------------------------------------------------------

    def ingest_log_rows(self, chunk: Staged, source: str) -> None:
        """Staged rows of one chunk → metadata_log (new offsets) and ingest_rejects (everything refused)."""
        staged, profile = chunk.rows, chunk.profile
        records = staged.filter(F.col("row_kind") == ROW_KIND_RECORD)
        ranges, total = profile.ranges, profile.records
        self.summary.records_read += total
        for cluster_id in ranges:
            if cluster_id not in self.summary.cluster_ids:
                self.summary.cluster_ids.append(cluster_id)
        rows = self._table_rows(records, METADATA_LOG, source)
        rows, internal_rejects = _split_internal_duplicates(rows, KEYS[METADATA_LOG]) if profile.duplicates else (
            rows, None)
        pinned: dict[str, list[str]] = {}

        def build(table: DeltaTable) -> DataFrame | None:
            files = overlapping_files(table, ranges)
            pinned["files"] = files
            new = rows
            if files:
                stored = self._stored_keys(files, ranges).withColumn("_stored", F.lit(True))
                new = rows.join(stored.select("cluster_id", "offset", "_stored"), ["cluster_id", "offset"], "left")
                new = new.filter(F.col("_stored").isNull()).drop("_stored")
            if not total:
                return None
            if not files and profile.in_order and total <= ROWS_PER_FILE:
                return new.coalesce(1)  # in the table's order as staged: one file, as ``_ordered`` would write it
            return _ordered(new, METADATA_LOG, total)

        outcome = self.lake.commit_new_rows(METADATA_LOG, build, operation="ingest",
                                            ingest_id=self.summary.ingest_id)
        self.summary.add_version(METADATA_LOG, outcome.version)
        self.summary.records_added += outcome.rows_added
        self.summary.commit_retries += outcome.attempts - 1

        rejects = [internal_rejects] if internal_rejects is not None else []
        conflicts = internal_rejects.count() if internal_rejects is not None else 0
        if pinned.get("files"):
            stored = self._stored_keys(pinned["files"], ranges).select(
                "cluster_id", "offset", F.col("record_type").alias("s_type"),
                F.col("record_version").alias("s_version"), F.col("payload").alias("s_payload"),
                F.col("schema_id").alias("s_schema_id"), F.col("payload_json").alias("s_payload_json"),
                F.col("secret_fingerprint").alias("s_secret_fingerprint"))
            # A payload stored under another (older) Avro schema of its type has other bytes for the same record:
            # then Kafka's JSON form, which no schema change touches, says whether it is the same.
            # Two redacted records differ only in their secrets' fingerprints (records.redaction).
            same = F.when(F.col("schema_id").eqNullSafe(F.col("s_schema_id")),
                          F.col("payload").eqNullSafe(F.col("s_payload"))).otherwise(
                F.col("payload_json").eqNullSafe(F.col("s_payload_json"))) & F.col(
                "secret_fingerprint").eqNullSafe(F.col("s_secret_fingerprint"))
            clash = rows.join(stored, ["cluster_id", "offset"]).filter(
                ~same | ~F.col("record_type").eqNullSafe(F.col("s_type"))
                | ~F.col("record_version").eqNullSafe(F.col("s_version")))
            clash_rejects = self._reject_rows(clash.withColumn("kind", F.lit("conflict")).withColumn(
                "reason", F.concat(F.lit("offset already stored with a different record (stored "),
                                   F.col("s_type"), F.lit(" v"), F.col("s_version").cast("string"),
                                   F.lit("); not written")))).localCheckpoint(eager=True)
            clashes = clash_rejects.count()
            conflicts += clashes
            if clashes:
                rejects.append(clash_rejects)
        if profile.issues:
            self.summary.issues += profile.issues
            rejects.append(self._issue_rejects(staged.filter(F.col("row_kind") == ROW_KIND_ISSUE)))
        self.commit_rejects(rejects)
        self.summary.conflicts += conflicts
        self.summary.records_skipped += total - outcome.rows_added - conflicts
        for cluster_id, (first, last) in ranges.items():
            old = self.touched.get(cluster_id)
            self.touched[cluster_id] = (min(first, old[0]), max(last, old[1])) if old else (first, last)

    def _stored_keys(self, files: list[str], ranges: dict[str, tuple[int, int]]) -> DataFrame:
        stored = self.spark.read.schema(spark_schema(METADATA_LOG)).parquet(*files)
        condition = reduce(lambda a, b: a | b, [
            (F.col("cluster_id") == cluster_id) & F.col("offset").between(first, last)
            for cluster_id, (first, last) in ranges.items()])
        return stored.filter(condition)

    def _table_rows(self, records: DataFrame, table: str, source: str) -> DataFrame:
        columns: dict[str, Column] = {
            "append_time": F.timestamp_millis(F.col("append_time_ms")),
            "notes": F.col("message"),
            "source_file": F.coalesce(F.col("source_file"), F.lit(source)),
            "ingest_id": F.lit(self.summary.ingest_id),
            "ingest_time": F.lit(self.ingest_time),
        }
        return _conform(records, table, columns)

    def _reject_rows(self, df: DataFrame) -> DataFrame:
        return _conform(df, INGEST_REJECTS, {
            "end_offset": F.col("offset") if "end_offset" not in df.columns else F.col("end_offset"),
            "ingest_id": F.lit(self.summary.ingest_id),
            "ingest_time": F.lit(self.ingest_time),
        })

    def _issue_rejects(self, issues: DataFrame) -> DataFrame:
        kind = F.when(F.instr(F.col("message"), ": ") > 0,
                      F.substring_index(F.col("message"), ": ", 1)).otherwise(F.lit("invalid"))
        return self._reject_rows(issues.withColumn("kind", kind).withColumn("reason", F.col("message"))
                                 .withColumn("record_type", F.lit(None).cast("string"))
                                 .withColumn("payload", F.lit(None).cast("binary")))

    def commit_rejects(self, parts: list[DataFrame]) -> int:
        """Append reject rows not already recorded (same key); returns the rows added."""
        if not parts:
            return 0
        candidates = reduce(DataFrame.unionByName, parts)
        keys = KEYS[INGEST_REJECTS]

        def build(table: DeltaTable) -> DataFrame | None:
            new = candidates
            uris = table.file_uris()
            if uris:
                stored = self.spark.read.schema(spark_schema(INGEST_REJECTS)).parquet(*uris).select(*keys)
                condition = reduce(lambda a, b: a & b, [new[k].eqNullSafe(stored[k]) for k in keys])
                new = new.join(stored, condition, "left_anti")
            new = new.dropDuplicates(list(keys)).localCheckpoint(eager=True)
            if not new.limit(1).collect():
                return None
            return new.coalesce(1).sortWithinPartitions(*SORT_COLUMNS[INGEST_REJECTS])

        outcome = self.lake.commit_new_rows(INGEST_REJECTS, build, operation="ingest-rejects",
                                            ingest_id=self.summary.ingest_id)
        self.summary.add_version(INGEST_REJECTS, outcome.version)
        self.summary.rejects_added += outcome.rows_added
        return outcome.rows_added

    # --- snapshots -------------------------------------------------------------------------------

    def ingest_snapshot(self, snapshot: SnapshotInput, cluster_id: str) -> None:
        segment = SegmentInput(snapshot.path, True)
        chunk = self.stage_segments([segment], cluster_id)
        staged, profile = chunk.rows, chunk.profile
        records = staged.filter(F.col("row_kind") == ROW_KIND_RECORD)
        rows = self._table_rows(records.withColumn("snapshot_end_offset", F.lit(snapshot.end_offset))
                                .withColumn("snapshot_epoch", F.lit(snapshot.epoch)), SNAPSHOTS, str(snapshot.path))
        total = profile.records
        keys = list(KEYS[SNAPSHOTS])

        def build(table: DeltaTable) -> DataFrame | None:
            new = rows
            uris = overlapping_files(table, {cluster_id: (0, 2**63 - 1)})
            if uris:
                stored = (self.spark.read.schema(spark_schema(SNAPSHOTS)).parquet(*uris)
                          .filter((F.col("cluster_id") == cluster_id)
                                  & (F.col("snapshot_end_offset") == snapshot.end_offset)
                                  & (F.col("snapshot_epoch") == snapshot.epoch)).select(*keys))
                new = new.join(stored, keys, "left_anti")
            return _ordered(new, SNAPSHOTS, total) if total else None

        outcome = self.lake.commit_new_rows(SNAPSHOTS, build, operation="ingest-snapshot",
                                            ingest_id=self.summary.ingest_id)
        self.summary.add_version(SNAPSHOTS, outcome.version)
        self.summary.snapshot_records_added += outcome.rows_added
        self.summary.snapshot_records_skipped += total - outcome.rows_added
        if profile.issues:
            self.summary.issues += profile.issues
            self.commit_rejects([self._issue_rejects(staged.filter(F.col("row_kind") == ROW_KIND_ISSUE))])

    # --- gaps ------------------------------------------------------------------------------------

    def report_gaps(self) -> None:
        """Missing offsets in the touched clusters: inside the log always a gap; before the first stored
        offset only when no stored snapshot reaches it (Kafka deletes segments a snapshot covers)."""
        gap_rows = []
        for cluster_id in self.touched:
            for first, last in find_gaps(self.spark, self.lake, cluster_id):
                self.summary.gaps.append((cluster_id, first, last))
                gap_rows.append((cluster_id, "gap", first, last, None, None, None,
                                 f"offsets {first}..{last} are missing from the lake ({last - first + 1:,})",
                                 None, None))
        if gap_rows:
            ddl = ("cluster_id STRING, kind STRING, offset BIGINT, end_offset BIGINT, record_type STRING, "
                   "record_version INT, payload BINARY, reason STRING, source_file STRING, source_position BIGINT")
            self.commit_rejects([self._reject_rows(self.spark.createDataFrame(gap_rows, ddl))])

    def cleanup(self) -> None:
        if "://" in self.staging:
            try:
                filesystem, path = arrow_filesystem(self.staging)
                filesystem.delete_dir(path)
            except OSError:
                pass
        else:
            shutil.rmtree(self.staging, ignore_errors=True)


def _conform(df: DataFrame, table: str, computed: dict[str, Column]) -> DataFrame:
    """Exactly the table's columns, in order and with its types (the commit layer checks nothing else)."""
    schema = spark_schema(table)
    return df.select(*[(computed[f.name] if f.name in computed else F.col(f.name)).cast(f.dataType).alias(f.name)
                       for f in schema.fields])


def _ordered(df: DataFrame, table: str, expected_rows: int) -> DataFrame:
    """Range-partitioned and sorted by the table's key: each file then covers one narrow key range."""
    sort = list(SORT_COLUMNS[table])
    partitions = max(1, -(-expected_rows // ROWS_PER_FILE))
    return df.repartitionByRange(partitions, *sort).sortWithinPartitions(*sort)


def _split_internal_duplicates(rows: DataFrame, keys: tuple[str, ...]) -> tuple[DataFrame, DataFrame | None]:
    """One row per key within the source itself: the first (by source position) is kept; later copies
    that differ from it are conflicts (returned as reject rows), identical ones are dropped."""
    key_list = list(keys)
    duplicated = rows.groupBy(*key_list).count().filter(F.col("count") > 1).select(*key_list)
    duplicated = duplicated.localCheckpoint(eager=True)
    copies = rows.join(F.broadcast(duplicated), key_list)
    ranked = copies.withColumn("_rank", F.row_number().over(
        Window.partitionBy(*key_list).orderBy("source_file", "source_position")))
    first = ranked.filter(F.col("_rank") == 1).drop("_rank")
    later = ranked.filter(F.col("_rank") > 1).drop("_rank").join(
        first.select(*key_list, F.col("payload").alias("f_payload"), F.col("record_type").alias("f_type"),
                     F.col("record_version").alias("f_version"),
                     F.col("secret_fingerprint").alias("f_secret_fingerprint")), key_list)
    differing = later.filter(~F.col("payload").eqNullSafe(F.col("f_payload"))
                             | ~F.col("secret_fingerprint").eqNullSafe(F.col("f_secret_fingerprint"))
                             | ~F.col("record_type").eqNullSafe(F.col("f_type"))
                             | ~F.col("record_version").eqNullSafe(F.col("f_version")))
    rejects = differing.select(
        "cluster_id", F.lit("conflict").alias("kind"), "offset", F.col("offset").alias("end_offset"),
        "record_type", "record_version", "payload",
        F.lit("the source holds another, different record at this offset (the first one is kept)").alias("reason"),
        "source_file", "source_position", "ingest_id", "ingest_time")
    kept = rows.join(F.broadcast(duplicated), key_list, "left_anti").unionByName(first)
    return kept, _conform(rejects, INGEST_REJECTS, {})


# --- entry point ---------------------------------------------------------------------------------


def ingest(spark: SparkSession, lake: Lake | str | Path | None, source: str | Path,
           options: IngestOptions | None = None, *, plan: SourcePlan | None = None,
           ingest_id: str | None = None, progress: Callable[[str], None] | None = None) -> IngestSummary:
    """Ingest everything in `source` (segments, snapshots, or a JSONL / dump-log / Avro file) exactly once.

    `progress` is told the name of each stage as it starts (a terminal shows it; tests and logs ignore it)."""
    tell = progress or (lambda _stage: None)
    options = options or IngestOptions()
    target = lake if isinstance(lake, Lake) else Lake(lake)
    source_path = Path(source)
    plan = plan or plan_source(source_path, options.cluster_id)
    summary = IngestSummary(ingest_id or target.new_ingest_id(), str(source_path), notes=list(plan.notes))
    target.ensure_tables()
    require_redacted_lake(target)
    summary.add_version(AVRO_SCHEMAS, target.register_schemas())
    run = _Ingest(spark, target, options, summary)
    try:
        for number, snapshot in enumerate(plan.snapshots, 1):
            assert plan.cluster_id is not None
            tell(f"ingesting snapshot {number}/{len(plan.snapshots)} ({snapshot.path.name})")
            run.ingest_snapshot(snapshot, plan.cluster_id)
        if plan.segments:
            assert plan.cluster_id is not None
            chunks = segment_chunks(plan.segments, options.chunk_bytes)
            for number, chunk in enumerate(chunks, 1):
                size = sum(s.size() for s in chunk)
                tell(f"decoding and committing segments: chunk {number}/{len(chunks)} ({len(chunk)} file(s), "
                     f"{size / 2**20:,.1f} MiB)")
                run.ingest_log_rows(run.stage_segments(chunk, plan.cluster_id), str(chunk[0].path))
        if plan.entry_file is not None:
            path, fmt = plan.entry_file
            tell(f"decoding and committing {path.name} ({fmt})")
            run.ingest_log_rows(run.stage_entries(path, fmt, plan.cluster_id), str(path))
        tell("checking for missing offsets")
        run.report_gaps()
    finally:
        run.cleanup()
    return summary


__all__ = ["CHUNK_BYTES", "SPARK_DECODE_MIN_BYTES", "IngestOptions", "IngestSummary", "SegmentInput",
           "SnapshotInput", "SourcePlan", "find_gaps", "ingest", "plan_source", "segment_chunks"]
