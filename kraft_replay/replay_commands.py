"""`kraft-replay replay | state | history | diff | changes | sql`: build the history tables and ask them questions.

``replay``, ``diff`` and ``sql`` are here, ``state`` in ``kraft_replay.state_commands``, ``history`` in
``kraft_replay.history_commands``, ``changes`` in ``kraft_replay.image_commands``; every question is a function of
``replay/``, these commands parse options, call it and format the answer.
Register with ``for command, epilog in REPLAY_COMMANDS: app.command(epilog=epilog)(command)``.
Run standalone with ``python -m kraft_replay.replay_commands state --offset 100``.

Exit codes as the rest of the CLI: 0 success, 1 unexpected failure, 2 bad usage (unknown cluster, an
offset or time outside the log, tables missing, bad SQL), 3 bad input.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer

from kraft_replay.formatting import format_replay_summary
from kraft_replay.history_commands import HISTORY_EPILOG, history
from kraft_replay.image_commands import CHANGES_EPILOG, changes
from kraft_replay.plumbing import (
    ClusterOption,
    FormatOption,
    LakeOption,
    MasterOption,
    OutputFormat,
    QuietOption,
    RemoteOption,
    cell,
    echo_lines,
    query_command,
    spark_session,
    spark_with_progress,
    table_lines,
)
from kraft_replay.plumbing import standalone_app as commands_app
from kraft_replay.state_commands import STATE_EPILOG, state

# --- replay --------------------------------------------------------------------------------------

REPLAY_EPILOG = ("Examples:\n\n"
                 "  kraft-replay ingest /var/lib/kafka/data --lake ./kraft-lake\n\n"
                 "  kraft-replay replay --lake ./kraft-lake\n\n"
                 "  kraft-replay replay --full --cluster-id q1w2e3r4t5y6u7i8o9p0")


@query_command
def replay(
    lake: LakeOption = None,
    full: Annotated[bool, typer.Option("--full", help="Rebuild every history table from the start of the log "
                                       "instead of folding in only the offsets after the last checkpoint")] = False,
    incremental: Annotated[bool, typer.Option(
        "--incremental", help="Fold in only the offsets after the last checkpoint even when the log is small enough "
        "that replaying it whole costs less (which the default then does, saying so)")] = False,
    cluster_id: Annotated[str | None, typer.Option(
        "--cluster-id", help="Replay only this cluster (the other clusters' rows are kept as they are)")] = None,
    master: MasterOption = None,
    remote: RemoteOption = None,
    quiet: QuietOption = False,
) -> None:
    """Replay the stored metadata_log into the history tables (partition_history, broker_history, …)."""
    from lakehouse.lake import Lake
    from replay.store.runs import run_replay

    if full and incremental:
        raise typer.BadParameter("--full rebuilds from the start of the log, --incremental from the last checkpoint: "
                                 "give one of them")
    with spark_with_progress(quiet, master, remote) as (stages, spark):
        summary = run_replay(spark, Lake(lake), cluster_id, full=full, progress=stages, incremental=incremental)
    echo_lines(format_replay_summary(summary))


# --- diff ----------------------------------------------------------------------------------------

DIFF_EPILOG = ("Examples:\n\n"
               "  kraft-replay diff --from 4870 --to 4926\n\n"
               "  kraft-replay diff --from 0 --to 5000 --format json | jq -c 'select(.entity == \"broker\")'\n\n"
               "  kraft-replay diff --from 0 --to 5000 --format json | jq -c 'select(.entity == \"config\")'")


def _changes(before: dict[str, Any] | None, after: dict[str, Any] | None) -> str:
    if before is None or after is None:
        whole = after if before is None else before
        assert whole is not None
        return " ".join(f"{k}={cell(v)}" for k, v in whole.items() if v not in (None, [], ""))
    return " ".join(f"{k}: {cell(before.get(k))}→{cell(after.get(k))}"
                    for k in after if before.get(k) != after.get(k))


@query_command
def diff(
    from_offset: Annotated[int, typer.Option("--from", min=0, help="The earlier offset")],
    to_offset: Annotated[int, typer.Option("--to", min=0, help="The later offset")],
    fmt: FormatOption = OutputFormat.table,
    lake: LakeOption = None,
    cluster_id: ClusterOption = None,
    master: MasterOption = None,
    remote: RemoteOption = None,
) -> None:
    """What changed between two offsets: brokers, topics, partitions, features, controllers, configs, client
    quotas, ACLs, SCRAM credentials (a new secret shows as a new fingerprint), delegation tokens and producer ids
    added, removed or changed."""
    from lakehouse.lake import Lake
    from replay.query.image import image_diff as state_diff

    changes = state_diff(spark_session(master, remote), Lake(lake), from_offset, to_offset, cluster_id)
    rows = [(r["entity"], r["key"], r["change"], json.loads(r["before"]) if r["before"] else None,
             json.loads(r["after"]) if r["after"] else None) for r in changes.toLocalIterator()]
    if fmt is OutputFormat.json:
        echo_lines(json.dumps({"entity": e, "key": k, "change": c, "before": b, "after": a},
                               separators=(",", ":")) for e, k, c, b, a in rows)
        return
    lines = [f"{len(rows)} change(s) from offset {from_offset} to {to_offset}"]
    lines += table_lines(("ENTITY", "KEY", "CHANGE", "DETAILS"),
                         [(e, k, c, _changes(b, a)) for e, k, c, b, a in rows])
    echo_lines(lines)


# --- sql -----------------------------------------------------------------------------------------

SQL_EPILOG = ("Every lake table is a view: metadata_log, partition_history, broker_history, topic_history, "
              "replica_history, feature_history, controller_history, config_history, client_quota_history, "
              "acl_history, scram_history, delegation_token_history, producer_id_history, replay_anomalies, "
              "replay_checkpoints; and `changes`, the change log (as `kraft-replay changes` lists it).\n\n"
              "Examples:\n\n"
              "  kraft-replay sql \"SELECT broker_id, fenced FROM broker_history WHERE valid_to_offset IS NULL\"\n\n"
              "  kraft-replay sql \"SELECT * FROM partition_history WHERE topic_name = 'orders' AND "
              "valid_from_offset <= 4925 AND (valid_to_offset IS NULL OR valid_to_offset > 4925)\" --format json")


@query_command
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
    from lakehouse.lake import Lake
    from replay.query.views import json_lines, lake_sql

    result = lake_sql(spark_session(master, remote), Lake(lake), query, cluster_id)
    limited = result.limit(limit + 1) if limit else result
    more = False
    if fmt is OutputFormat.json:
        for count, line in enumerate(json_lines(limited)):
            if limit and count == limit:
                more = True
                break
            sys.stdout.write(line + "\n")
        sys.stdout.flush()
    else:
        rows = limited.collect()
        more = bool(limit) and len(rows) > limit
        rows = rows[:limit] if limit else rows
        plain = [["true" if v is True else "false" if v is False else v for v in r] for r in rows]
        echo_lines([*table_lines(result.columns, plain), f"({len(rows)} row(s))"])
    if more:
        typer.secho(f"note: only the first {limit} rows (raise --limit, or 0 for all)", err=True,
                    fg=typer.colors.YELLOW)


REPLAY_COMMANDS: list[tuple[Callable[..., None], str]] = [
    (replay, REPLAY_EPILOG), (state, STATE_EPILOG), (history, HISTORY_EPILOG), (diff, DIFF_EPILOG),
    (changes, CHANGES_EPILOG), (sql, SQL_EPILOG)]


def standalone_app() -> typer.Typer:
    """The replay commands without the rest of the CLI (tests, subprocesses, before registration)."""
    return commands_app(REPLAY_COMMANDS)


if __name__ == "__main__":
    standalone_app()()
