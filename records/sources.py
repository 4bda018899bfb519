"""Every input kraft-replay reads, recognised by its content and name, as one stream of log entries.

Inputs: a log segment (``*.log``), a snapshot (``*.checkpoint``, ``bootstrap.checkpoint``), a
``__cluster_metadata-0`` directory or the Kafka data directory holding it, the text printed by
``kafka-dump-log --cluster-metadata-decoder``, JSON lines, and Avro container files written by
``kraft-replay export``. Everything skipped on the way (producer-state snapshots, files marked for
deletion, a crashed writer's partial batch, batches skipped with ``--skip-corrupt``) is listed in
the :class:`ReadReport`, never dropped silently.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from records import dumplog, log_dir
from records.avro_codec import read_container
from records.batch import BatchIssue
from records.decode import iter_batch_entries
from records.errors import CorruptBatchError, RecordsError
from records.jsonl import read_jsonl_file
from records.model import LogEntry

AVRO_MAGIC = b"Obj\x01"
FORMATS = ("segment", "snapshot", "directory", "dump-log", "jsonl", "avro")


@dataclass
class ReadReport:
    """What a read noticed besides the records: skipped files, partial tails, skipped batches."""

    notes: list[str] = field(default_factory=list)
    issues: list[BatchIssue] = field(default_factory=list)
    cluster_id: str | None = None

    def add_issue(self, issue: BatchIssue) -> None:
        self.issues.append(issue)
        self.notes.append(issue.message)


@dataclass(frozen=True)
class ReadOptions:
    skip_corrupt: bool = False
    cluster_id: str | None = None


def detect_format(path: Path) -> str:
    """Which kind of input ``path`` is, by name first and content when the name says nothing."""
    if not path.exists():
        raise RecordsError(f"{path}: no such file or directory")
    if path.is_dir():
        return "directory"
    kind = log_dir.classify(path).kind
    if kind == "segment":
        return "segment"
    if kind in ("snapshot", "bootstrap"):
        return "snapshot"
    if kind == "producer-state":
        raise RecordsError(
            f"{path}: this is a Kafka producer-state snapshot (*.snapshot), not metadata; KRaft "
            "metadata snapshots end in .checkpoint. Point kraft-replay at the .log segments, a "
            ".checkpoint file or the __cluster_metadata-0 directory instead.")
    with path.open("rb") as stream:
        head = stream.read(4096)
    if head.startswith(AVRO_MAGIC):
        return "avro"
    text = head.decode("utf-8", errors="replace")
    first = text.lstrip()
    if first.startswith("{"):
        return "jsonl"
    if dumplog.looks_like_dump_log(text.splitlines()[:20]):
        return "dump-log"
    if len(head) >= 17 and head[16] == 2:  # magic byte of a v2 record batch
        return "segment"
    raise RecordsError(
        f"{path}: not a format kraft-replay reads (expected a .log segment, a .checkpoint "
        "snapshot, a __cluster_metadata-0 directory, kafka-dump-log output, JSON lines or an "
        "Avro container file)")


@dataclass
class _OffsetGuard:
    """Offsets only grow in a log; the base offset is outside the CRC, so a flipped bit there is
    only caught by this check (Kafka's DumpLogSegments reports the same as non-consecutive offsets)."""

    next_offset: int = 0

    def admit(self, base_offset: int, last_offset: int, source: str, position: int, options: ReadOptions,
              report: ReadReport) -> bool:
        """Whether the batch at ``position`` of ``source`` (offsets ``base_offset`` to ``last_offset``)
        may be read; a batch going backwards raises, or is reported and skipped with skip_corrupt."""
        if base_offset >= self.next_offset:
            self.next_offset = last_offset + 1
            return True
        error = CorruptBatchError(
            f"base offset {base_offset} goes backwards (expected at least {self.next_offset}); "
            "offsets in a log only grow", source=source, position=position, base_offset=base_offset)
        if not options.skip_corrupt:
            raise error
        report.add_issue(BatchIssue("skipped-corrupt", source, position, base_offset, str(error), error))
        return False


def _directory_segments(path: Path, options: ReadOptions,
                        report: ReadReport) -> tuple[list[tuple[Path, bool]], str | None]:
    """The segments of a log directory in order, each with whether it is the last, and the cluster id;
    what is not read is noted in the report."""
    layout = log_dir.discover(path)
    cluster_id = options.cluster_id or layout.cluster_id
    report.cluster_id = cluster_id
    for skipped, why in layout.skipped:
        report.notes.append(f"{skipped}: {why}")
    for snapshot in layout.snapshots:
        report.notes.append(
            f"{snapshot.path}: snapshot at end offset {snapshot.snapshot_end_offset} (epoch "
            f"{snapshot.snapshot_epoch}) not part of the log's offsets; read it on its own")
    if layout.bootstrap is not None:
        report.notes.append(f"{layout.bootstrap.path}: bootstrap snapshot, not part of the log's "
                            "offsets; read it on its own")
    if not layout.segments:
        raise RecordsError(f"{path}: no log segments (*.log) found; expected a "
                           "__cluster_metadata-0 directory or the Kafka data directory holding it")
    last = len(layout.segments) - 1
    return [(segment.path, index == last) for index, segment in enumerate(layout.segments)], cluster_id


def _batch_entries(segments: list[tuple[Path, bool]], options: ReadOptions, report: ReadReport,
                   cluster_id: str | None) -> Iterator[Iterable[LogEntry]]:
    """The entries of the segments' batches, a batch at a time, offsets checked across the segments.

    A batch at a time, so that read_entries is the only generator each entry passes through (every
    generator level costs time per entry)."""
    guard = _OffsetGuard()
    for path, is_last_segment in segments:
        source = str(path)
        with path.open("rb") as stream:
            for base_offset, last_offset, position, entries in iter_batch_entries(
                    stream, source=source, is_last_segment=is_last_segment, skip_corrupt=options.skip_corrupt,
                    on_issue=report.add_issue, cluster_id=cluster_id):
                if guard.admit(base_offset, last_offset, source, position, options, report):
                    yield entries


def read_entries(path: Path, options: ReadOptions | None = None,
                 report: ReadReport | None = None, fmt: str | None = None) -> Iterator[LogEntry]:
    """Stream the entries of any supported input; ``fmt`` overrides auto-detection."""
    options = options or ReadOptions()
    report = report if report is not None else ReadReport()
    kind = fmt or detect_format(path)
    if kind not in FORMATS:
        raise RecordsError(f"unknown input format {kind!r} (expected one of {', '.join(FORMATS)})")
    report.cluster_id = options.cluster_id
    if kind == "directory":
        segments, cluster_id = _directory_segments(path, options, report)
        for entries in _batch_entries(segments, options, report, cluster_id):
            yield from entries
    elif kind in ("segment", "snapshot"):
        for entries in _batch_entries([(path, True)], options, report, options.cluster_id):
            yield from entries
    elif kind == "jsonl":
        yield from read_jsonl_file(path)
    elif kind == "avro":
        yield from read_container(path)
    else:
        skipped: list[dumplog.SkippedRecord] = []
        try:
            with path.open("r", encoding="utf-8", errors="strict") as stream:
                yield from dumplog.read_dump_log(stream, str(path), cluster_id=options.cluster_id,
                                                 skip_unparsable=options.skip_corrupt, skipped=skipped)
        finally:
            report.notes.extend(str(item) for item in skipped)
