"""Which offsets a cluster's history answers, and from which base: the stored log's runs and its snapshots.

A KRaft node that has run for a while no longer holds its metadata log from offset 0: once a snapshot exists,
Kafka advances the log start offset to the snapshot's end offset and deletes the segments below it. A snapshot
``NNN-EEE.checkpoint`` (Kafka's ``OffsetAndEpoch``: end offset N, epoch E) holds the whole image as of N - 1, and
the log folded forward from N gives every later image. So the history of a cluster starts at its **base**:

- the stored log's *runs* are its stretches of consecutive offsets (what the lake holds: an archived copy of the
  older segments ingested beside the current directory extends a run back);
- walking back from the last run: a run that starts at offset 0 needs no snapshot; else the earliest stored
  snapshot whose end offset lies in the run (``first <= N <= last + 1``; Kafka's log starts at such an N) is the
  base, and the history starts at N - 1; a run holding no snapshot is folded together with the run before it,
  across the gap between them (the gap's offsets are not answered); the first run without either starts the
  history at its first offset with no base (its image before that offset is unknown: said in the replay's note);
- a snapshot ahead of the whole log (end offset past the last stored offset + 1) is the image the node loaded
  last: it is the base, and the history is that one image;
- every later stored snapshot inside the history is a check: the fold's image at its N - 1 must be its image
  (``replay.store.snapshot_checks``).

Offsets before the history's first offset, or inside a gap, get a clear answer (:meth:`ClusterCoverage.outside`)
instead of an empty cluster. Nothing here imports Spark: the questions (``replay.query.rules``) read it too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

SNAPSHOT_CAUSE = "snapshot "  # the cause_type of a version a base snapshot gave, before the snapshot's name


@dataclass(frozen=True, order=True)
class SnapshotId:
    """A snapshot as Kafka names it (``OffsetAndEpoch``): it holds the image as of ``end_offset - 1``."""

    end_offset: int
    epoch: int

    @property
    def stem(self) -> str:
        """Kafka's file name without ``.checkpoint``: ``00000000000000128356-0000000020``."""
        return f"{self.end_offset:020d}-{self.epoch:010d}"

    @property
    def file_name(self) -> str:
        return f"{self.stem}.checkpoint"

    @property
    def cause(self) -> str:
        """The ``cause_type`` of the versions this snapshot gave as the base of a history."""
        return SNAPSHOT_CAUSE + self.stem

    @property
    def image_offset(self) -> int:
        """The offset whose image the snapshot holds."""
        return self.end_offset - 1


@dataclass(frozen=True, order=True)
class LogRun:
    """Consecutive stored offsets ``first..last`` (both included); also a gap's missing offsets."""

    first: int
    last: int

    def holds(self, offset: int) -> bool:
        return self.first <= offset <= self.last


@dataclass(frozen=True)
class ClusterCoverage:
    """What the history of one cluster answers: offsets ``first_offset..last_offset`` but its ``gaps``."""

    cluster_id: str
    first_offset: int  # the first offset answered: the base's image offset, else the first folded log offset
    last_offset: int
    log_first_offset: int  # the first log offset folded (the base's end offset, or the run's first offset)
    base: SnapshotId | None  # None: folded from the log alone (from offset 0, or with no snapshot to start from)
    gaps: tuple[LogRun, ...] = ()  # offsets missing from the stored log inside the history (folded across)
    checks: tuple[SnapshotId, ...] = ()  # later snapshots inside the history: the fold's image checked at each
    stored_first_offset: int = 0  # the first offset the lake's log holds (before the history when a gap cut it)

    @property
    def complete(self) -> bool:
        """Whether the history starts from a whole image: offset 0 or a snapshot."""
        return self.base is not None or self.log_first_offset == 0

    def outside(self, offset: int) -> str | None:
        """Why the history does not answer ``offset`` (None: it does)."""
        if offset < self.first_offset:
            return f"offset {offset} is before this lake's history ({self.start_text()})"
        for gap in self.gaps:
            if gap.holds(offset):
                return (f"offset {offset} is in a gap of this lake's log: offsets {gap.first}..{gap.last} were never "
                        f"stored ({self.start_text()})")
        return None

    def start_text(self) -> str:
        """Where the history starts, in words: ``its log starts at 128356, from the snapshot ending at 128355``."""
        if self.base is not None:
            return f"its log starts at {self.log_first_offset}, from the snapshot ending at {self.base.image_offset}"
        if self.complete:
            return "its log starts at offset 0"
        return f"its log starts at {self.log_first_offset} and no stored snapshot reaches further back"

    def note(self) -> str:
        """The replay's note: the base the history starts from."""
        if self.base is not None:
            text = (f"{self.cluster_id}: history from offset {self.first_offset}: the snapshot {self.base.stem} "
                    f"(image at {self.base.image_offset}), then the log from {self.log_first_offset}")
        elif self.complete:
            text = f"{self.cluster_id}: history from offset 0: the whole log"
        else:
            text = (f"{self.cluster_id}: log starts at offset {self.log_first_offset} and no stored snapshot reaches "
                    "it: replayed from there (the image before it is unknown)")
        if self.stored_first_offset < self.first_offset:
            text += (f"; stored offsets {self.stored_first_offset}..{self.first_offset - 1} are before it (a gap or "
                     "a later snapshot separates them)")
        for gap in self.gaps:
            text += f"; offsets {gap.first}..{gap.last} are missing: folded across, not answered"
        return text

    def row(self, checked: int, differing: int) -> dict[str, Any]:
        """The cluster's row of ``replay_coverage``."""
        return {"cluster_id": self.cluster_id, "first_offset": self.first_offset, "last_offset": self.last_offset,
                "log_first_offset": self.log_first_offset,
                "base_snapshot": None if self.base is None else self.base.stem,
                "base_end_offset": None if self.base is None else self.base.end_offset,
                "gaps": [{"first_offset": gap.first, "last_offset": gap.last} for gap in self.gaps],
                "stored_first_offset": self.stored_first_offset,
                "snapshots_checked": checked, "snapshots_differing": differing}

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> ClusterCoverage:
        """A ``replay_coverage`` row back (what the questions read)."""
        base = None
        if row["base_snapshot"] is not None:
            end, epoch = row["base_snapshot"].split("-")
            base = SnapshotId(int(end), int(epoch))
        return cls(row["cluster_id"], int(row["first_offset"]), int(row["last_offset"]),
                   int(row["log_first_offset"]), base,
                   tuple(LogRun(int(g["first_offset"]), int(g["last_offset"])) for g in row["gaps"] or ()),
                   stored_first_offset=int(row["stored_first_offset"]))


def runs_of(first: int, last: int, gaps: Iterable[tuple[int, int]]) -> list[LogRun]:
    """The runs of offsets ``first..last`` less the missing ``gaps`` (first, last missing offset)."""
    runs, start = [], first
    for gap_first, gap_last in sorted(gaps):
        runs.append(LogRun(start, gap_first - 1))
        start = gap_last + 1
    runs.append(LogRun(start, last))
    return runs


def history_coverage(cluster_id: str, runs: list[LogRun], snapshots: Iterable[SnapshotId]) -> ClusterCoverage:
    """The history of one cluster: its base and what it answers (the rule in the module's docstring)."""
    stored = sorted(set(snapshots))
    if not runs:
        if not stored:
            raise ValueError(f"cluster {cluster_id}: neither log records nor snapshots")
        only = _latest(stored, stored[-1].end_offset)
        return ClusterCoverage(cluster_id, only.image_offset, only.image_offset, only.end_offset, only,
                               stored_first_offset=only.end_offset)
    runs = sorted(runs)
    ahead = [s for s in stored if s.end_offset > runs[-1].last + 1]
    if ahead:
        loaded = _latest(ahead, ahead[-1].end_offset)
        return ClusterCoverage(cluster_id, loaded.image_offset, loaded.image_offset, loaded.end_offset, loaded,
                               stored_first_offset=runs[0].first)
    gaps: list[LogRun] = []
    index = len(runs) - 1
    while True:
        run = runs[index]
        inside = [s.end_offset for s in stored if run.first <= s.end_offset <= run.last + 1]
        if run.first == 0 or inside or index == 0:
            break
        gaps.insert(0, LogRun(runs[index - 1].last + 1, run.first - 1))
        index -= 1
    base = None if run.first == 0 or not inside else _latest(stored, min(inside))
    first = run.first if base is None else base.image_offset
    log_first = run.first if base is None else base.end_offset
    checks = tuple(s for s in stored if s != base and first <= s.image_offset <= runs[-1].last
                   and not any(gap.holds(s.image_offset) for gap in gaps))
    return ClusterCoverage(cluster_id, first, runs[-1].last, log_first, base, tuple(gaps), checks,
                           stored_first_offset=runs[0].first)


def _latest(snapshots: list[SnapshotId], end_offset: int) -> SnapshotId:
    """The snapshot of end offset ``end_offset`` with the highest epoch (a new leader may write the same offset)."""
    return max(s for s in snapshots if s.end_offset == end_offset)


__all__ = ["SNAPSHOT_CAUSE", "ClusterCoverage", "LogRun", "SnapshotId", "history_coverage", "runs_of"]
