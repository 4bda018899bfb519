"""`kraft-replay incidents | whatif`: the election audit and failure what-ifs, for the terminal and for tools.

Register with ``for command, epilog in INCIDENT_COMMANDS: app.command(epilog=epilog)(command)``.
Exit codes as the rest of the CLI: 0 success (also when incidents are found), 2 bad usage, 3 bad input.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kraft_replay.config_commands import STATIC_NOTE, static_configs
from kraft_replay.plumbing import (
    AtTimeOption,
    BrokerConfigOption,
    ClusterOption,
    FormatOption,
    LakeOption,
    MasterOption,
    OutputFormat,
    RemoteOption,
    StaticOption,
    echo_lines,
    query_command,
    spark_session,
    table_lines,
    usage_error,
)
from records.vocabulary import kafka_name

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def _rows(df: DataFrame, columns: Iterable[str]) -> list[dict[str, Any]]:
    """The (small, filtered) answer as dicts, in the DataFrame's order."""
    names = list(columns)
    return [{name: row[name] for name in names} for row in df.select(*names).toLocalIterator()]


def _json(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows under Kafka's names (``kafka_name``: no exception applies to these columns)."""
    return [{kafka_name(column): value for column, value in row.items()} for row in rows]


def _ms(value: int | None) -> str:
    from replay.query.state import iso_ms

    return iso_ms(value) if value is not None else ""


def _duration(ms: int | None) -> str:
    if ms is None:
        return "ongoing"
    seconds = ms / 1000
    return f"{seconds:.1f}s" if seconds < 120 else f"{seconds / 60:.1f}min"


# --- incidents -----------------------------------------------------------------------------------

INCIDENTS_EPILOG = ("Examples:\n\n"
                    "  kraft-replay incidents --lake ./kraft-lake\n\n"
                    "  kraft-replay incidents --from 4800 --to 5000\n\n"
                    "  kraft-replay incidents --format json | jq '.offlinePeriods | length'")
OFFLINE = ("topic_name", "partition_id", "valid_from_offset", "valid_to_offset", "valid_from_time_ms",
           "valid_to_time_ms", "duration_ms", "previous_leader", "isr", "cause", "cause_broker", "cause_offset",
           "cause_type", "ended_by", "new_leader", "reason", "topic_id")
UNCLEAN = ("topic_name", "partition_id", "offset", "time_ms", "leader", "previous_leader", "previous_isr",
           "leader_epoch", "leader_recovery_state", "cause_offset", "deviation", "topic_id",
           "unclean_leader_election_enable", "unclean_leader_election_enable_source", "unclean_verdict")
INVALID = ("machine", "topic_name", "partition_id", "broker_id", "previous_state", "state", "valid_from_offset",
           "valid_from_time_ms", "cause_offset", "cause_type", "reason", "topic_id")
DEVIATION = ("topic_name", "partition_id", "offset", "election_type", "previous_leader", "leader",
             "expected_leader", "deviation", "topic_id")


@query_command
def incidents(
    from_offset: Annotated[int | None, typer.Option("--from", min=0, help="First offset (default: 0)")] = None,
    to_offset: Annotated[int | None, typer.Option("--to", min=0, help="Last offset (default: end of log)")] = None,
    fmt: FormatOption = OutputFormat.table,
    lake: LakeOption = None,
    cluster_id: ClusterOption = None,
    master: MasterOption = None,
    remote: RemoteOption = None,
) -> None:
    """Offline periods (no leader; where each began and ended, and which broker caused it), unclean
    elections, invalid state-machine transitions and elections that break Kafka's rule."""
    from lakehouse.lake import Lake
    from replay.query.incidents import incidents as find

    found = find(spark_session(master, remote), Lake(lake), from_offset, to_offset, cluster_id)
    offline, unclean = _rows(found.offline, OFFLINE), _rows(found.unclean, UNCLEAN)
    invalid, deviations = _rows(found.invalid, INVALID), _rows(found.deviations, DEVIATION)
    if fmt is OutputFormat.json:
        echo_lines([json.dumps({
            "clusterId": found.cluster_id, "fromOffset": found.from_offset, "toOffset": found.to_offset,
            "offlinePeriods": _json(offline), "uncleanElections": _json(unclean),
            "invalidTransitions": _json(invalid), "electionDeviations": _json(deviations)}, default=str)])
        return
    span = f"offsets {found.from_offset}..{'end' if found.to_offset is None else found.to_offset}"
    lines = [f"cluster {found.cluster_id}, {span}", "",
             f"offline periods ({len(offline)}): partitions without a leader"]
    lines += table_lines(
        ("PARTITION", "FROM", "TO", "STARTED (UTC)", "LASTED", "LOST LEADER", "CAUSE", "ENDED BY"),
        [(f"{r['topic_name']}-{r['partition_id']}", r["valid_from_offset"], r["valid_to_offset"],
          _ms(r["valid_from_time_ms"]), _duration(r["duration_ms"]), r["previous_leader"],
          f"broker {r['cause_broker']} {r['cause']} at {r['cause_offset']} ({r['cause_type']})"
          if r["cause"] else r["reason"],
          f"{r['ended_by']} ({r['new_leader']})" if r["new_leader"] is not None else r["ended_by"] or "")
         for r in offline], right=[False, True, True, False, True, True, False, False])
    lines += ["", f"unclean elections ({len(unclean)}): leader not in the previous ISR, possible data loss"]
    lines += table_lines(
        ("PARTITION", "OFFSET", "TIME (UTC)", "NEW LEADER", "PREVIOUS ISR", "L.EPOCH", "RECOVERY", "CONFIG"),
        [(f"{r['topic_name']}-{r['partition_id']}", r["offset"], _ms(r["time_ms"]), r["leader"],
          r["previous_isr"], r["leader_epoch"], r["leader_recovery_state"],
          r["unclean_verdict"] or "configs not replayed") for r in unclean])
    lines += ["", f"invalid state transitions ({len(invalid)})"]
    lines += table_lines(
        ("MACHINE", "PARTITION", "BROKER", "FROM", "TO", "OFFSET", "CAUSE"),
        [(r["machine"], f"{r['topic_name']}-{r['partition_id']}", r["broker_id"], r["previous_state"],
          r["state"], r["valid_from_offset"], f"{r['cause_type']}: {r['reason']}") for r in invalid])
    lines += ["", f"elections that break Kafka's rule ({len(deviations)})"]
    lines += table_lines(
        ("PARTITION", "OFFSET", "TYPE", "LEADER", "EXPECTED", "WHY"),
        [(f"{r['topic_name']}-{r['partition_id']}", r["offset"], r["election_type"],
          f"{r['previous_leader']}→{r['leader']}", r["expected_leader"], r["deviation"]) for r in deviations])
    echo_lines(lines)


# --- whatif --------------------------------------------------------------------------------------

WHATIF_EPILOG = ("Examples:\n\n"
                 "  kraft-replay whatif --offset 4870 --fail-brokers 1\n\n"
                 "  kraft-replay whatif --offset 120000 --fail-brokers 3,5 --unclean --format json\n\n"
                 "unclean.leader.election.enable and min.insync.replicas are each topic's in force at the offset "
                 "(see `kraft-replay configs`); --unclean / --no-unclean override them.")
WHATIF_COLUMNS = ("topic_name", "partition_id", "replicas", "leader", "isr", "leader_after", "isr_after", "outcome",
                  "topic_id", "eligible_leader_replicas", "elr_after", "unclean_allowed", "min_insync_replicas")


def _broker_list(text: str) -> list[int]:
    try:
        brokers = [int(part) for part in text.replace(" ", "").split(",") if part]
    except ValueError:
        usage_error(f"--fail-brokers takes broker ids separated by commas (e.g. 3,5), not {text!r}")
    return brokers


@query_command
def whatif(
    fail_brokers: Annotated[str, typer.Option("--fail-brokers", help="Broker ids that fail, e.g. 3,5")],
    offset: Annotated[int | None, typer.Option("--offset", min=0, help="The state to start from")] = None,
    time: AtTimeOption = None,
    unclean: Annotated[bool | None, typer.Option(
        "--unclean/--no-unclean", help="Allow (or forbid) unclean leader election everywhere, whatever each "
                                       "topic's unclean.leader.election.enable in the log says")] = None,
    broker_config: BrokerConfigOption = None,
    static: StaticOption = None,
    show_all: Annotated[bool, typer.Option("--all", help="List unaffected partitions too")] = False,
    fmt: FormatOption = OutputFormat.table,
    lake: LakeOption = None,
    cluster_id: ClusterOption = None,
    master: MasterOption = None,
    remote: RemoteOption = None,
) -> None:
    """If these brokers failed at that offset: which partitions lose their leader, whom Kafka would elect,
    which go offline or need an unclean election, and the offline and under-replicated counts after."""
    from lakehouse.lake import Lake
    from replay.query.incidents import what_if_at

    brokers = _broker_list(fail_brokers)
    if (offset is None) == (time is None):
        usage_error("give exactly one of --offset N or --time ISO8601")
    at, answer = what_if_at(spark_session(master, remote), Lake(lake), brokers, offset, time, unclean, cluster_id,
                            static_configs(broker_config, static))
    shown = answer.partitions if show_all else answer.affected()
    rows = _rows(shown, WHATIF_COLUMNS)
    if fmt is OutputFormat.json:
        echo_lines([json.dumps({"offset": at, "failedBrokers": sorted(set(brokers)), "unclean": unclean,
                                 "configsFromLog": answer.configs_known,
                                 "summary": {kafka_name(key): count for key, count in answer.summary.items()},
                                 "partitions": _json(rows)})])
        return
    answered = answer.summary
    rule = ("unclean election allowed (--unclean)" if unclean
            else "clean elections only (--no-unclean)" if unclean is not None
            else "each topic's unclean.leader.election.enable as of the offset" if answer.configs_known
            else "no config_history in the lake: Kafka's defaults, clean elections only")
    lines = [f"as of offset {at}, if broker(s) {', '.join(map(str, sorted(set(brokers))))} failed ({rule}):",
             f"  {answered['affected']} of {answered['partitions']} partitions affected; "
             f"{answered['leaders_lost']} lose their "
             f"leader: {answered['clean_elections']} elect a new leader from the ISR, "
             f"{answered['unclean_elections']} "
             f"need an unclean election",
             f"  offline partitions: {answered['offline_before']} → {answered['offline_after']}; under-replicated: "
             f"{answered['under_replicated_before']} → {answered['under_replicated_after']}", ""]
    lines += table_lines(("PARTITION", "REPLICAS", "LEADER", "ISR", "→ LEADER", "→ ISR", "OUTCOME", "UNCLEAN OK",
                          "MIN ISR"),
                         [(f"{r['topic_name']}-{r['partition_id']}", r["replicas"], r["leader"], r["isr"],
                           r["leader_after"], r["isr_after"], r["outcome"], r["unclean_allowed"],
                           r["min_insync_replicas"]) for r in rows])
    if unclean is None:
        lines += ["", f"({STATIC_NOTE})"]
    echo_lines(lines)


INCIDENT_COMMANDS: list[tuple[Callable[..., None], str]] = [(incidents, INCIDENTS_EPILOG), (whatif, WHATIF_EPILOG)]
