"""Planning an ingest: what one source holds (segments, snapshots, an entry file), its cluster id, its chunks."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lakehouse.spark_decode import DEFAULT_SPLIT_BYTES
from records import log_dir
from records.errors import RecordsError
from records.sources import detect_format

SPARK_DECODE_MIN_BYTES = 32 * 2**20  # below this, decoding in the driver beats scheduling Spark tasks
CHUNK_BYTES = 2 * 2**30  # segments committed together: bounds staging space and work lost to a kill
MAX_GAPS_REPORTED = 10_000


@dataclass(frozen=True)
class IngestOptions:
    """Knobs of an ingest; the defaults suit the CLI."""

    cluster_id: str | None = None
    skip_corrupt: bool = False
    spark_decode_min_bytes: int = SPARK_DECODE_MIN_BYTES
    chunk_bytes: int = CHUNK_BYTES
    split_bytes: int = DEFAULT_SPLIT_BYTES


@dataclass(frozen=True)
class SegmentInput:
    """A segment, or the byte range `[start, end)` of one (follow mode re-reads a growing segment)."""

    path: Path
    is_last: bool
    start: int = 0
    end: int | None = None

    def size(self) -> int:
        end = self.end if self.end is not None else self.path.stat().st_size
        return max(0, end - self.start)


@dataclass(frozen=True)
class SnapshotInput:
    path: Path
    end_offset: int
    epoch: int


@dataclass
class SourcePlan:
    """What one source holds, in the order it is ingested."""

    source: Path
    cluster_id: str | None
    segments: list[SegmentInput] = field(default_factory=list)
    snapshots: list[SnapshotInput] = field(default_factory=list)
    entry_file: tuple[Path, str] | None = None  # (path, format) of a JSONL / dump-log / Avro input
    notes: list[str] = field(default_factory=list)


def _cluster_id_near(path: Path) -> str | None:
    """cluster.id of the meta.properties beside a segment file or in the data dir above it."""
    for directory in (path.parent, path.parent.parent):
        meta = directory / "meta.properties"
        if meta.is_file():
            cluster_id = log_dir.parse_properties(meta.read_text(encoding="utf-8")).get("cluster.id")
            if cluster_id:
                return cluster_id
    return None


def _no_cluster_id(path: Path) -> RecordsError:
    return RecordsError(f"{path}: no cluster id: no meta.properties with cluster.id beside the log; "
                        "pass --cluster-id")


def _bootstrap_note(layout: log_dir.LogLayout) -> str:
    """Why ``bootstrap.checkpoint`` is not stored: it is the bootstrap records a log from offset 0 begins with, and
    no image of a log that Kafka trimmed behind a snapshot (that log's history starts from the snapshot)."""
    first = min((s.base_offset or 0 for s in layout.segments), default=None)
    if first == 0:
        return "bootstrap snapshot not stored (its records are also the first records of the log)"
    where = "no log segment here" if first is None else f"the log here starts at offset {first}"
    return (f"bootstrap snapshot not stored (the records the cluster was formatted with, not the image at any "
            f"stored offset; {where}: the history starts from a stored snapshot)")


def plan_source(source: Path, cluster_id: str | None = None) -> SourcePlan:
    """Find what to ingest in `source`, and its cluster id (`cluster_id` wins over meta.properties)."""
    kind = detect_format(source)
    if kind == "directory":
        layout = log_dir.discover(source)
        resolved = cluster_id or layout.cluster_id
        if not resolved:
            raise _no_cluster_id(source)
        plan = SourcePlan(source, resolved)
        last = len(layout.segments) - 1
        plan.segments = [SegmentInput(s.path, index == last) for index, s in enumerate(layout.segments)]
        plan.snapshots = [SnapshotInput(s.path, s.snapshot_end_offset or 0, s.snapshot_epoch or 0)
                          for s in layout.snapshots]
        plan.notes += [f"{path.name}: {why}" for path, why in layout.skipped]
        if layout.bootstrap is not None:
            plan.notes.append(f"{layout.bootstrap.path}: {_bootstrap_note(layout)}")
        if not plan.segments and not plan.snapshots:
            raise RecordsError(f"{source}: no log segments or snapshots to ingest")
        return plan
    if kind == "segment":
        resolved = cluster_id or _cluster_id_near(source)
        if not resolved:
            raise _no_cluster_id(source)
        return SourcePlan(source, resolved, segments=[SegmentInput(source, True)])
    if kind == "snapshot":
        classified = log_dir.classify(source)
        if classified.kind != "snapshot":
            raise RecordsError(f"{source}: only snapshots named NNNNNNNNNNNNNNNNNNNN-NNNNNNNNNN.checkpoint can be "
                               "ingested (the name gives the end offset and epoch)")
        resolved = cluster_id or _cluster_id_near(source)
        if not resolved:
            raise _no_cluster_id(source)
        return SourcePlan(source, resolved, snapshots=[SnapshotInput(
            source, classified.snapshot_end_offset or 0, classified.snapshot_epoch or 0)])
    # JSON lines and Avro may carry the cluster id in every entry; checked per row when staged.
    return SourcePlan(source, cluster_id, entry_file=(source, kind))


def segment_chunks(segments: list[SegmentInput], chunk_bytes: int) -> list[list[SegmentInput]]:
    """Consecutive segments grouped up to `chunk_bytes`: each group is decoded and committed on its own."""
    chunks: list[list[SegmentInput]] = []
    size = 0
    for segment in segments:
        if chunks and size + segment.size() <= chunk_bytes:
            chunks[-1].append(segment)
            size += segment.size()
        else:
            chunks.append([segment])
            size = segment.size()
    return chunks

