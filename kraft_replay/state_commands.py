"""`kraft-replay state`: the cluster as of an offset or a time, with the controller's state machines beside it
(``--states``); the rest of the image (configs, quotas, ACLs, SCRAM, tokens, producer ids, features, controllers)
through ``kraft_replay.image_commands``; which questions skip Spark (``light_path_serves``). ``history`` is in
``kraft_replay.history_commands``.

Register through ``kraft_replay.replay_commands.REPLAY_COMMANDS``. Exit codes as the rest of the CLI.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kraft_replay.image_commands import (
    ALL_SECTIONS,
    CLUSTER_SECTIONS,
    TOPIC_SECTIONS,
    image_json_sections,
    image_table_lines,
    parse_sections,
)
from kraft_replay.plumbing import (
    ClusterOption,
    FormatOption,
    LakeOption,
    MasterOption,
    OutputFormat,
    RemoteOption,
    echo_lines,
    query_command,
    spark_session,
    table_lines,
    usage_error,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from lakehouse.lake import Lake
    from replay.query.rules import NamedRow


def appended_note(has_log: bool, record: NamedRow | None) -> str:
    """`appended 2026-…Z` for an offset of the log (``record``: its row of ``metadata_log``), or a note that it
    lies beyond the log's end; nothing when the lake keeps no log."""
    from replay.query.rules import iso_ms

    if not has_log:
        return ""
    if record is None:
        return " (not an offset of the stored log: the state after the last offset before it)"
    return f" (appended {iso_ms(record['append_time_ms'])}, {record['record_type']})"


# --- state ---------------------------------------------------------------------------------------

STATE_EPILOG = ("Examples:\n\n"
                "  kraft-replay state --offset 4925\n\n"
                "  kraft-replay state --time 2026-01-30T17:23:55Z --topic orders --partition 7\n\n"
                "  kraft-replay state --time '2026-01-30 17:23' --brokers\n\n"
                "  kraft-replay state --offset 4880 --batch-aligned --format json | jq '.partitions[0]'\n\n"
                "  kraft-replay state --offset 4925 --section configs,acls")

BROKER_HEADERS = ("BROKER", "EPOCH", "FENCED", "SHUTDOWN", "RACK", "ENDPOINTS", "SINCE", "CAUSE")
PARTITION_HEADERS = ("TOPIC", "PART", "LEADER", "L.EPOCH", "P.EPOCH", "REPLICAS", "ISR", "ELR", "ADDING",
                     "REMOVING", "SINCE", "CAUSE")


def _broker_row(broker: Any) -> list[Any]:
    endpoints = [f"{e['name']}://{e['host']}:{e['port']}" for e in (broker["endpoints"] or [])]
    return [broker["broker_id"], broker["broker_epoch"], broker["fenced"], broker["in_controlled_shutdown"],
            broker["rack"], endpoints, broker["valid_from_offset"], broker["cause_type"]]


# The columns of PARTITION_HEADERS: all the table reads of a whole cluster's partitions (its largest section).
PARTITION_COLUMNS = ("topic_name", "partition_id", "leader", "leader_epoch", "partition_epoch", "replicas", "isr",
                     "eligible_leader_replicas", "adding_replicas", "removing_replicas", "valid_from_offset",
                     "cause_type")


QUERY_PATH_ENV = "KRAFT_REPLAY_QUERY_PATH"  # "spark": never the JVM-free path (`state`, `history`)
SPARK_PATH = "spark"


@dataclass(frozen=True)
class StateAnswer:
    """What `state` prints, from either path: the cluster and offset, the note beside the offset, each section's
    rows (mappings or Spark rows, sorted) and Kafka JSON items, and the controller's states (Spark only)."""

    cluster: str
    offset: int
    appended: Callable[[], str]
    rows: Callable[[str], Iterable[Any]]
    json: Callable[[str, tuple[tuple[str, str], ...]], Iterator[str]]
    machine_lines: Callable[[], list[str]] | None = None
    machine_json: Callable[[], dict[str, Iterator[str]]] | None = None


def light_path_serves(lake: str | None, master: str | None, remote: str | None) -> bool:
    """Whether `state` and a partition's `history` may skip Spark: a lake in a local directory, no Spark
    asked for (``--master``, ``--remote``, their environment, ``KRAFT_REPLAY_ENGINE=delta-spark``) nor
    ``KRAFT_REPLAY_QUERY_PATH=spark``."""
    from lakehouse import light_reader as reader
    asked = {name: os.environ.get(name, "").strip().lower() for name in (QUERY_PATH_ENV, reader.ENGINE_ENV)}
    forced = asked[QUERY_PATH_ENV] == SPARK_PATH or asked[reader.ENGINE_ENV] == reader.DELTA_SPARK
    elsewhere = master or remote or os.environ.get(reader.SPARK_REMOTE_ENV) or os.environ.get(reader.SPARK_MASTER_ENV)
    return not forced and not elsewhere and reader.is_local(reader.resolve_lake_root(lake))


def _light_answer(lake: str | None, offset: int | None, time: str | None, batch_aligned: bool,
                  sections: tuple[str, ...], cluster_id: str | None, topic: str | None, partition: int | None,
                  fmt: OutputFormat) -> StateAnswer:
    """The answer of ``replay.query.light_state``: delta-rs reads, no JVM (a table: only the partition columns
    shown)."""
    from lakehouse.light_reader import resolve_lake_root
    from replay.query.light_state import kafka_json_items, light_state

    columns = {"partitions": PARTITION_COLUMNS} if fmt is OutputFormat.table else {}
    found = light_state(resolve_lake_root(lake), offset, sections, cluster_id, topic, partition, columns, time,
                        batch_aligned)
    return StateAnswer(found.cluster_id, found.offset, lambda: appended_note(found.has_log, found.record),
                       found.rows, lambda section, fields: kafka_json_items(found.sections[section], fields))


def _spark_answer(spark: SparkSession, lake: str | None, offset: int | None, time: str | None, batch_aligned: bool,
                  cluster_id: str | None, topic: str | None, partition: int | None, states: bool) -> StateAnswer:
    """The answer of ``replay.query.state.state_at`` and ``replay.query.image.image_at``: lazy DataFrames."""
    from lakehouse.lake import Lake
    from lakehouse.tables import METADATA_LOG
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

    def appended() -> str:
        has_log = target.table_exists(METADATA_LOG)
        return appended_note(has_log, record_at(spark, target, cluster, snapshot.offset) if has_log else None)

    def frame(section: str) -> DataFrame:
        if section not in frames:  # the image's parts: loaded on the first question about one
            frames.update(image_at(spark, target, cluster, snapshot.offset))
            where = narrowed_sql("configs", topic, partition)
            if where is not None:
                frames["configs"] = frames["configs"].where(where)
        return frames[section]

    return StateAnswer(
        cluster, snapshot.offset, appended,
        lambda section: frame(section).toLocalIterator(), lambda section, fields: json_items(frame(section), fields),
        (lambda: state_machine_lines(spark, target, cluster, snapshot.offset, topic, partition)) if states else None,
        (lambda: state_machine_json(spark, target, cluster, snapshot.offset, topic, partition)) if states else None)


def state_lines(answer: StateAnswer, sections: tuple[str, ...], fmt: OutputFormat, brokers: bool) -> Iterator[str]:
    """What `state` prints of ``answer``, whichever path gave it: one formatter for both."""
    from replay.query.rules import BROKER_FIELDS, PARTITION_FIELDS, TOPIC_FIELDS

    if fmt is OutputFormat.json:
        fields = {"brokers": BROKER_FIELDS, "topics": TOPIC_FIELDS, "partitions": PARTITION_FIELDS}
        items: dict[str, Iterator[str] | str] = {
            name: answer.json(name, fields[name]) if name == "brokers" or not brokers
            else iter(()) for name in CLUSTER_SECTIONS if brokers or name in sections}
        if answer.machine_json is not None and not brokers:
            items.update(answer.machine_json())
        if not brokers:
            items.update(image_json_sections(answer.rows, answer.json, sections))
        yield from state_json_lines(answer.cluster, answer.offset, items)
        return
    lines = [f"cluster {answer.cluster} as of offset {answer.offset}{answer.appended()}"]
    if brokers or "brokers" in sections:
        broker_rows = [_broker_row(r) for r in answer.rows("brokers")]
        lines += ["", f"brokers ({len(broker_rows)})",
                  *table_lines(BROKER_HEADERS, broker_rows, right=[True, True, False, False, False, False, True,
                                                                    False])]
    if not brokers and "partitions" in sections:
        partition_rows = [[r[column] for column in PARTITION_COLUMNS] for r in answer.rows("partitions")]
        lines += ["", f"partitions ({len(partition_rows)})",
                  *table_lines(PARTITION_HEADERS, partition_rows,
                               right=[False, True, True, True, True] + [False] * 5 + [True, False])]
    if answer.machine_lines is not None and not brokers:
        lines += answer.machine_lines()
    if not brokers:
        lines += image_table_lines(answer.rows, sections)
    yield from lines


def state_json_lines(cluster_id: str, offset: int, sections: dict[str, Iterator[str] | str]) -> Iterator[str]:
    """One JSON object ``{"clusterId", "offset", "brokers": […], "topics": […], "partitions": […], …}``,
    written as it streams: one item per line (a section given as text is one JSON value: ``producerIds``)."""
    yield "{" + f'"clusterId": {json.dumps(cluster_id)}, "offset": {offset}' + ("," if sections else "")
    names = list(sections)
    for index, name in enumerate(names):
        items = sections[name]
        closing = "]" + ("," if index < len(names) - 1 else "")
        if isinstance(items, str):
            yield f'"{name}": {items}' + closing[1:]
            continue
        first = next(items, None)
        if first is None:
            yield f'"{name}": []' + closing[1:]
            continue
        yield f'"{name}": ['
        previous = first
        for item in items:
            yield previous + ","
            previous = item
        yield previous
        yield closing
    yield "}"


@query_command
def state(
    offset: Annotated[int | None, typer.Option("--offset", min=0, help="The log offset to look at")] = None,
    time: Annotated[str | None, typer.Option(
        "--time", help="ISO-8601 time (naive = UTC): the state after the last record appended at or before it")
    ] = None,
    topic: Annotated[str | None, typer.Option("--topic", help="Only this topic's partitions")] = None,
    partition: Annotated[int | None, typer.Option("--partition", min=0, help="Only this partition id")] = None,
    brokers: Annotated[bool, typer.Option("--brokers", help="Only the brokers (no topics, no partitions)")]
    = False,
    section: Annotated[str | None, typer.Option(
        "--section", help="Only these sections, comma-separated: " + ", ".join(ALL_SECTIONS)
        + " (default: all; with --topic/--partition: the brokers, the topic, its partitions and configs)")]
    = None,
    states: Annotated[bool, typer.Option(
        "--states", help="Also each partition's and replica's controller state (OnlinePartition, "
                         "OfflineReplica, ReplicaDeletionIneligible, …)")] = False,
    batch_aligned: Annotated[bool, typer.Option(
        "--batch-aligned", help="Move the offset to the end of its record batch: the states brokers saw")] = False,
    fmt: FormatOption = OutputFormat.table,
    lake: LakeOption = None,
    cluster_id: ClusterOption = None,
    master: MasterOption = None,
    remote: RemoteOption = None,
) -> None:
    """The cluster as of an offset or a time: brokers and partitions (leader, epochs, replicas, ISR, ELR), and the
    rest of Kafka's image: features, controllers, configs, client quotas, ACLs, SCRAM credentials (never their
    secrets), delegation tokens, producer ids. On a local lake it is read without Spark (the same Delta tables, the
    same answer; with --states Spark answers); KRAFT_REPLAY_QUERY_PATH=spark asks Spark instead."""
    if (offset is None) == (time is None):
        usage_error("give exactly one of --offset N or --time ISO8601")
    if brokers and section is not None:
        usage_error("give --brokers or --section, not both")
    sections = parse_sections(section)
    if section is None and (topic is not None or partition is not None):
        sections = TOPIC_SECTIONS
    shown = CLUSTER_SECTIONS[:1] if brokers else sections
    if not states and light_path_serves(lake, master, remote):
        answer = _light_answer(lake, offset, time, batch_aligned, shown, cluster_id, topic, partition, fmt)
    else:
        answer = _spark_answer(spark_session(master, remote), lake, offset, time, batch_aligned, cluster_id,
                               topic, partition, states)
    echo_lines(state_lines(answer, shown, fmt, brokers))


# --- state machines ------------------------------------------------------------------------------

STATE_HEADERS = ("PARTITION", "BROKER", "STATE", "SINCE", "FROM STATE", "CAUSE")


def state_machine_lines(spark: SparkSession, lake: Lake, cluster: str, offset: int, topic: str | None,
                        partition: int | None) -> list[str]:
    from replay.query.controller_states import machine_states_at

    partitions, replicas = machine_states_at(spark, lake, cluster, offset, topic, partition)
    rows = [[f"{r['topic_name']}-{r['partition_id']}", "", r["state"], r["valid_from_offset"],
             r["previous_state"], f"{r['cause_type']}: {r['reason']}"] for r in partitions.toLocalIterator()]
    rows += [[f"{r['topic_name']}-{r['partition_id']}", r["broker_id"], r["state"], r["valid_from_offset"],
              r["previous_state"], f"{r['cause_type']}: {r['reason']}"] for r in replicas.toLocalIterator()]
    return ["", f"controller states ({len(rows)})", *table_lines(STATE_HEADERS, rows)]


def state_machine_json(spark: SparkSession, lake: Lake, cluster: str, offset: int, topic: str | None,
                       partition: int | None) -> dict[str, Iterator[str]]:
    from replay.query.controller_states import machine_states_at
    from replay.query.state import MACHINE_STATE_NAMES, json_items, kafka_fields

    partitions, replicas = machine_states_at(spark, lake, cluster, offset, topic, partition)
    common = kafka_fields("topic_id", "topic_name", "partition_id")
    tail = kafka_fields("state", "previous_state", "valid_from_offset", "cause_offset", "cause_type", "reason",
                        names=MACHINE_STATE_NAMES)
    return {"partitionStates": json_items(partitions, (*common, *tail)),
            "replicaStates": json_items(replicas, (*common, *kafka_fields("broker_id"), *tail))}
