"""`kraft-replay history`: every version of one partition, with the controller's state-machine transitions beside
it (``--states``), or of a part of the image (the questions: ``replay.query.image_sections.part_questions``; the tables:
``kraft_replay.image_commands``). The answer, JVM-free where ``state``'s is, is ``replay.query.history_answer``'s;
``--states`` asks Spark.

Register through ``kraft_replay.replay_commands.REPLAY_COMMANDS``. Exit codes as the rest of the CLI.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from kraft_replay.image_commands import image_history
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
from replay.query.history_answer import PARTITION_VERSIONS, part_history_answer, partition_history_answer

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakehouse.lake import Lake

# --- history -------------------------------------------------------------------------------------

HISTORY_EPILOG = ("Examples:\n\n"
                  "  kraft-replay history --topic orders --partition 7\n\n"
                  "  kraft-replay history --topic __consumer_offsets --partition 0 --format json\n\n"
                  "  kraft-replay history --config TOPIC:orders\n\n"
                  "  kraft-replay history --config BROKER:   (the cluster-wide default broker configs)\n\n"
                  "  kraft-replay history --acl --resource TOPIC:payments\n\n"
                  "  kraft-replay history --user alice   (its SCRAM credentials, quotas and ACLs)")
HISTORY_HEADERS = ("FROM", "TO", "TIME (UTC)", "CAUSE", "RECORD TYPE", "LEADER", "L.EPOCH", "P.EPOCH",
                   "REPLICAS", "ISR", "ELR", "TOPIC ID")
# The column under each of them (a table reads these only).
HISTORY_COLUMNS = ("valid_from_offset", "valid_to_offset", "valid_from_time_ms", "cause_offset", "cause_type",
                   "leader", "leader_epoch", "partition_epoch", "replicas", "isr", "eligible_leader_replicas",
                   "topic_id")


@query_command
def history(
    topic: Annotated[str | None, typer.Option("--topic", help="Topic name (every topic id that had it)")] = None,
    partition: Annotated[int | None, typer.Option("--partition", min=0, help="Partition id")] = None,
    states: Annotated[bool, typer.Option(
        "--states", help="Also every state-machine transition of the partition and its replicas")] = False,
    config: Annotated[str | None, typer.Option(
        "--config", help="Every config version of a resource: TOPIC:orders, BROKER:1, BROKER: (the cluster "
                         "default), by Kafka's ConfigResource.Type name")] = None,
    acl: Annotated[bool, typer.Option("--acl", help="Every ACL version (narrow with --principal, --resource)")]
    = False,
    principal: Annotated[str | None, typer.Option("--principal", help="With --acl: only this principal "
                                                  "(User:alice)")] = None,
    resource: Annotated[str | None, typer.Option(
        "--resource", help="With --acl: only ACLs whose resource pattern is exactly TYPE:NAME (TOPIC:payments, "
                           "by Kafka's ResourceType name)")] = None,
    user: Annotated[str | None, typer.Option(
        "--user", help="A user's SCRAM credentials, client quotas (user entity) and ACLs (User:<name>)")] = None,
    quota: Annotated[bool, typer.Option("--quota", help="Every client-quota version")] = False,
    token: Annotated[bool, typer.Option("--token", help="Every delegation-token version")] = False,
    producer_ids: Annotated[bool, typer.Option("--producer-ids", help="Every ProducerIdsRecord's block")]
    = False,
    fmt: FormatOption = OutputFormat.table,
    lake: LakeOption = None,
    cluster_id: ClusterOption = None,
    master: MasterOption = None,
    remote: RemoteOption = None,
) -> None:
    """Every version of one partition, or of a part of the image (a resource's configs, ACLs, a user, quotas,
    tokens, producer ids): from/to offsets, the record (offset, time, type) that caused it. On a local lake it is
    read without Spark (with --states Spark answers); KRAFT_REPLAY_QUERY_PATH=spark asks Spark instead."""
    from lakehouse.lake import Lake
    from replay.query.image_sections import part_questions
    from replay.query.rules import iso_ms

    asked = [topic is not None or partition is not None, config is not None, acl, user is not None, quota,
             token, producer_ids]
    if sum(asked) != 1:
        usage_error("ask one thing: --topic T --partition N, --config TYPE:NAME, --acl, --user NAME, --quota, "
                    "--token or --producer-ids")
    if (principal is not None or resource is not None) and not acl:
        usage_error("--principal and --resource narrow --acl")
    if not asked[0]:
        questions = part_questions(config, acl, principal, resource, user, quota, token, producer_ids)
        parts = part_history_answer(lake, questions, cluster_id=cluster_id, master=master, remote=remote,
                                    spark=lambda: spark_session(master, remote))
        image_history(questions, fmt, parts.rows, parts.json)
        return
    if topic is None or partition is None:
        usage_error("a partition's history needs both --topic and --partition")
    answer = partition_history_answer(lake, topic, partition, cluster_id=cluster_id, master=master, remote=remote,
                                      columns=None if fmt is OutputFormat.json else HISTORY_COLUMNS,
                                      spark=lambda: spark_session(master, remote))
    if fmt is OutputFormat.json:
        echo_lines(answer.json(PARTITION_VERSIONS))
        return
    rows = [[iso_ms(r[column]) if column == "valid_from_time_ms" else r[column] for column in HISTORY_COLUMNS]
            for r in answer.rows(PARTITION_VERSIONS)]
    if not rows:
        usage_error(f"no partition {topic}-{partition} in partition_history")
    echo_lines([f"{topic}-{partition}: {len(rows)} version(s); TO empty = still current",
                *table_lines(HISTORY_HEADERS, rows, right=[True, True, False, True, False, True, True, True,
                                                           False, False, False, False])])
    if states:
        echo_lines(transition_lines(spark_session(master, remote), Lake(lake), topic, partition, cluster_id))


TRANSITION_HEADERS = ("OFFSET", "TIME (UTC)", "MACHINE", "BROKER", "FROM", "TO", "VALID", "CAUSE", "WHY")


def transition_lines(spark: SparkSession, lake: Lake, topic: str, partition: int, cluster_id: str | None
                     ) -> list[str]:
    from replay.query.controller_states import transitions
    from replay.query.state import iso_ms

    both = transitions(spark, lake, topic, partition, cluster_id)
    rows = [[r["valid_from_offset"], iso_ms(r["valid_from_time_ms"]), r["machine"], r["broker_id"],
             r["previous_state"], r["state"], r["valid_transition"], r["cause_type"], r["reason"]]
            for r in both.toLocalIterator()]
    return ["", f"state-machine transitions ({len(rows)}); VALID no = Kafka's controller would refuse it",
            *table_lines(TRANSITION_HEADERS, rows)]
