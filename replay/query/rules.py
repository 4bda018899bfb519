"""What a question to the replayed lake means, without Spark: the "as of offset N" rule, the Kafka JSON names and
sort orders of the answers, the choice of a cluster and the error texts.

``replay.query.state`` (the Spark path) and ``replay.query.light_state`` (the JVM-free path of a fresh ``state``) both
read these, so the two paths cannot drift apart; importing this module loads no pyspark (it costs seconds).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from lakehouse.tables import METADATA_LOG, REPLAY_CHECKPOINTS
from records.kafka_constants import CONFIG_RESOURCE_TOPIC
from records.vocabulary import fields, kafka_name
from replay.core.cells import iso_ms
from replay.core.coverage import ClusterCoverage

# ``state --states --format json`` names a state's first offset as the table's SINCE column does.
MACHINE_STATE_NAMES = {"valid_from_offset": "since"}
# The broker columns in Kafka's names as RegisterBrokerRecord has them (``endpoints`` is ``endPoints``), and the
# columns that hold Kafka structs (endpoints, features, a client quota's entity) with their members' Kafka names: all
# from the vocabulary. (So a column named one of these must hold that list wherever ``kafka_struct`` reads it.)
BROKER_NAMES = {definition.column: definition.kafka_name for definition in fields()["RegisterBrokerRecord"]}
NESTED = {definition.column: definition.nested
          for definition in (*fields()["RegisterBrokerRecord"], *fields()["ClientQuotaRecord"]) if definition.nested}


def kafka_fields(*columns: str, names: dict[str, str] | None = None) -> tuple[tuple[str, str], ...]:
    """Each column with its Kafka JSON name, in output order: the vocabulary's (``records.vocabulary``), or
    ``names`` where an output names a column its own way (``MACHINE_STATE_NAMES``)."""
    renamed = {**BROKER_NAMES, **(names or {})}
    return tuple((column, renamed.get(column, kafka_name(column))) for column in columns)


BROKER_FIELDS = kafka_fields("broker_id", "broker_epoch", "incarnation_id", "fenced", "in_controlled_shutdown",
                             "rack", "endpoints", "features", "log_dirs", "is_migrating_zk_broker")
TOPIC_FIELDS = kafka_fields("topic_id", "name")
PARTITION_FIELDS = kafka_fields("topic_id", "topic_name", "partition_id", "leader", "leader_epoch",
                                "partition_epoch", "replicas", "isr", "adding_replicas", "removing_replicas",
                                "eligible_leader_replicas", "last_known_elr", "leader_recovery_state", "directories")
# Sort order of each entity in answers (deterministic: the keys are unique in a state).
BROKER_ORDER = ("broker_id",)
TOPIC_ORDER = ("name", "topic_id")
PARTITION_ORDER = ("topic_name", "partition_id", "topic_id")
# One partition's versions, oldest first (a name deleted and made again: the topic ids side by side).
VERSION_ORDER = ("valid_from_offset", "topic_id")


class NamedRow(Protocol):
    """A row read by column name: a Spark ``Row`` or a JVM-free ``ColumnRow``."""

    def __getitem__(self, name: str) -> Any: ...


class QueryError(ValueError):
    """A question the lake cannot answer as asked: unknown cluster, offset or time outside the log, …"""


class OutsideHistory(QueryError):
    """An offset the cluster's history does not answer: before its base, or in a gap of the stored log
    (``replay.core.coverage``). Not an empty cluster: the lake does not know the state there."""


def as_of_sql(offset: int) -> str:
    """THE rule of the model, as SQL text both Spark (``F.expr``) and delta-rs's DataFusion read: the versions of a
    history table valid at ``offset``."""
    at = int(offset)
    return f"valid_from_offset <= {at} AND (valid_to_offset IS NULL OR valid_to_offset > {at})"


def sql_text(value: str) -> str:
    """A string literal both SQL dialects read the same (Kafka's names hold no backslash)."""
    return "'" + value.replace("'", "''") + "'"


def cluster_sql(cluster: str) -> str:
    """The rows of one cluster: every table of the lake holds several clusters' rows side by side."""
    return f"cluster_id = {sql_text(cluster)}"


# The column naming the topic in each section `state --topic T` narrows (configs: the TOPIC resource's name).
_TOPIC_COLUMNS = {"topics": "name", "partitions": "topic_name", "replicas": "topic_name", "configs": "resource_name"}
_PARTITION_SECTIONS = ("partitions", "replicas")


def narrowed_sql(section: str, topic: str | None, partition: int | None) -> str | None:
    """What `state --topic T --partition N` keeps of ``section``, as SQL (None: all of it)."""
    terms = []
    if topic is not None and section in _TOPIC_COLUMNS:
        terms.append(f"{_TOPIC_COLUMNS[section]} = {sql_text(topic)}")
        if section == "configs":
            terms.append(f"resource_type = {CONFIG_RESOURCE_TOPIC}")
    if partition is not None and section in _PARTITION_SECTIONS:
        terms.append(f"partition_id = {int(partition)}")
    return " AND ".join(terms) or None


def cluster_table(exists: Callable[[str], bool]) -> str:
    """The table whose ``cluster_id`` lists the lake's clusters: ``replay_checkpoints``, else ``metadata_log``."""
    return REPLAY_CHECKPOINTS if exists(REPLAY_CHECKPOINTS) else METADATA_LOG


def missing_table(root: str, name: str) -> QueryError:
    """The error of a question whose table the lake does not hold yet."""
    hint = "run `kraft-replay ingest` first" if name == METADATA_LOG else "run `kraft-replay replay` first"
    return QueryError(f"no table {name} in the lake at {root}: {hint}")


def pick_cluster(root: str, known: list[str], cluster_id: str | None) -> str:
    """``cluster_id`` when the lake has it (``known``: its clusters, sorted); without one, the lake's only
    cluster, else a clear error."""
    if cluster_id is not None:
        if cluster_id not in known:
            raise QueryError(f"cluster {cluster_id!r} is not in the lake at {root}; clusters: "
                             f"{', '.join(known) or 'none'}")
        return cluster_id
    if not known:
        raise QueryError(f"the lake at {root} holds no cluster yet: ingest and replay a log first")
    if len(known) > 1:
        raise QueryError(f"the lake holds {len(known)} clusters, pick one with --cluster-id / cluster_id=: "
                         f"{', '.join(known)}")
    return known[0]


# --- offsets and times ---------------------------------------------------------------------------


def parse_time(value: datetime | str) -> datetime:
    """A datetime or ISO-8601 text (``2026-01-30T17:23:55.232Z``, ``2026-01-30 17:23``); naive means UTC."""
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            value = datetime.fromisoformat(text)
        except ValueError:
            raise QueryError(f"cannot read {value!r} as an ISO-8601 time (e.g. 2026-01-30T17:23:55Z)") from None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def to_epoch_ms(value: datetime | str) -> int:
    moment = parse_time(value)
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)


class StoredLog(Protocol):
    """What resolving an offset asks of one cluster's ``metadata_log`` (Spark and delta-rs answer alike)."""

    def last_offset_until(self, millis: int) -> int | None:
        """The last offset appended at or before ``millis`` (None: none was)."""

    def first_append_time(self) -> int | None:
        """The append time of the cluster's first stored record."""

    def batch_of(self, offset: int) -> tuple[bool, int | None]:
        """Whether ``offset`` is stored, and the base offset of its record batch."""

    def last_offset_of_batch(self, base: int, offset: int) -> int | None:
        """The last stored offset at or after ``offset`` of the batch based at ``base``."""

    def coverage(self) -> ClusterCoverage | None:
        """What the cluster's history answers (its ``replay_coverage`` row; None for a lake replayed before it)."""


def resolved_offset(log: StoredLog, cluster_id: str, offset: int | None = None, time: datetime | str | None = None,
                    batch_aligned: bool = False) -> int:
    """The offset a question means: ``offset`` as given, or the last offset appended at or before ``time``;
    with ``batch_aligned``, moved to the last offset of the record batch that holds it."""
    if (offset is None) == (time is None):
        raise QueryError("give exactly one of an offset or a time")
    if time is not None:
        millis = to_epoch_ms(time)
        offset = log.last_offset_until(millis)
        if offset is None:
            first = log.first_append_time()
            raise QueryError(f"{iso_ms(millis)} is before the first record of cluster {cluster_id} "
                             f"(appended {'never' if first is None else iso_ms(first)})")
    assert offset is not None
    if offset < 0:
        raise QueryError(f"offset must be >= 0, not {offset}")
    covered = log.coverage()
    outside = None if covered is None else covered.outside(offset)
    if outside is not None:
        raise OutsideHistory(outside)
    if not batch_aligned:
        return int(offset)
    stored, base = log.batch_of(offset)
    if not stored:
        raise QueryError(f"offset {offset} is not in the metadata_log of cluster {cluster_id}: cannot align "
                         "it to its batch")
    if base is None:
        return int(offset)
    last = log.last_offset_of_batch(base, offset)
    return int(offset) if last is None else int(last)


__all__ = ["BROKER_FIELDS", "BROKER_NAMES", "BROKER_ORDER", "MACHINE_STATE_NAMES", "NESTED", "PARTITION_FIELDS",
           "PARTITION_ORDER", "TOPIC_FIELDS", "TOPIC_ORDER", "VERSION_ORDER", "OutsideHistory", "QueryError",
           "StoredLog", "as_of_sql", "cluster_sql", "cluster_table", "iso_ms", "kafka_fields", "missing_table",
           "narrowed_sql", "parse_time", "pick_cluster", "resolved_offset", "sql_text", "to_epoch_ms"]
