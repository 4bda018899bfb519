"""What an incremental replay reads, or why it must be a full one.

An increment folds only the records after each cluster's checkpoint (``replay.fold.incremental``). That holds while
the history it extends starts where it started: the same base (``replay.core.coverage``), no records missing after the
checkpoint, the history tables the ones the checkpoint wrote. An ingest that brought an archived copy of older
segments, or segments and a snapshot after a gap, changes the base: the history is rebuilt (a full replay).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakehouse.lake import Lake
from lakehouse.lake_read import cluster_column_ranges, cluster_distinct_values, clusters_in_files
from lakehouse.spark_settings import few_partitions
from lakehouse.tables import (
    DERIVED_TABLES,
    HISTORY_TABLES,
    METADATA_LOG,
    REPLAY_ANOMALIES,
    REPLAY_CHECKPOINTS,
    REPLAY_SCHEMAS,
    SNAPSHOTS,
    spark_schema,
)
from replay.core.coverage import ClusterCoverage
from replay.fold.incremental import left_as_stored, record_types
from replay.store.coverage_table import stored_coverage
from replay.store.snapshots import SNAPSHOT_KEY, coverages


def lake_coverages(spark: SparkSession, lake: Lake, log_version: int, clusters: list[str] | None = None
                   ) -> dict[str, ClusterCoverage]:
    """Each cluster's history as the lake's log (at ``log_version``) and snapshots give it (only ``clusters``):
    from the Delta logs' file statistics where they tell (a log without holes, a snapshot per commit, as an ingest
    writes them), so that no Spark job reads the tables."""
    log = lake.read_as_files(spark, METADATA_LOG, log_version)
    offsets = cluster_column_ranges(lake.delta_table(METADATA_LOG, version=log_version), "offset")
    if clusters is not None:
        log = log.where(F.col("cluster_id").isin(*clusters))
        if offsets is not None:
            offsets = {cluster: offsets[cluster] for cluster in clusters if cluster in offsets}
    if not lake.table_exists(SNAPSHOTS):
        return coverages(log, None, offsets)
    ids = cluster_distinct_values(lake.delta_table(SNAPSHOTS), SNAPSHOT_KEY[1:])
    return coverages(log, lake.read_as_files(spark, SNAPSHOTS), offsets, ids)


def _same_coverage(spark: SparkSession, lake: Lake, log_version: int, scope: list[str], notes: list[str]
                   ) -> tuple[dict[str, ClusterCoverage] | None, dict[str, tuple[int, int]]]:
    """The clusters' coverage now, when each history still starts where the stored one does (else None)."""
    stored = stored_coverage(lake)
    now = lake_coverages(spark, lake, log_version, scope)
    checked: dict[str, tuple[int, int]] = {}
    for cluster in scope:
        row = stored.get(cluster)
        if row is None:
            notes.append(f"{cluster}: no replay_coverage row: full replay")
            return None, {}
        before, after = ClusterCoverage.from_row(row), now.get(cluster)
        if after is None or (before.base, before.first_offset, before.log_first_offset) != (
                after.base, after.first_offset, after.log_first_offset):
            notes.append(f"{cluster}: the history's base changed ({before.start_text()}; now "
                         f"{'none' if after is None else after.start_text()}): full replay")
            return None, {}
        checked[cluster] = (int(row["snapshots_checked"] or 0), int(row["snapshots_differing"] or 0))
    return now, checked


# A log of up to this many records is replayed whole even where an increment of it is possible: the increment's
# reads of the stored open versions, its seeds, merges and file replacements are some 40 small queries, more than a
# small log's whole fold costs (a 100-record increment of a 34,343-record log 6.2 s, its full replay 4.4 s; even at
# 60,000 records; BENCHMARKS.md, issue 42).
WHOLE_UP_TO = 50_000


@dataclass(frozen=True)
class IncrementPlan:
    checkpoints: dict[str, int]  # cluster → safe offset C of its last checkpoint (clusters in scope)
    derived: bool  # the derived tables are the ones the checkpoint wrote: refreshed, not rebuilt
    new_log: DataFrame  # records after C
    new_bounds: dict[str, tuple[int, int]]  # cluster → (first, last) new offset (clusters with new records)
    covered: dict[str, ClusterCoverage]  # cluster → its history's coverage after the new records (clusters in scope)
    checked: dict[str, tuple[int, int]]  # cluster → (checked, differing) snapshots before the new records

    @property
    def new_records(self) -> int:
        return sum(last - first + 1 for first, last in self.new_bounds.values())


def incremental_plan(spark: SparkSession, lake: Lake, log_version: int, cluster_id: str | None,
                     notes: list[str]) -> IncrementPlan | None:
    """What an incremental run reads, or None when it must be a full replay."""
    names = (*HISTORY_TABLES, REPLAY_ANOMALIES)
    if not lake.table_exists(REPLAY_CHECKPOINTS) or not all(lake.table_exists(n) for n in names):
        return None
    rows = lake.small_rows(REPLAY_CHECKPOINTS)
    if not rows:
        return None
    latest = max(rows, key=lambda r: (r["replayed_at"], r["metadata_log_version"]))
    if int(latest["metadata_log_version"]) >= log_version:
        return None  # nothing new: a full replay (as before incremental replays existed)
    tables = latest["tables"] or {}
    if any(tables.get(n) != int(lake.delta_table(n).version()) for n in names):
        notes.append("the history tables changed since the last checkpoint: full replay")
        return None
    derived = all(lake.table_exists(n) and tables.get(n) == int(lake.delta_table(n).version())
                  and set(lake.columns(n)) == set(REPLAY_SCHEMAS[n].names) for n in DERIVED_TABLES)
    last: dict[str, Any] = {}
    for row in sorted(rows, key=lambda r: r["replayed_at"]):
        last[row["cluster_id"]] = row
    # clusters present in files added since the checkpointed metadata_log version
    try:
        before = set(lake.delta_table(METADATA_LOG, version=int(latest["metadata_log_version"])).file_uris())
    except Exception:  # an expired version (vacuumed): rebuild
        notes.append("the checkpointed metadata_log version is gone: full replay")
        return None
    table = lake.delta_table(METADATA_LOG, version=log_version)
    added = [f for f in table.file_uris() if f not in before]
    seen = clusters_in_files(spark, table, added)
    scope = {cluster_id} if cluster_id is not None else seen | set(last)
    if cluster_id is not None and cluster_id not in seen and cluster_id not in last:
        return None  # unknown cluster: the full path reports it
    if any(c not in last for c in scope):
        notes.append("a cluster without a checkpoint: full replay")
        return None
    checkpoints = {c: int(last[c]["last_offset"]) for c in scope}
    covered, checked = _same_coverage(spark, lake, log_version, sorted(scope), notes)
    if covered is None:
        return None
    frames = [lake.read_offsets(spark, METADATA_LOG, c, cp + 1, 2**62, version=log_version)
              for c, cp in sorted(checkpoints.items()) if c in seen]
    if not frames:
        return IncrementPlan(checkpoints, derived, spark.createDataFrame([], spark_schema(METADATA_LOG)), {}, covered,
                             checked)
    new_log = frames[0]
    for frame in frames[1:]:
        new_log = new_log.unionByName(frame)
    # the new offsets as the coverage's runs give them: the first after the checkpoint to the last stored
    new_bounds = {c: (cp + 1, covered[c].last_offset) for c, cp in sorted(checkpoints.items())
                  if c in seen and covered[c].last_offset > cp}
    for cluster, (first, _) in new_bounds.items():
        missing = next((gap for gap in covered[cluster].gaps if gap.holds(first)), None)
        if missing is not None:
            notes.append(f"{cluster}: offsets {first}..{missing.last} are missing after the checkpoint: full replay")
            return None
    new_log = few_partitions(new_log).persist()  # one read per cluster: as many partitions
    return IncrementPlan(checkpoints, derived, new_log, new_bounds, covered, checked)


def cheaper_whole(plan: IncrementPlan, log_records: int, notes: list[str]) -> bool:
    """Whether the log of ``log_records`` records is replayed whole rather than by the increment ``plan`` (it has new
    records and the log is at most ``WHOLE_UP_TO``), saying so in ``notes``."""
    if not plan.new_bounds or log_records > WHOLE_UP_TO:
        return False
    notes.append(f"{log_records:,} records in metadata_log: replayed whole, which costs less than an increment up to "
                 f"{WHOLE_UP_TO:,} records (`replay --incremental` extends the history instead)")
    return True


def kept_whole(plan: IncrementPlan, notes: list[str]) -> frozenset[str]:
    """The history tables a replay of the whole log after the ``plan``'s new records leaves as stored, saying so in
    ``notes``: those an increment leaves as stored (``replay.fold.incremental.left_as_stored``); the plan's new records
    are released."""
    kept = frozenset(left_as_stored(record_types(plan.new_log)))
    plan.new_log.unpersist()
    if kept:
        notes.append(f"kept as stored, no record they are folded from after the checkpoint: {', '.join(sorted(kept))}")
    return kept


__all__ = ["WHOLE_UP_TO", "IncrementPlan", "cheaper_whole", "incremental_plan", "kept_whole", "lake_coverages"]
