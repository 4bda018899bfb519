"""The answer of `state`, from whichever path serves it: the JVM-free one (``replay.query.light_state``: delta-rs
reads of a local lake) or Spark's (``replay.query.state.state_at``, ``replay.query.image.image_at``). Both give the
same rows in the same order and the same Kafka JSON; ``light_path_serves`` says which one answers.

    from replay import state_answer

    answer = state_answer("./kraft-lake", offset=4925)
    [row["leader"] for row in answer.rows("partitions")]

pyspark is imported only when Spark answers.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from replay.query.rules import NamedRow

QUERY_PATH_ENV = "KRAFT_REPLAY_QUERY_PATH"  # "spark": never the JVM-free path (`state`, `history`)
SPARK_PATH = "spark"

# A section's Kafka JSON items: (section, its fields as (column, Kafka name)) → one JSON object per item.
JsonItems = Callable[[str, tuple[tuple[str, str], ...]], Iterator[str]]


@dataclass(frozen=True)
class StateAnswer:
    """The cluster as of ``offset``, from either path: each section's rows (mappings or Spark rows, sorted) and
    Kafka JSON items, the log's record at the offset, and the controller's states (Spark only, when asked).
    Each is read on the first question about it."""

    cluster: str
    offset: int
    log_record: Callable[[], tuple[bool, NamedRow | None]]  # whether the lake keeps a log; its row at the offset
    rows: Callable[[str], Iterable[Any]]
    json: JsonItems
    machine_rows: Callable[[], tuple[Iterable[Any], Iterable[Any]]] | None = None  # partitions', replicas'
    machine_json: Callable[[], dict[str, Iterator[str]]] | None = None  # partitionStates, replicaStates


def light_path_serves(lake: str | None, master: str | None = None, remote: str | None = None) -> bool:
    """Whether `state` and a partition's `history` may skip Spark: a lake in a local directory, no Spark
    asked for (``--master``, ``--remote``, their environment, ``KRAFT_REPLAY_ENGINE=delta-spark``) nor
    ``KRAFT_REPLAY_QUERY_PATH=spark``."""
    from lakehouse import light_reader as reader
    asked = {name: os.environ.get(name, "").strip().lower() for name in (QUERY_PATH_ENV, reader.ENGINE_ENV)}
    forced = asked[QUERY_PATH_ENV] == SPARK_PATH or asked[reader.ENGINE_ENV] == reader.DELTA_SPARK
    elsewhere = master or remote or os.environ.get(reader.SPARK_REMOTE_ENV) or os.environ.get(reader.SPARK_MASTER_ENV)
    return not forced and not elsewhere and reader.is_local(reader.resolve_lake_root(lake))


def default_session(master: str | None, remote: str | None) -> Callable[[], SparkSession]:
    """The session of ``master``/``remote`` (``lakehouse.spark.get_spark``), started when first asked for."""

    def session() -> SparkSession:
        from lakehouse.spark import SparkOptions, get_spark

        return get_spark(SparkOptions(master=master, remote=remote))

    return session


def state_answer(lake: str | None, offset: int | None = None, time: str | None = None, *,
                 sections: tuple[str, ...] | None = None, cluster_id: str | None = None, topic: str | None = None,
                 partition: int | None = None, batch_aligned: bool = False, states: bool = False,
                 partition_columns: tuple[str, ...] | None = None, master: str | None = None,
                 remote: str | None = None, spark: Callable[[], SparkSession] | None = None) -> StateAnswer:
    """The cluster in ``lake`` as of ``offset`` or ``time`` (``batch_aligned``: the end of its batch), narrowed to
    ``topic``/``partition``: without a JVM when ``light_path_serves`` and no controller ``states`` are asked,
    else through Spark (``spark``: how to start it, default ``master``/``remote``'s session). ``sections``: the
    ones the JVM-free path reads (default all); ``partition_columns``: the only partition columns it needs to read
    (default all)."""
    if not states and light_path_serves(lake, master, remote):
        return _light_answer(lake, offset, time, batch_aligned, sections, cluster_id, topic, partition,
                             partition_columns)
    return _spark_answer((spark or default_session(master, remote))(), lake, offset, time, batch_aligned,
                         cluster_id, topic, partition, states)


def _light_answer(lake: str | None, offset: int | None, time: str | None, batch_aligned: bool,
                  sections: tuple[str, ...] | None, cluster_id: str | None, topic: str | None, partition: int | None,
                  partition_columns: tuple[str, ...] | None) -> StateAnswer:
    """The answer of ``replay.query.light_state``: delta-rs reads, no JVM."""
    from lakehouse.light_reader import resolve_lake_root
    from replay.query.image_sections import PARTS
    from replay.query.light_state import CLUSTER_TABLES, kafka_json_items, light_state

    columns = {} if partition_columns is None else {"partitions": partition_columns}
    found = light_state(resolve_lake_root(lake), offset, sections or (*CLUSTER_TABLES, *PARTS), cluster_id, topic,
                        partition, columns, time, batch_aligned)
    return StateAnswer(found.cluster_id, found.offset, lambda: (found.has_log, found.record), found.rows,
                       lambda section, fields: kafka_json_items(found.sections[section], fields))


def _spark_answer(spark: SparkSession, lake: str | None, offset: int | None, time: str | None, batch_aligned: bool,
                  cluster_id: str | None, topic: str | None, partition: int | None, states: bool) -> StateAnswer:
    """The answer of ``replay.query.state.state_at`` and ``replay.query.image.image_at``: lazy DataFrames."""
    from lakehouse.lake import Lake
    from lakehouse.tables import METADATA_LOG
    from replay.query.controller_states import machine_states_at, machine_states_json
    from replay.query.image import image_at
    from replay.query.log_offsets import record_at
    from replay.query.rules import narrowed_sql
    from replay.query.state import json_items, state_at

    target = Lake(lake)
    snapshot = state_at(spark, target, offset=offset, time=time, cluster_id=cluster_id, batch_aligned=batch_aligned)
    shown = snapshot.only(topic, partition)
    cluster = snapshot.cluster_id or ""
    frames: dict[str, DataFrame] = {"brokers": snapshot.brokers, "topics": shown.topics,
                                    "partitions": shown.partitions}

    def log_record() -> tuple[bool, NamedRow | None]:
        has_log = target.table_exists(METADATA_LOG)
        return has_log, record_at(spark, target, cluster, snapshot.offset) if has_log else None

    def frame(section: str) -> DataFrame:
        if section not in frames:  # the image's parts: loaded on the first question about one
            frames.update(image_at(spark, target, cluster, snapshot.offset))
            where = narrowed_sql("configs", topic, partition)
            if where is not None:
                frames["configs"] = frames["configs"].where(where)
        return frames[section]

    def machines() -> tuple[DataFrame, DataFrame]:
        return machine_states_at(spark, target, cluster, snapshot.offset, topic, partition)

    def machine_rows() -> tuple[Iterable[Any], Iterable[Any]]:
        partitions, replicas = machines()
        return list(partitions.toLocalIterator()), list(replicas.toLocalIterator())

    return StateAnswer(
        cluster, snapshot.offset, log_record,
        lambda section: frame(section).toLocalIterator(), lambda section, fields: json_items(frame(section), fields),
        machine_rows if states else None, (lambda: machine_states_json(*machines())) if states else None)


__all__ = ["QUERY_PATH_ENV", "SPARK_PATH", "StateAnswer", "default_session", "light_path_serves", "state_answer"]
