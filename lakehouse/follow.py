"""Continuous archiving: follow a live `__cluster_metadata-0` directory into the lake.

The directory is only read (never locked or written). Each round lists it, and ingests what is new:
snapshots not seen yet, segments that appeared, and the part of a growing segment after the last complete
batch already taken (a batch the broker is still appending is left for the next round). A segment Kafka deletes
behind a snapshot is first renamed ``*.log.deleted`` and removed a minute later: its records the follower had not
taken yet are read from there. Positions live in memory only: after a restart the first round re-reads everything
and the lake's deduplication keeps it exactly once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession

from lakehouse.ingest import IngestOptions, IngestSummary, SegmentInput, SnapshotInput, SourcePlan, ingest, plan_source
from lakehouse.lake import Lake
from records import log_dir
from records.errors import RecordsError
from records.framing import BatchScan


def complete_end(path: Path, start: int) -> int:
    """Byte position after the last complete batch at or after `start` (headers only are read).

    A batch the broker is still appending ends the scan there, for the next round; a corrupt length (zero,
    say: Kafka's ``CorruptRecordException``) raises :class:`records.errors.CorruptBatchError`, since nothing
    after it can be found (:class:`records.framing.BatchScan`).
    """
    with path.open("rb") as stream:
        scan = BatchScan(stream, source=str(path), read_bodies=False, start=start)
        for _frame in scan:
            pass
    return scan.position


class Follower:
    """Incremental state of one followed directory: per segment, the bytes already ingested."""

    def __init__(self, spark: SparkSession, lake: Lake, directory: Path, options: IngestOptions) -> None:
        self.spark = spark
        self.lake = lake
        self.directory = directory
        self.options = options
        self.positions: dict[Path, int] = {}  # segment (its name before any deletion rename) → bytes taken
        self.finished: set[Path] = set()  # segments renamed for deletion and read to their end
        self.snapshots_seen: set[Path] = set()
        self.cluster_id: str | None = options.cluster_id

    def round(self) -> IngestSummary | None:
        """Ingest whatever is new since the last round; None when nothing changed."""
        try:
            layout = log_dir.discover(self.directory)
        except RecordsError:
            return None  # nothing there yet (or the directory is being recreated): try again later
        try:
            return self._take(layout)
        except FileNotFoundError:
            # Kafka deleted a segment or snapshot behind a newer snapshot between the listing and the read: list
            # again next round (what was stored already is kept once by the lake's deduplication)
            return None

    def _take(self, layout: log_dir.LogLayout) -> IngestSummary | None:
        """Ingest what ``layout`` lists beyond the positions already taken."""
        if self.cluster_id is None:
            self.cluster_id = layout.cluster_id or plan_source(self.directory, None).cluster_id
        plan = SourcePlan(self.directory, self.cluster_id)
        present = {s.path for s in layout.segments}
        renamed = {original: path for path, _ in layout.skipped
                   if (original := log_dir.segment_renamed_for_deletion(path)) is not None}
        renamed = {o: p for o, p in renamed.items() if o not in present and o not in self.finished}
        readable = sorted([*((p, p) for p in present), *renamed.items()])  # (segment, file to read), by offset
        ends: dict[Path, int] = {}
        for segment, path in readable:
            start = self.positions.get(segment, 0)
            end = complete_end(path, start)
            if end > start:
                # Ranges end on batch boundaries, so no partial tail is ever read (is_last only tolerates).
                plan.segments.append(SegmentInput(path, True, start, end))
                ends[segment] = end
        plan.snapshots = [SnapshotInput(s.path, s.snapshot_end_offset or 0, s.snapshot_epoch or 0)
                          for s in layout.snapshots if s.path not in self.snapshots_seen]
        if plan.segments or plan.snapshots:
            summary = ingest(self.spark, self.lake, self.directory, self.options, plan=plan)
        else:
            summary = None
        self.positions.update(ends)
        self.snapshots_seen.update(s.path for s in plan.snapshots)
        # a renamed segment no longer grows: read to its end, it is done (until Kafka removes the file)
        self.finished = {o for o in self.finished if o.with_name(o.name + log_dir.DELETED_SUFFIX).exists()}
        self.finished |= set(renamed)
        self.positions = {p: v for p, v in self.positions.items() if p in present}  # deleted by retention
        return summary


def follow(spark: SparkSession, lake: Lake, directory: Path, options: IngestOptions, *, interval: float,
           stop: threading.Event, on_round: Callable[[IngestSummary], None] | None = None) -> int:
    """Rounds every `interval` seconds until `stop` is set; returns how many rounds ingested something."""
    follower = Follower(spark, lake, directory, options)
    rounds = 0
    while not stop.is_set():
        summary = follower.round()
        if summary is not None:
            rounds += 1
            if on_round is not None:
                on_round(summary)
        stop.wait(interval)
    return rounds
