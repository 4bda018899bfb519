"""`kraft-replay replay | state | history | diff | sql`: build the history tables and ask them questions.

Register with ``for command, epilog in REPLAY_COMMANDS: app.command(epilog=epilog)(command)``.
Run standalone with ``python -m kraft_replay.replay_commands state --offset 100``.

Exit codes as the rest of the CLI: 0 success, 1 unexpected failure, 2 bad usage (unknown cluster, an
offset or time outside the log, tables missing, bad SQL), 3 bad input.
"""

from __future__ import annotations

import json
import logging
import shutil
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kraft_replay.progress import QuietOption, stage_progress

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from lakehouse.lake import Lake

EXIT_USAGE = 2

LakeOption = Annotated[str | None, typer.Option(
    "--lake", envvar="KRAFT_REPLAY_LAKE", show_default=False,
    help="Lake root: a directory or an object-store URI (default ./kraft-lake)")]
MasterOption = Annotated[str | None, typer.Option(
    "--master", help="Spark master URL (default local[*], or $KRAFT_REPLAY_SPARK_MASTER)")]
RemoteOption = Annotated[str | None, typer.Option(
    "--remote", help="Spark Connect URL, e.g. sc://host:15002 (default $SPARK_REMOTE)")]
ClusterOption = Annotated[str | None, typer.Option(
    "--cluster-id", help="The cluster to ask about; needed only when the lake holds several")]


class OutputFormat(StrEnum):
    table = "table"
    json = "json"


FormatOption = Annotated[OutputFormat, typer.Option("--format", help="table: for people; json: for tools")]


# --- plumbing ------------------------------------------------------------------------------------


def _spark(master: str | None, remote: str | None) -> SparkSession:
    from lakehouse.spark import SparkOptions, get_spark

    return get_spark(SparkOptions(master=master, remote=remote, announce=True))


def _usage_errors() -> tuple[type[Exception], ...]:
    from pyspark.errors import AnalysisException

    from lakehouse.lake import LakeError
    from replay.query import QueryError
    from replay.store import ReplayError

    return QueryError, ReplayError, LakeError, AnalysisException


def _run(body: Callable[[], None]) -> None:
    """``guarded`` for a command body, plus the replay's usage errors → exit 2 with a one-line message."""
    from kraft_replay.cli import guarded

    problem: list[str] = []

    def wrapped() -> None:
        try:
            body()
        except _usage_errors() as exc:
            text = str(exc).strip()
            problem.append(text.splitlines()[0] if text else type(exc).__name__)

    # PySpark logs every analysis error with its whole Java stack trace; the one-line message is enough.
    quiet = [logging.getLogger(name) for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger")]
    levels = [logger.level for logger in quiet]
    for logger in quiet:
        logger.setLevel(logging.CRITICAL)
    try:
        guarded(wrapped)
    finally:
        for logger, level in zip(quiet, levels, strict=True):
            logger.setLevel(level)
    if problem:
        typer.secho(f"kraft-replay: {problem[0]}", err=True, fg=typer.colors.RED)
        raise typer.Exit(EXIT_USAGE)


def _usage(message: str) -> None:
    from replay.query import QueryError

    raise QueryError(message)


def _width() -> int:
    return shutil.get_terminal_size((160, 24)).columns


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ",".join(_cell(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, separators=(",", ":"), default=str)
    if hasattr(value, "asDict"):
        return json.dumps(value.asDict(recursive=True), separators=(",", ":"), default=str)
    return str(value)


def table_lines(headers: Sequence[str], rows: Iterable[Sequence[Any]], width: int | None = None,
                right: Sequence[bool] | None = None) -> Iterator[str]:
    """Aligned columns that fit ``width``: the widest columns are shortened (cut with …) first."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    available = (width or _width()) - 2 * (len(headers) - 1)
    while sum(widths) > available and max(widths) > 6:
        widest = widths.index(max(widths))
        widths[widest] -= 1
    align = right or [False] * len(headers)

    def line(values: Sequence[str]) -> str:
        parts = []
        for value, size, to_right in zip(values, widths, align, strict=True):
            text = value if len(value) <= size else value[: size - 1] + "…"
            parts.append(text.rjust(size) if to_right else text.ljust(size))
        return "  ".join(parts).rstrip()

    yield line(list(headers))
    for row in cells:
        yield line(row)


def _echo_lines(lines: Iterable[str]) -> None:
    out = sys.stdout
    for text in lines:
        out.write(text)
        out.write("\n")
    out.flush()


def _append_time(spark: SparkSession, lake: Lake, cluster_id: str, offset: int) -> str:
    """`appended 2026-…Z` for an offset of the log, or a note that it lies beyond the log's end."""
    from pyspark.sql import functions as F

    from lakehouse.tables import METADATA_LOG
    from replay.query import iso_ms

    if not lake.table_exists(METADATA_LOG):
        return ""
    row = (lake.read(spark, METADATA_LOG)
           .where((F.col("cluster_id") == cluster_id) & (F.col("offset") == offset))
           .select("append_time_ms", "record_type").first())
    if row is None:
        return " (not an offset of the stored log: the state after the last offset before it)"
    return f" (appended {iso_ms(row['append_time_ms'])}, {row['record_type']})"


# --- replay --------------------------------------------------------------------------------------

REPLAY_EPILOG = ("Examples:\n\n"
                 "  kraft-replay ingest /var/lib/kafka/data --lake ./kraft-lake\n\n"
                 "  kraft-replay replay --lake ./kraft-lake\n\n"
                 "  kraft-replay replay --full --cluster-id q1w2e3r4t5y6u7i8o9p0")


def replay(
    lake: LakeOption = None,
    full: Annotated[bool, typer.Option("--full", help="Rebuild every history table from the start of the log "
                                       "instead of folding in only the offsets after the last checkpoint")] = False,
    cluster_id: Annotated[str | None, typer.Option(
        "--cluster-id", help="Replay only this cluster (the other clusters' rows are kept as they are)")] = None,
    master: MasterOption = None,
    remote: RemoteOption = None,
    quiet: QuietOption = False,
) -> None:
    """Replay the stored metadata_log into the history tables (partition_history, broker_history, …)."""

    def run() -> None:
        from lakehouse.lake import Lake
        from replay.store import run_replay

        with stage_progress(quiet) as stages:
            stages("starting Spark")
            spark = stages.attach(_spark(master, remote))
            summary = run_replay(spark, Lake(lake), cluster_id, full=full, progress=stages)
        _echo_lines(summary.lines())

    _run(run)


# --- state ---------------------------------------------------------------------------------------

STATE_EPILOG = ("Examples:\n\n"
                "  kraft-replay state --offset 4925\n\n"
                "  kraft-replay state --time 2026-01-30T17:23:55Z --topic orders --partition 7\n\n"
                "  kraft-replay state --time '2026-01-30 17:23' --brokers\n\n"
                "  kraft-replay state --offset 4880 --batch-aligned --format json | jq '.partitions[0]'")

BROKER_HEADERS = ("BROKER", "EPOCH", "FENCED", "SHUTDOWN", "RACK", "ENDPOINTS", "SINCE", "CAUSE")
PARTITION_HEADERS = ("TOPIC", "PART", "LEADER", "L.EPOCH", "P.EPOCH", "REPLICAS", "ISR", "ELR", "ADDING",
                     "REMOVING", "SINCE", "CAUSE")


def _broker_row(r: Any) -> list[Any]:
    endpoints = [f"{e['name']}://{e['host']}:{e['port']}" for e in (r["endpoints"] or [])]
    return [r["broker_id"], r["broker_epoch"], r["fenced"], r["in_controlled_shutdown"], r["rack"], endpoints,
            r["valid_from_offset"], r["cause_type"]]


def _partition_row(r: Any) -> list[Any]:
    return [r["topic_name"], r["partition_id"], r["leader"], r["leader_epoch"], r["partition_epoch"],
            r["replicas"], r["isr"], r["eligible_leader_replicas"], r["adding_replicas"], r["removing_replicas"],
            r["valid_from_offset"], r["cause_type"]]


def _json_items(df: DataFrame, fields: tuple[tuple[str, str], ...]) -> Iterator[str]:
    """Each row as Kafka JSON text, computed by Spark, streamed in the DataFrame's (sorted) order."""
    from replay.query import kafka_json

    for row in df.select(kafka_json(fields).alias("j")).toLocalIterator():
        yield row["j"]


def state_json_lines(cluster_id: str, offset: int, sections: dict[str, Iterator[str]]) -> Iterator[str]:
    """One JSON object ``{"clusterId", "offset", "brokers": […], "topics": […], "partitions": […]}``,
    written as it streams: one item per line."""
    yield "{" + f'"clusterId": {json.dumps(cluster_id)}, "offset": {offset},'
    names = list(sections)
    for index, name in enumerate(names):
        items = sections[name]
        closing = "]" + ("," if index < len(names) - 1 else "")
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


def state(
    offset: Annotated[int | None, typer.Option("--offset", min=0, help="The log offset to look at")] = None,
    time: Annotated[str | None, typer.Option(
        "--time", help="ISO-8601 time (naive = UTC): the state after the last record appended at or before it")
    ] = None,
    topic: Annotated[str | None, typer.Option("--topic", help="Only this topic's partitions")] = None,
    partition: Annotated[int | None, typer.Option("--partition", min=0, help="Only this partition id")] = None,
    brokers: Annotated[bool, typer.Option("--brokers", help="Only the brokers (no topics, no partitions)")]
    = False,
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
    """The cluster as of an offset or a time: brokers and partitions (leader, epochs, replicas, ISR, ELR)."""

    def run() -> None:
        from pyspark.sql import functions as F

        from lakehouse.lake import Lake
        from replay.query import BROKER_FIELDS, PARTITION_FIELDS, TOPIC_FIELDS, state_at

        if (offset is None) == (time is None):
            _usage("give exactly one of --offset N or --time ISO8601")
        spark, target = _spark(master, remote), Lake(lake)
        snapshot = state_at(spark, target, offset=offset, time=time, cluster_id=cluster_id,
                            batch_aligned=batch_aligned)
        topics, partitions = snapshot.topics, snapshot.partitions
        if topic is not None:
            topics = topics.where(F.col("name") == topic)
            partitions = partitions.where(F.col("topic_name") == topic)
        if partition is not None:
            partitions = partitions.where(F.col("partition_id") == partition)
        cluster = snapshot.cluster_id or ""
        if fmt is OutputFormat.json:
            sections = {
                "brokers": _json_items(snapshot.brokers, BROKER_FIELDS),
                "topics": iter(()) if brokers else _json_items(topics, TOPIC_FIELDS),
                "partitions": iter(()) if brokers else _json_items(partitions, PARTITION_FIELDS),
            }
            if states and not brokers:
                sections.update(state_machine_json(spark, target, cluster, snapshot.offset, topic, partition))
            _echo_lines(state_json_lines(cluster, snapshot.offset, sections))
            return
        where = _append_time(spark, target, cluster, snapshot.offset)
        lines = [f"cluster {cluster} as of offset {snapshot.offset}{where}", ""]
        broker_rows = [_broker_row(r) for r in snapshot.brokers.toLocalIterator()]
        lines += [f"brokers ({len(broker_rows)})",
                  *table_lines(BROKER_HEADERS, broker_rows, right=[True, True, False, False, False, False, True,
                                                                    False])]
        if not brokers:
            partition_rows = [_partition_row(r) for r in partitions.toLocalIterator()]
            lines += ["", f"partitions ({len(partition_rows)})",
                      *table_lines(PARTITION_HEADERS, partition_rows,
                                   right=[False, True, True, True, True] + [False] * 5 + [True, False])]
        if states and not brokers:
            lines += state_machine_lines(spark, target, cluster, snapshot.offset, topic, partition)
        _echo_lines(lines)

    _run(run)


# --- history -------------------------------------------------------------------------------------

HISTORY_EPILOG = ("Examples:\n\n"
                  "  kraft-replay history --topic orders --partition 7\n\n"
                  "  kraft-replay history --topic __consumer_offsets --partition 0 --format json")
HISTORY_HEADERS = ("FROM", "TO", "TIME (UTC)", "CAUSE", "RECORD TYPE", "LEADER", "L.EPOCH", "P.EPOCH",
                   "REPLICAS", "ISR", "ELR", "TOPIC ID")


def history(
    topic: Annotated[str, typer.Option("--topic", help="Topic name (every topic id that had it)")],
    partition: Annotated[int, typer.Option("--partition", min=0, help="Partition id")],
    states: Annotated[bool, typer.Option(
        "--states", help="Also every state-machine transition of the partition and its replicas")] = False,
    fmt: FormatOption = OutputFormat.table,
    lake: LakeOption = None,
    cluster_id: ClusterOption = None,
    master: MasterOption = None,
    remote: RemoteOption = None,
) -> None:
    """Every version of one partition: from/to offsets, the record (offset, time, type) that caused it."""

    def run() -> None:
        from pyspark.sql import functions as F

        from lakehouse.lake import Lake
        from replay.query import PARTITION_FIELDS, iso_ms, kafka_struct
        from replay.query import history as partition_history

        versions = partition_history(_spark(master, remote), Lake(lake), topic, partition, cluster_id)
        if fmt is OutputFormat.json:
            extra = (("valid_from_offset", "validFromOffset"), ("valid_to_offset", "validToOffset"),
                     ("valid_from_time_ms", "validFromTimeMs"), ("valid_to_time_ms", "validToTimeMs"),
                     ("cause_offset", "causeOffset"), ("cause_type", "causeType"))
            struct = kafka_struct((*PARTITION_FIELDS, *extra))
            _echo_lines(r["j"] for r in versions.select(F.to_json(struct, {"ignoreNullFields": "false"})
                                                         .alias("j")).toLocalIterator())
            return
        rows = [[r["valid_from_offset"], r["valid_to_offset"], iso_ms(r["valid_from_time_ms"]), r["cause_offset"],
                 r["cause_type"], r["leader"], r["leader_epoch"], r["partition_epoch"], r["replicas"], r["isr"],
                 r["eligible_leader_replicas"], r["topic_id"]] for r in versions.toLocalIterator()]
        if not rows:
            _usage(f"no partition {topic}-{partition} in partition_history")
        _echo_lines([f"{topic}-{partition}: {len(rows)} version(s); TO empty = still current",
                     *table_lines(HISTORY_HEADERS, rows, right=[True, True, False, True, False, True, True, True,
                                                                False, False, False, False])])
        if states:
            _echo_lines(transition_lines(_spark(master, remote), Lake(lake), topic, partition, cluster_id))

    _run(run)


# --- state machines ------------------------------------------------------------------------------

STATE_HEADERS = ("PARTITION", "BROKER", "STATE", "SINCE", "FROM STATE", "CAUSE")
TRANSITION_HEADERS = ("OFFSET", "TIME (UTC)", "MACHINE", "BROKER", "FROM", "TO", "VALID", "CAUSE", "WHY")


def _machine_tables(spark: SparkSession, lake: Lake, cluster: str) -> tuple[DataFrame, DataFrame]:
    from lakehouse.tables import PARTITION_STATE_HISTORY, REPLICA_STATE_HISTORY
    from replay.query import QueryError, history_table

    if not lake.table_exists(REPLICA_STATE_HISTORY):
        raise QueryError(f"no state-machine tables in {lake.root}: run `kraft-replay replay` again")
    return (history_table(spark, lake, PARTITION_STATE_HISTORY, cluster),
            history_table(spark, lake, REPLICA_STATE_HISTORY, cluster))


def _machine_states(spark: SparkSession, lake: Lake, cluster: str, offset: int, topic: str | None,
                    partition: int | None) -> tuple[DataFrame, DataFrame]:
    from pyspark.sql import functions as F

    from replay.query import as_of

    frames = []
    for df in _machine_tables(spark, lake, cluster):
        df = as_of(df, offset)
        if topic is not None:
            df = df.where(F.col("topic_name") == topic)
        if partition is not None:
            df = df.where(F.col("partition_id") == partition)
        frames.append(df)
    partitions, replicas = frames
    return (partitions.orderBy("topic_name", "partition_id", "topic_id"),
            replicas.orderBy("topic_name", "partition_id", "broker_id", "topic_id"))


def state_machine_lines(spark: SparkSession, lake: Lake, cluster: str, offset: int, topic: str | None,
                        partition: int | None) -> list[str]:
    partitions, replicas = _machine_states(spark, lake, cluster, offset, topic, partition)
    rows = [[f"{r['topic_name']}-{r['partition_id']}", "", r["state"], r["valid_from_offset"],
             r["previous_state"], f"{r['cause_type']}: {r['reason']}"] for r in partitions.toLocalIterator()]
    rows += [[f"{r['topic_name']}-{r['partition_id']}", r["broker_id"], r["state"], r["valid_from_offset"],
              r["previous_state"], f"{r['cause_type']}: {r['reason']}"] for r in replicas.toLocalIterator()]
    return ["", f"controller states ({len(rows)})", *table_lines(STATE_HEADERS, rows)]


def state_machine_json(spark: SparkSession, lake: Lake, cluster: str, offset: int, topic: str | None,
                       partition: int | None) -> dict[str, Iterator[str]]:
    partitions, replicas = _machine_states(spark, lake, cluster, offset, topic, partition)
    common = (("topic_id", "topicId"), ("topic_name", "topicName"), ("partition_id", "partitionId"))
    tail = (("state", "state"), ("previous_state", "previousState"), ("valid_from_offset", "since"),
            ("cause_offset", "causeOffset"), ("cause_type", "causeType"), ("reason", "reason"))
    return {"partitionStates": _json_items(partitions, (*common, *tail)),
            "replicaStates": _json_items(replicas, (*common, ("broker_id", "brokerId"), *tail))}


def transition_lines(spark: SparkSession, lake: Lake, topic: str, partition: int, cluster_id: str | None
                     ) -> list[str]:
    from pyspark.sql import functions as F

    from replay.query import iso_ms, resolve_cluster

    cluster = resolve_cluster(spark, lake, cluster_id)
    columns = ("valid_from_offset", "step", "valid_from_time_ms", "previous_state", "state", "valid_transition",
               "cause_type", "reason")
    partitions, replicas = _machine_tables(spark, lake, cluster)
    both = (partitions.select(F.lit("partition").alias("machine"), F.lit(None).cast("int").alias("broker_id"),
                              "topic_name", "partition_id", *columns)
            .unionByName(replicas.select(F.lit("replica").alias("machine"), "broker_id", "topic_name",
                                         "partition_id", *columns))
            .where((F.col("topic_name") == topic) & (F.col("partition_id") == partition))
            .orderBy("valid_from_offset", "step", "machine", "broker_id"))
    rows = [[r["valid_from_offset"], iso_ms(r["valid_from_time_ms"]), r["machine"], r["broker_id"],
             r["previous_state"], r["state"], r["valid_transition"], r["cause_type"], r["reason"]]
            for r in both.toLocalIterator()]
    return ["", f"state-machine transitions ({len(rows)}); VALID no = Kafka's controller would refuse it",
            *table_lines(TRANSITION_HEADERS, rows)]


# --- diff ----------------------------------------------------------------------------------------

DIFF_EPILOG = ("Examples:\n\n"
               "  kraft-replay diff --from 4870 --to 4926\n\n"
               "  kraft-replay diff --from 0 --to 5000 --format json | jq -c 'select(.entity == \"broker\")'")


def _changes(before: dict[str, Any] | None, after: dict[str, Any] | None) -> str:
    if before is None or after is None:
        whole = after if before is None else before
        assert whole is not None
        return " ".join(f"{k}={_cell(v)}" for k, v in whole.items() if v not in (None, [], ""))
    return " ".join(f"{k}: {_cell(before.get(k))}→{_cell(after.get(k))}"
                    for k in after if before.get(k) != after.get(k))


def diff(
    from_offset: Annotated[int, typer.Option("--from", min=0, help="The earlier offset")],
    to_offset: Annotated[int, typer.Option("--to", min=0, help="The later offset")],
    fmt: FormatOption = OutputFormat.table,
    lake: LakeOption = None,
    cluster_id: ClusterOption = None,
    master: MasterOption = None,
    remote: RemoteOption = None,
) -> None:
    """What changed between two offsets: brokers, topics and partitions added, removed or changed."""

    def run() -> None:
        from lakehouse.lake import Lake
        from replay.query import diff as state_diff

        changes = state_diff(_spark(master, remote), Lake(lake), from_offset, to_offset, cluster_id)
        rows = [(r["entity"], r["key"], r["change"], json.loads(r["before"]) if r["before"] else None,
                 json.loads(r["after"]) if r["after"] else None) for r in changes.toLocalIterator()]
        if fmt is OutputFormat.json:
            _echo_lines(json.dumps({"entity": e, "key": k, "change": c, "before": b, "after": a},
                                   separators=(",", ":")) for e, k, c, b, a in rows)
            return
        lines = [f"{len(rows)} change(s) from offset {from_offset} to {to_offset}"]
        lines += table_lines(("ENTITY", "KEY", "CHANGE", "DETAILS"),
                             [(e, k, c, _changes(b, a)) for e, k, c, b, a in rows])
        _echo_lines(lines)

    _run(run)


# --- sql -----------------------------------------------------------------------------------------

SQL_EPILOG = ("Every lake table is a view: metadata_log, partition_history, broker_history, topic_history, "
              "replica_history, feature_history, controller_history, replay_anomalies, replay_checkpoints.\n\n"
              "Examples:\n\n"
              "  kraft-replay sql \"SELECT broker_id, fenced FROM broker_history WHERE valid_to_offset IS NULL\"\n\n"
              "  kraft-replay sql \"SELECT * FROM partition_history WHERE topic_name = 'orders' AND "
              "valid_from_offset <= 4925 AND (valid_to_offset IS NULL OR valid_to_offset > 4925)\" --format json")


def sql(
    query: Annotated[str, typer.Argument(help="A Spark SQL query over the lake's tables")],
    fmt: FormatOption = OutputFormat.table,
    limit: Annotated[int, typer.Option("--limit", min=0, help="At most this many rows (0: all)")] = 1000,
    lake: LakeOption = None,
    cluster_id: Annotated[str | None, typer.Option(
        "--cluster-id", help="The views show only this cluster's rows")] = None,
    master: MasterOption = None,
    remote: RemoteOption = None,
) -> None:
    """Run Spark SQL over the lake (every table registered as a view); print a table or JSON lines."""

    def run() -> None:
        from pyspark.sql import functions as F

        from lakehouse.lake import Lake
        from replay.query import register_views

        spark = _spark(master, remote)
        register_views(spark, Lake(lake), cluster_id)
        result = spark.sql(query)
        limited = result.limit(limit + 1) if limit else result
        more = False
        if fmt is OutputFormat.json:
            texts = limited.select(F.to_json(F.struct(*[F.col(f"`{c}`") for c in result.columns]),
                                             {"ignoreNullFields": "false"}).alias("j"))
            for count, row in enumerate(texts.toLocalIterator()):
                if limit and count == limit:
                    more = True
                    break
                sys.stdout.write(row["j"] + "\n")
            sys.stdout.flush()
        else:
            rows = limited.collect()
            more = bool(limit) and len(rows) > limit
            rows = rows[:limit] if limit else rows
            plain = [["true" if v is True else "false" if v is False else v for v in r] for r in rows]
            _echo_lines([*table_lines(result.columns, plain), f"({len(rows)} row(s))"])
        if more:
            typer.secho(f"note: only the first {limit} rows (raise --limit, or 0 for all)", err=True,
                        fg=typer.colors.YELLOW)

    _run(run)


REPLAY_COMMANDS: list[tuple[Callable[..., None], str]] = [
    (replay, REPLAY_EPILOG), (state, STATE_EPILOG), (history, HISTORY_EPILOG), (diff, DIFF_EPILOG),
    (sql, SQL_EPILOG)]


def standalone_app() -> typer.Typer:
    """The replay commands without the rest of the CLI (tests, subprocesses, before registration)."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, no_args_is_help=True,
                      context_settings={"help_option_names": ["-h", "--help"]})
    for command, epilog in REPLAY_COMMANDS:
        app.command(epilog=epilog)(command)
    return app


if __name__ == "__main__":
    standalone_app()()
