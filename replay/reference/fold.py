"""The reference replay: a plain, record-by-record, in-memory fold of a KRaft metadata log.

It is the oracle the Spark replay is tested against, and the naive alternative of the benchmark:
no cleverness, one Python dict per entity kind, Kafka's rules applied in log order as Kafka's
``MetadataLoader``/``MetadataDelta`` apply them:

- ``fold`` walks the log and yields a :class:`Commit` every time something becomes *visible*: each
  record outside a metadata transaction at its own offset; the records of a transaction (KIP-868)
  together at its ``EndTransactionRecord`` (an ``AbortTransactionRecord`` discards them, and a
  transaction still open when the input ends never becomes visible). A transaction's records are
  applied, in order, at the End, so refusals are judged against the state at that point.
- ``reference_histories`` turns those commits into the history tables (``partition_history``,
  ``broker_history``, ... , ``replay_anomalies``) with the columns of the Spark replay.
- ``image_at`` is the state after every record up to and including an offset, for spot checks: the whole image,
  the parts ``replay.reference.image_parts_delta`` adds included.

Applying one record (Kafka's ``MetadataDelta.replay``) and the image it applies to are
``replay.reference.metadata_delta``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from lakehouse.tables import (
    BROKER_HISTORY,
    CONTROLLER_HISTORY,
    FEATURE_HISTORY,
    PARTITION_HISTORY,
    REPLAY_ANOMALIES,
    REPLICA_HISTORY,
    TOPIC_HISTORY,
)
from records.kafka_constants import ABORT, BEGIN, END
from records.model import LogEntry, MetadataRecord, RawRecord
from replay.core.coverage import SnapshotId
from replay.core.image_parts import WHOLE_PARTS
from replay.core.refusals import BEGIN_INSIDE_TRANSACTION, MARKER_WITHOUT_TRANSACTION
from replay.reference.image import Anomaly, Changes, Image
from replay.reference.image_parts_delta import Cause
from replay.reference.metadata_delta import MetadataDelta
from replay.reference.rows import (
    PART_ROWS,
    broker_values,
    controller_values,
    feature_level,
    partition_invariants,
    partition_values,
    replica_values,
)

# the image's parts folded on their own (replay.reference.image_parts_delta), in the contract's tables
# (lakehouse.tables.IMAGE_SCHEMAS)
IMAGE_PART_TABLES = tuple(part.table for part in WHOLE_PARTS)
TABLES = (PARTITION_HISTORY, BROKER_HISTORY, TOPIC_HISTORY, FEATURE_HISTORY, CONTROLLER_HISTORY,
          REPLICA_HISTORY, *IMAGE_PART_TABLES, REPLAY_ANOMALIES)
VERSION_COLUMNS = ("valid_from_offset", "valid_to_offset", "valid_from_time_ms", "valid_to_time_ms",
                   "cause_offset", "cause_type")
ANOMALY_COLUMNS = ("cluster_id", "offset", "record_type", "kind", "reason")
# A snapshot the fold starts from: its end offset and its records (or entries, which carry secrets' fingerprints)
BaseSnapshot = tuple[int, Sequence[MetadataRecord] | Sequence[LogEntry]]


@dataclass
class Commit:
    """One visibility point: the image right after it (live: valid until the fold moves on)."""

    offset: int
    time_ms: int | None
    image: Image
    changes: Changes



# --- Visibility (Kafka's MetadataBatchLoader) ----------------------------------------------------


def fold(entries: Iterable[LogEntry], base_snapshot: BaseSnapshot | None = None) -> Iterator[Commit]:
    """Every visibility point of the log, in offset order; ``commit.image`` is the live image. ``base_snapshot``:
    (end offset, its records or entries: an entry keeps its secret's fingerprint, as the lake does)."""
    delta = MetadataDelta()
    start = None
    if base_snapshot is not None:
        end_offset, records = base_snapshot
        start = end_offset
        changes = Changes()
        for item in records:
            entry = item if isinstance(item, LogEntry) else LogEntry(offset=end_offset - 1, record=item)
            if isinstance(entry.record, MetadataRecord) and not entry.record.is_control:
                delta.replay(replace(entry, offset=end_offset - 1), changes)
        yield Commit(end_offset - 1, None, delta.image, changes)
    pending: list[LogEntry] | None = None  # the records of the open transaction, None outside one
    for entry in entries:
        if start is not None and entry.offset < start:
            continue
        record = entry.record
        if isinstance(record, RawRecord) or record.is_control:
            continue
        kind = record.type_name
        if kind == BEGIN:
            if pending is not None:  # Kafka faults and stays in the transaction
                yield _only_anomaly(entry, delta, BEGIN_INSIDE_TRANSACTION)
            else:
                pending = []
        elif kind in (END, ABORT):
            if pending is None:
                yield _only_anomaly(entry, delta, MARKER_WITHOUT_TRANSACTION.format(record_type=kind))
                continue
            changes = Changes()
            if kind == END:
                for held in pending:
                    delta.replay(held, changes)
            pending = None
            yield Commit(entry.offset, entry.append_time_ms, delta.image, changes)
        elif pending is not None:
            pending.append(entry)
        else:
            changes = Changes()
            delta.replay(entry, changes)
            yield Commit(entry.offset, entry.append_time_ms, delta.image, changes)


def _only_anomaly(entry: LogEntry, delta: MetadataDelta, reason: str) -> Commit:
    changes = Changes(anomalies=[Anomaly(entry.offset, entry.record.type_name, "refused", reason)])
    return Commit(entry.offset, entry.append_time_ms, delta.image, changes)


def image_at(entries: Iterable[LogEntry], offset: int, base_snapshot: BaseSnapshot | None = None) -> Image:
    """The image after every record up to and including ``offset`` (a transaction still open there
    is not visible)."""
    image = Image()
    for commit in fold((e for e in entries if e.offset <= offset), base_snapshot):
        image = commit.image
    return image.copy()


# --- History tables ------------------------------------------------------------------------------


class _Table:
    """Versions of one entity kind: a new row when the values change (or when forced)."""

    def __init__(self, cluster_id: str) -> None:
        self.cluster_id = cluster_id
        self.rows: list[dict[str, Any]] = []
        self.open: dict[Any, dict[str, Any]] = {}

    def put(self, key: Any, values: dict[str, Any] | None, commit: Commit, cause: Cause, force: bool = False,
            ) -> bool:
        """Set the entity's state at ``commit`` (``None``: gone); True if a version opened or closed."""
        current = self.open.get(key)
        if current is not None:
            if values is not None and not force and all(current[k] == v for k, v in values.items()):
                return False
            current["valid_to_offset"] = commit.offset
            current["valid_to_time_ms"] = commit.time_ms
            del self.open[key]
        if values is None:
            return current is not None
        row = {"cluster_id": self.cluster_id, **values, "valid_from_offset": commit.offset, "valid_to_offset": None,
               "valid_from_time_ms": commit.time_ms, "valid_to_time_ms": None,
               "cause_offset": cause[0], "cause_type": cause[1]}
        self.rows.append(row)
        self.open[key] = row
        return True


class HistoryBuilder:
    """Consumes commits and keeps every table's versions."""

    def __init__(self, cluster_id: str) -> None:
        self.cluster_id = cluster_id
        self.partitions = _Table(cluster_id)
        self.brokers = _Table(cluster_id)
        self.topics = _Table(cluster_id)
        self.features = _Table(cluster_id)
        self.controllers = _Table(cluster_id)
        self.replicas = _Table(cluster_id)
        # the other image parts: a new version only when the values change (a record may restate them)
        self.parts = {name: _Table(cluster_id) for name in IMAGE_PART_TABLES}
        self.anomalies: list[dict[str, Any]] = []
        # open replica rows, indexed both ways, to find the rows a partition or broker change may end
        self.open_by_partition: dict[tuple[str, int], set[int]] = {}
        self.open_by_broker: dict[int, set[tuple[str, int]]] = {}

    def add(self, commit: Commit) -> None:
        image, changes = commit.image, commit.changes
        for anomaly in changes.anomalies:
            self.anomalies.append({"cluster_id": self.cluster_id, "offset": anomaly.offset,
                                   "record_type": anomaly.record_type, "kind": anomaly.kind,
                                   "reason": anomaly.reason})
        for tid, cause in changes.topics.items():
            name = image.topics.get(tid)
            values = None if name is None else {"topic_id": tid, "name": name}
            self.topics.put(tid, values, commit, cause, force=tid in changes.registered_topics)
        for fname, cause in changes.features.items():
            level = feature_level(image, fname)
            self.features.put(fname, None if level is None else {"feature": fname, "level": level}, commit, cause)
        for cid, cause in changes.controllers.items():
            controller = image.controllers.get(cid)
            self.controllers.put(cid, None if controller is None else controller_values(controller), commit, cause,
                                 force=True)
        for bid, cause in changes.brokers.items():
            broker = image.brokers.get(bid)
            self.brokers.put(bid, None if broker is None else broker_values(broker), commit, cause,
                             force=bid in changes.registered_brokers)
        for key, cause in changes.partitions.items():
            partition = image.partitions.get(key)
            values = None if partition is None else partition_values(image, partition)
            opened = self.partitions.put(key, values, commit, cause, force=True)
            if partition is not None and opened:
                for problem in partition_invariants(partition):
                    self.anomalies.append({"cluster_id": self.cluster_id, "offset": cause[0],
                                           "record_type": cause[1], "kind": "invariant", "reason": problem})
        self._replicas(commit)
        self._image_parts(commit)

    def _image_parts(self, commit: Commit) -> None:
        for part in WHOLE_PARTS:
            rows, table = PART_ROWS[part.section], self.parts[part.table]
            for key, cause in rows.touched(commit.changes).items():
                table.put(key, rows.values(commit.image, key), commit, cause)

    def _replicas(self, commit: Commit) -> None:
        image, changes = commit.image, commit.changes
        candidates: dict[tuple[tuple[str, int], int], Cause] = {}

        def consider(key: tuple[str, int], bid: int, cause: Cause) -> None:
            known = candidates.get((key, bid))
            candidates[(key, bid)] = cause if known is None or cause[0] > known[0] else known

        for key, cause in changes.partitions.items():
            partition = image.partitions.get(key)
            for bid in (partition.replicas if partition is not None else ()):
                consider(key, bid, cause)
            for bid in self.open_by_partition.get(key, ()):
                consider(key, bid, cause)
        if changes.brokers:
            for key, partition in image.partitions.items():
                for bid in partition.replicas:
                    if bid in changes.brokers:
                        consider(key, bid, changes.brokers[bid])
            for bid, cause in changes.brokers.items():
                for key in self.open_by_broker.get(bid, ()):
                    consider(key, bid, cause)
        for (key, bid), cause in sorted(candidates.items()):
            values = replica_values(image, key, bid)
            self.replicas.put((key, bid), values, commit, cause)
            if values is None:
                self.open_by_partition.get(key, set()).discard(bid)
                self.open_by_broker.get(bid, set()).discard(key)
            else:
                self.open_by_partition.setdefault(key, set()).add(bid)
                self.open_by_broker.setdefault(bid, set()).add(key)

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        return {PARTITION_HISTORY: self.partitions.rows, BROKER_HISTORY: self.brokers.rows,
                TOPIC_HISTORY: self.topics.rows, FEATURE_HISTORY: self.features.rows,
                CONTROLLER_HISTORY: self.controllers.rows, REPLICA_HISTORY: self.replicas.rows,
                **{name: table.rows for name, table in self.parts.items()}, REPLAY_ANOMALIES: self.anomalies}


def reference_histories(entries: Iterable[LogEntry], cluster_id: str,
                        base_snapshot: BaseSnapshot | None = None, snapshot_epoch: int | None = None
                        ) -> dict[str, list[dict[str, Any]]]:
    """The history tables of the Spark replay, computed by folding the log record by record. ``snapshot_epoch``:
    the base snapshot's epoch, which names it as the cause of the versions it gave (``SnapshotId.cause``), as
    ``replay.store.runs`` writes them."""
    builder = HistoryBuilder(cluster_id)
    for commit in fold(entries, base_snapshot):
        builder.add(commit)
    tables = builder.tables()
    if base_snapshot is not None and snapshot_epoch is not None:
        base = SnapshotId(base_snapshot[0], snapshot_epoch)
        for rows in tables.values():
            for row in rows:
                if row.get("cause_offset") == base.image_offset:
                    row["cause_type"] = base.cause
    return tables


def current_rows(rows: Iterable[dict[str, Any]], offset: int) -> list[dict[str, Any]]:
    """The versions of a history table that are valid at ``offset``."""
    return [r for r in rows if r["valid_from_offset"] <= offset
            and (r["valid_to_offset"] is None or offset < r["valid_to_offset"])]
