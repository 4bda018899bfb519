"""The replay into the lake: ``metadata_log`` → the history tables, ``replay_anomalies`` and a checkpoint row.

Every table is written in one deterministic layout (``replay.store.layout``): sorted by its key and
``valid_from_offset``, at most ``ROWS_PER_FILE`` rows per file, open versions apart from closed ones. The same
input therefore gives byte-identical Parquet data files whatever ``spark.sql.shuffle.partitions`` is (only the
generated file names differ).

Replaying one cluster (``cluster_id=...``) replaces only that cluster's rows: the rows of the other clusters are
read from the current version of each table and written back unchanged. Every table's name, key or sort order
and schema is declared in the lake's registry (``lakehouse.tables``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakehouse.concurrent_jobs import run_ahead, run_concurrently
from lakehouse.lake import Lake
from lakehouse.parquet_files import spark_rows
from lakehouse.spark_settings import (
    constraints_not_propagated,
    file_statistics,
    interpreted,
    kept_checkpoint,
    planned_ahead,
    shuffle_partitions_held,
    sized_for,
    sort_aggregated,
    spark_conf,
)
from lakehouse.tables import (
    BROKER_HISTORY,
    CONFIG_HISTORY,
    DERIVED_ORDER,
    DERIVED_TABLES,
    HISTORY_TABLES,
    METADATA_LOG,
    PARTITION_HISTORY,
    REPLAY_ANOMALIES,
    REPLAY_CHECKPOINTS,
    REPLAY_COVERAGE,
    REPLICA_HISTORY,
    SNAPSHOTS,
    spark_schema,
)
from replay.audit.effective_configs import configs_in_force
from replay.core.coverage import ClusterCoverage, SnapshotId
from replay.core.shapes import RecordShapes, lake_shapes
from replay.fold.engine import replay
from replay.fold.incremental import incremental_replay, safe_offsets
from replay.fold.replicas import replica_rows, replica_versions
from replay.store.coverage_table import coverage_notes, write_coverage
from replay.store.derived import (
    GROWING_HISTORY,
    DerivationInput,
    derived_tables,
    folded_input,
    written_input,
)
from replay.store.derived_refresh import refresh_derived
from replay.store.increment_plan import IncrementPlan, cheaper_whole, incremental_plan, kept_whole, lake_coverages
from replay.store.layout import topic_ranges
from replay.store.snapshot_checks import SnapshotChecks, snapshot_checks
from replay.store.snapshots import snapshot_input, with_snapshot_causes
from replay.store.table_writes import (
    RECORDS_WRITTEN_AT_ONCE,
    TABLES_APART,
    WRITING,
    replaceable_rows,
    write_sorted,
    write_tables,
)

ANOMALIES = REPLAY_ANOMALIES
CHECKPOINTS = REPLAY_CHECKPOINTS
COVERAGE = REPLAY_COVERAGE
# An increment's fold (its records, the seeds, the merges into the open versions) is small work in many plans: it
# runs without generated code on any lake, its writes with it (measured: BENCHMARKS.md, issue 20)
INTERPRETED_INCREMENT_FOLD = True
DERIVING = "deriving the state machines and the election audit"  # the stage before the derived tables' writes
# the two concurrent jobs of a small full replay and of every increment: the history tables' writes, and the
# derived tables' derivation and writes
HISTORY, DERIVED = "history", "derived"
CHECKPOINT_SCHEMA = spark_schema(CHECKPOINTS)  # declared in the registry (lakehouse.tables)


class ReplayError(ValueError):
    """The replay cannot run: no metadata_log, no records, an unknown cluster id."""


@dataclass(frozen=True)
class ReplaySummary:
    clusters: dict[str, int]  # cluster id → last offset replayed
    metadata_log_version: int
    rows: dict[str, int]  # table → rows (all clusters in the table)
    versions: dict[str, int]  # table → Delta version written
    anomalies: int
    seconds: float
    mode: str = "full"
    notes: list[str] = field(default_factory=list)

    @property
    def last_offset(self) -> int:
        return max(self.clusters.values())


def records_covered(covered: Mapping[str, ClusterCoverage]) -> int:
    """The records a full replay of ``covered`` (cluster → its coverage) folds: each cluster's log from its first
    stored offset on."""
    return sum(max(c.last_offset - c.log_first_offset + 1, 0) for c in covered.values())


def _keep_other_clusters(spark: SparkSession, lake: Lake, name: str, new: DataFrame, cluster_id: str) -> DataFrame:
    """``new`` plus the current rows of every other cluster (for a one-cluster replay)."""
    if not lake.table_exists(name):
        return new
    table = lake.delta_table(name)
    current = lake.read(spark, name, version=table.version())
    if set(current.columns) != set(new.columns):
        return new  # a table of another layout (older release): rebuilt from this cluster only
    return new.unionByName(current.where(F.col("cluster_id") != cluster_id))


def _checked(log: DataFrame, snapshots: DataFrame | None, history: dict[str, DataFrame],
             checks: dict[str, tuple[SnapshotId, ...]], shapes: RecordShapes, tell: Callable[[str], None]
             ) -> SnapshotChecks:
    """The later snapshots checked against the fold's ``history`` (``replay.store.snapshot_checks``)."""
    if snapshots is not None and any(checks.values()):
        tell("checking the later snapshots against the fold")
    return snapshot_checks(log, snapshots, history, checks, shapes)


def run_replay(spark: SparkSession, lake: Lake, cluster_id: str | None = None, full: bool = False,
               progress: Callable[[str], None] | None = None, incremental: bool = False) -> ReplaySummary:
    """Replay ``metadata_log`` (every cluster, or only ``cluster_id``) into the lake's history tables.

    Incremental (``replay.fold.incremental``) when a checkpoint exists, the history tables are the ones it wrote
    and ``metadata_log`` grew since, unless the log is small enough that a full replay costs less
    (``replay.store.increment_plan.WHOLE_UP_TO``; ``incremental=True`` extends it all the same: that whole replay
    keeps the small tables no new record is folded into, ``kept_whole``); a full rebuild otherwise or with
    ``full=True``. A cluster whose stored log no longer starts at offset 0 is replayed from the snapshot it starts at
    (``replay.core.coverage``). ``progress`` is told each stage (a terminal shows it). A small log is replayed as
    ``lakehouse.spark_settings.sized_for`` plans it (``interpreted``, ``planned_ahead``: its increments too), and
    without Delta's data skipping where its tables were written one topic range each
    (``replay.store.layout.topic_ranges``): with nothing to skip, the job it runs before each filtered read is all it
    adds (BENCHMARKS.md, issue 42). Every replay is planned without constraint propagation
    (``lakehouse.spark_settings.constraints_not_propagated``)."""
    if not lake.table_exists(METADATA_LOG):
        raise ReplayError(f"no metadata_log in the lake at {lake.root}: run `kraft-replay ingest` first")
    log_records = lake.rows(METADATA_LOG)
    with (sized_for(spark, log_records), file_statistics(spark, many_files=topic_ranges(log_records) > 1),
          constraints_not_propagated(spark)):
        return _run_replay(spark, lake, cluster_id, full, incremental, log_records, progress or (lambda _stage: None))


def _run_replay(spark: SparkSession, lake: Lake, cluster_id: str | None, full: bool, incremental: bool,
                log_records: int, tell: Callable[[str], None]) -> ReplaySummary:
    started = time.monotonic()
    log_version = int(lake.delta_table(METADATA_LOG).version())
    notes: list[str] = []
    # the history tables left as stored (their Delta version stays): needed at the writes, found as the fold runs
    kept: Future[frozenset[str]] | None = None
    if not full:
        plan = incremental_plan(spark, lake, log_version, cluster_id, notes)
        if plan is not None:
            if incremental or not cheaper_whole(plan, log_records, notes):
                with shuffle_partitions_held(spark, plan.new_records):
                    tell("replaying the offsets after the last checkpoint (incremental)")
                    return _run_incremental(spark, lake, log_version, plan, notes, started, tell)
            kept = run_ahead(spark, partial(kept_whole, plan, notes))
    log = lake.read_as_files(spark, METADATA_LOG, log_version)
    if cluster_id is not None:
        log = log.where(F.col("cluster_id") == cluster_id)
    snapshots = lake.read_as_files(spark, SNAPSHOTS) if lake.table_exists(SNAPSHOTS) else None
    covered = lake_coverages(spark, lake, log_version, None if cluster_id is None else [cluster_id])
    if not covered:
        if cluster_id is not None:
            raise ReplayError(f"no records of cluster {cluster_id!r} in metadata_log")
        raise ReplayError(f"metadata_log v{log_version} at {lake.root} holds no records")
    clusters = {c: coverage.last_offset for c, coverage in covered.items()}
    replay_input = snapshot_input(log, snapshots, covered)
    # a query of its own, needed only at the end: run while the fold's first steps run one at a time
    safe = run_ahead(spark, partial(safe_offsets, replay_input.log, clusters))

    records = records_covered(covered)
    with shuffle_partitions_held(spark, records):
        tell("folding the log into states (Spark window functions)")
        # the fold's windows all read the partition events in one order (``replay.fold.partitions``): sorted once, kept
        # by its checkpoints. An increment of a larger log keeps adaptive execution (slower without it), its fold
        # interpreted (46 -> 27 s at 1 M, 71 -> 64 s at 10 M; its writes interpreted took 2x: issue 20, BENCHMARKS.md).
        with planned_ahead(spark):
            shapes = lake_shapes(spark, lake)
            result = replay(replay_input.log, replay_input.base, shapes)
            history = {name: with_snapshot_causes(df, covered) for name, df in result.tables.items()}
            at_once = cluster_id is None and records <= RECORDS_WRITTEN_AT_ONCE
            kept_tables = frozenset() if kept is None else kept.result()
            # a small replay writes the tables that need nothing of the partitions while it cuts the replicas (its
            # steps there run one at a time: a core is free); the configs' checkpoint is the derivation's too
            early = {name: history[name] for name in history
                     if at_once and name not in (PARTITION_HISTORY, CONFIG_HISTORY, *kept_tables)}
            written_early = (run_ahead(spark, partial(write_tables, spark, lake, early, _untold, records)) if early
                             else None)
            # the configs' checkpoint, which the derivation waits for, taken beside the replicas' cut too
            configs_ahead = run_ahead(spark, history[CONFIG_HISTORY].localCheckpoint) if at_once else None
            # each replica's versions, cut from the partitions' and brokers' as they are written (with their snapshot
            # causes): the replica_history rows, and what the replica states read (checkpointed: cut once for both).
            # Grouped from the fold's rows sorted by partition: a hash of a large replay's groups spills them
            # (BENCHMARKS.md)
            with sort_aggregated(spark):
                replicas = kept_checkpoint(replica_versions(history[PARTITION_HISTORY], history[BROKER_HISTORY]))
            history[REPLICA_HISTORY] = replica_rows(replicas)
            checks = _checked(log, snapshots, history, {c: coverage.checks for c, coverage in covered.items()},
                              shapes, tell)
            tables = {**history, ANOMALIES: result.anomalies.unionByName(checks.anomalies)}
            if cluster_id is not None:
                tables = {name: _keep_other_clusters(spark, lake, name, df, cluster_id) for name, df in tables.items()}
            if at_once:
                # a small replay derives while it writes; what both read is computed once (the partitions and
                # brokers are the fold's checkpoints)
                assert configs_ahead is not None  # taken when at once
                tables[CONFIG_HISTORY] = configs_ahead.result()
                derivation = folded_input(tables[PARTITION_HISTORY], replicas, tables[BROKER_HISTORY])
                written = [name for name in tables if name not in kept_tables]
                versions = _beside(spark, tell, written, partial(
                    write_tables, spark, lake, {n: tables[n] for n in written if n not in early}, _untold, records),
                    partial(_write_derived, spark, lake, derivation, tables[CONFIG_HISTORY], records))
                if written_early is not None:
                    versions |= written_early.result()
            else:
                versions = write_tables(spark, lake, {n: df for n, df in tables.items() if n not in kept_tables}, tell,
                                        records)
            versions |= {name: int(lake.delta_table(name).version()) for name in kept_tables}
        versions[COVERAGE] = write_coverage(lake, covered, checks.counts)
        notes.extend(coverage_notes(covered, checks.counts))
        if not at_once:
            # derived from the fold, as the small replay does, not from the tables just written
            versions |= _write_derived(spark, lake, folded_input(history[PARTITION_HISTORY], replicas,
                                                                 history[BROKER_HISTORY]),
                                       history[CONFIG_HISTORY], records, cluster_id, tell=tell)
    return _finish(lake, clusters, {c: safe.result()[c] for c in clusters}, log_version, "full", versions,
                   [*tables, *DERIVED_TABLES, COVERAGE], notes, started)


def _untold(stage: str) -> None:
    """A stage run beside another, inside the stage that names both: not told on its own."""


def _beside(spark: SparkSession, tell: Callable[[str], None], history_tables: list[str],
            write_history: Callable[[], dict[str, int]], write_derived: Callable[[], dict[str, int]]
            ) -> dict[str, int]:
    """The history tables written and the derived ones computed and written at once, one stage naming them all (each
    write and each step of the derivation is mostly a Spark job's fixed latency); table → version."""
    tell(WRITING + TABLES_APART.join([*history_tables, *DERIVED_TABLES]))
    done = run_concurrently(spark, {HISTORY: write_history, DERIVED: write_derived})
    return done[HISTORY] | done[DERIVED]


def _written(spark: SparkSession, lake: Lake, versions: Mapping[str, int]) -> dict[str, DataFrame]:
    """The history tables as the replay wrote them (``versions``)."""
    return {name: lake.read_as_files(spark, name, versions[name]) for name in HISTORY_TABLES}


def _write_derived(spark: SparkSession, lake: Lake, derivation: DerivationInput, config_history: DataFrame,
                   records: int, cluster_id: str | None = None, *, tell: Callable[[str], None] = _untold
                   ) -> dict[str, int]:
    """Compute and write the state machines and the election audit of a replay of ``records`` from ``derivation``
    and ``config_history`` (of ``cluster_id`` only, when given: the other clusters' rows are kept); name → version
    written."""
    tell(DERIVING)
    configs = configs_in_force(spark, lake, config_history)
    tell(WRITING + TABLES_APART.join(DERIVED_TABLES))

    def write(name: str, rows: DataFrame) -> int:
        if cluster_id is not None:
            rows = _keep_other_clusters(spark, lake, name, rows, cluster_id)
        return write_sorted(lake, rows, name, DERIVED_ORDER[name], records)

    # each table written as soon as it is derived; each partition's and replica's rows grouped as sorted rows (the
    # partitions' come sorted)
    with sort_aggregated(spark):
        return derived_tables(derivation, configs, write)


def _finish(lake: Lake, clusters: dict[str, int], safe: dict[str, int], log_version: int, mode: str,
            versions: dict[str, int], names: list[str], notes: list[str], started: float) -> ReplaySummary:
    """Append the checkpoint rows (``last_offset``: the safe point, see ``replay.fold.incremental``), written by the
    driver, which holds them."""
    replayed_at = datetime.now(UTC)
    table_versions = sorted((name, versions[name]) for name in names)
    checkpoint = spark_rows(
        [dict(zip(CHECKPOINT_SCHEMA.names, (c, safe[c], log_version, mode, replayed_at, table_versions), strict=True))
         for c in sorted(safe)], CHECKPOINT_SCHEMA)
    versions[CHECKPOINTS] = lake.write(checkpoint, CHECKPOINTS, "append")
    rows = {name: lake.rows(name) for name in names}
    return ReplaySummary(clusters=clusters, metadata_log_version=log_version, rows=rows, versions=versions,
                         anomalies=rows[ANOMALIES], seconds=time.monotonic() - started, mode=mode, notes=notes)


def _run_incremental(spark: SparkSession, lake: Lake, log_version: int, plan: IncrementPlan, notes: list[str],
                     started: float, tell: Callable[[str], None]) -> ReplaySummary:
    names = (*HISTORY_TABLES, ANOMALIES)
    current = {n: int(lake.delta_table(n).version()) for n in names}
    changed = {c: cp for c, cp in plan.checkpoints.items() if c in plan.new_bounds}
    safe = dict(plan.checkpoints)
    versions = dict(current)
    counts = dict(plan.checked)
    if changed:
        safe.update(safe_offsets(plan.new_log, {c: last for c, (_, last) in plan.new_bounds.items()}))
        # closed versions never change: the large tables are read and replaced only where they hold open versions
        open_files = {n: lake.files_with_nulls(n, "valid_to_offset", current[n]) for n in GROWING_HISTORY}
        stored = {n: (replaceable_rows(spark, lake, n, open_files[n])
                      if n in open_files else lake.read_as_files(spark, n, current[n])) for n in HISTORY_TABLES}
        shapes = lake_shapes(spark, lake)
        with interpreted(spark, INTERPRETED_INCREMENT_FOLD):
            result = incremental_replay(spark, plan.new_log, changed, stored, lake.read_as_files(
                spark, ANOMALIES, current[ANOMALIES]), shapes)
        # the snapshots after C: every version valid after C is in the merged rows
        new_checks = {c: tuple(s for s in plan.covered[c].checks if s.image_offset > cp) for c, cp in changed.items()}
        checks = _checked(plan.new_log, lake.read_as_files(spark, SNAPSHOTS) if lake.table_exists(SNAPSHOTS) else None,
                          result.tables, new_checks, shapes, tell)
        found = any(differing for _, differing in checks.counts.values())
        # a table whose rows are the stored ones keeps its current version
        written = {n: df for n, df in {**result.tables, ANOMALIES: result.anomalies.unionByName(checks.anomalies)
                                       }.items() if n not in result.unchanged or (n == ANOMALIES and found)}
        counts = {c: (before[0] + checks.counts.get(c, (0, 0))[0], before[1] + checks.counts.get(c, (0, 0))[1])
                  for c, before in counts.items()}
        replaced = {n: (open_files[n], current[n]) for n in open_files}
        if plan.derived:
            # the derived tables from the rows about to be written, not read back, while they are written
            rows = {n: written[n] if n in written else result.tables[n].limit(0) for n in GROWING_HISTORY}
            versions.update(_beside(
                spark, tell, list(written), partial(write_tables, spark, lake, written, _untold, plan.new_records,
                                                    replaced),
                partial(refresh_derived, spark, lake, rows, result.tables, changed, plan.new_records)))
        else:
            versions.update(write_tables(spark, lake, written, tell, plan.new_records, replaced))
            notes.append("the derived tables are not the ones the last checkpoint wrote: rebuilt whole")
            written = _written(spark, lake, versions)
            versions |= _write_derived(spark, lake, written_input(written), written[CONFIG_HISTORY],
                                       records_covered(plan.covered), tell=tell)
    else:
        notes.append("no new records after the checkpoints: tables unchanged")
        versions.update({n: int(lake.delta_table(n).version()) for n in DERIVED_TABLES if lake.table_exists(n)})
    plan.new_log.unpersist()
    versions[COVERAGE] = write_coverage(lake, plan.covered, counts)
    notes.extend(coverage_notes(plan.covered, counts))
    clusters = {c: plan.new_bounds[c][1] if c in plan.new_bounds else cp for c, cp in plan.checkpoints.items()}
    names = (*names, *(n for n in DERIVED_TABLES if n in versions), COVERAGE)
    return _finish(lake, clusters, safe, log_version, "incremental", versions, list(names), notes, started)


__all__ = ["ANOMALIES", "CHECKPOINTS", "CHECKPOINT_SCHEMA", "HISTORY_TABLES", "METADATA_LOG", "ReplayError",
           "ReplaySummary", "run_replay", "spark_conf"]
