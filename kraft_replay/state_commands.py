"""`kraft-replay state`: the cluster as of an offset or a time, with the controller's state machines beside it
(``--states``); the rest of the image (configs, quotas, ACLs, SCRAM, tokens, producer ids, features, controllers)
through ``kraft_replay.image_commands``. The answer, and which path gives it (JVM-free or Spark), is
``replay.query.state_answer``'s; this module prints it. ``history`` is in ``kraft_replay.history_commands``.

Register through ``kraft_replay.replay_commands.REPLAY_COMMANDS``. Exit codes as the rest of the CLI.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
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
from replay.query.state_answer import StateAnswer, state_answer

if TYPE_CHECKING:
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
    lines = [f"cluster {answer.cluster} as of offset {answer.offset}{appended_note(*answer.log_record())}"]
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
    if answer.machine_rows is not None and not brokers:
        lines += state_machine_lines(*answer.machine_rows())
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
    answer = state_answer(lake, offset, time, sections=shown, cluster_id=cluster_id, topic=topic, partition=partition,
                          batch_aligned=batch_aligned, states=states, master=master, remote=remote,
                          partition_columns=PARTITION_COLUMNS if fmt is OutputFormat.table else None,
                          spark=lambda: spark_session(master, remote))
    echo_lines(state_lines(answer, shown, fmt, brokers))


# --- state machines ------------------------------------------------------------------------------

STATE_HEADERS = ("PARTITION", "BROKER", "STATE", "SINCE", "FROM STATE", "CAUSE")


def state_machine_lines(partitions: Iterable[Any], replicas: Iterable[Any]) -> list[str]:
    """The controller's states of the partitions and their replicas (``StateAnswer.machine_rows``) as one table."""
    rows = [[f"{r['topic_name']}-{r['partition_id']}", "", r["state"], r["valid_from_offset"],
             r["previous_state"], f"{r['cause_type']}: {r['reason']}"] for r in partitions]
    rows += [[f"{r['topic_name']}-{r['partition_id']}", r["broker_id"], r["state"], r["valid_from_offset"],
              r["previous_state"], f"{r['cause_type']}: {r['reason']}"] for r in replicas]
    return ["", f"controller states ({len(rows)})", *table_lines(STATE_HEADERS, rows)]
