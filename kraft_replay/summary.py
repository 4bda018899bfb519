"""What happened in a replayed cluster, in the words an operator uses: the answer `demo`, `run` and `report` give.

Brokers fenced and put into controlled shutdown, partitions that went offline (when, until when, which leader
they lost and the broker event behind it, from the replay's election audit), unclean elections, elections
against Kafka's rule, the worst moments of the cluster's health, and one partition before and during
its incident. Every list is a Spark query of ``replay.query.incidents`` (the ones ``kraft-replay incidents`` asks);
only the lines shown reach the driver, so a log with thousands of incidents prints the first ``limit`` of
each kind and how many more there are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, Row, SparkSession

from lakehouse.lake import Lake
from lakehouse.tables import BROKER_HISTORY, PARTITION_HISTORY
from replay.audit.health import health_series, peaks
from replay.query.incidents import controlled_shutdowns, election_deviations, fences, offline_periods, unclean_elections
from replay.query.rules import OutsideHistory
from replay.query.state import history_table, iso_ms, resolve_cluster, state_at

DEFAULT_LIMIT = 10


@dataclass
class Summary:
    """The lines to print, and the incident to look at next (first offline partition and its offset)."""

    lines: list[str] = field(default_factory=list)
    focus: tuple[str, int, int] | None = None  # (topic, partition, offset the partition went offline)


def _section(lines: list[str], title: str, df: DataFrame, render: Callable[[Row], str], limit: int) -> list[Row]:
    """A titled list of at most ``limit`` rows, with a count of the rest; returns the rows shown."""
    rows = df.limit(limit + 1).collect()
    lines.append(f"  {title}:")
    if not rows:
        lines.append("    none")
        return []
    for row in rows[:limit]:
        lines.append(f"    {render(row)}")
    if len(rows) > limit:
        total = df.count()
        lines.append(f"    … and {total - limit:,} more (`kraft-replay sql` lists them all, see docs/sql-recipes.md)")
    return rows[:limit]


def summarize(spark: SparkSession, lake: Lake, cluster_id: str | None = None, limit: int = DEFAULT_LIMIT) -> Summary:
    """The operator's summary of one cluster of the lake (``cluster_id`` needed only when it holds several)."""
    cluster = resolve_cluster(spark, lake, cluster_id)
    partitions = history_table(spark, lake, PARTITION_HISTORY, cluster)
    brokers = history_table(spark, lake, BROKER_HISTORY, cluster)
    summary = Summary()
    lines = summary.lines

    def broker_line(verb: str) -> Callable[[Row], str]:
        return lambda r: (f"broker {r['broker_id']} (epoch {r['broker_epoch']}) {verb} at offset "
                          f"{r['valid_from_offset']} ({iso_ms(r['valid_from_time_ms'])}) by {r['cause_type']}")

    _section(lines, "brokers in controlled shutdown", controlled_shutdowns(brokers),
             broker_line("entered controlled shutdown"), limit)
    _section(lines, "brokers fenced", fences(brokers), broker_line("fenced"), limit)

    def offline_line(row: Row) -> str:
        until = ("still offline at the end of the log" if row["valid_to_offset"] is None
                 else f"until offset {row['valid_to_offset']} ({iso_ms(row['valid_to_time_ms'])}, "
                      f"{row['ended_by']})")
        return (f"{row['topic_name']}-{row['partition_id']}: from offset {row['valid_from_offset']} "
                f"({iso_ms(row['valid_from_time_ms'])}) {until}; {row['reason']}")

    # The election audit written by the replay (replay/audit/elections.py): periods with the broker event behind each.
    offline = _section(lines, "partitions offline (no leader)", offline_periods(spark, lake, cluster), offline_line,
                       limit)
    _section(lines, "unclean elections (leader not in the previous ISR: possible data loss)",
             unclean_elections(spark, lake, cluster),
             lambda r: (f"{r['topic_name']}-{r['partition_id']}: broker {r['leader']} elected at offset "
                        f"{r['offset']}, previous ISR {r['previous_isr']}, leader epoch "
                        f"{r['leader_epoch']}, recovery state {r['leader_recovery_state']}; "
                        f"{r['unclean_verdict'] or 'configs not replayed'}"), limit)
    _section(lines, "elections against Kafka's rule", election_deviations(spark, lake, cluster),
             lambda r: f"{r['topic_name']}-{r['partition_id']} at offset {r['offset']}: {r['deviation']}", limit)

    worst = peaks(health_series(partitions, brokers))
    lines.append("  cluster health at its worst:")
    for metric, label in (("offline", "partitions offline"), ("under_replicated", "partitions under-replicated")):
        peak = worst[metric]
        where = "" if peak.offset is None else f" from offset {peak.offset} ({iso_ms(peak.time_ms)})"
        lines.append(f"    {label} at once: {peak.value}{where}")

    if offline:
        first = offline[0]
        topic, pid, at = first["topic_name"], first["partition_id"], first["valid_from_offset"]
        summary.focus = (topic, pid, at)
        for label, offset in (("before", at - 1), ("during", at)):
            if offset < 0:
                continue
            try:
                rows = state_at(spark, lake, offset=offset, cluster_id=cluster).only(topic, pid).partitions.collect()
            except OutsideHistory:  # an incident at the start of the history (its base snapshot): no "before"
                continue
            for row in rows:
                lines.append(f"  {topic}-{pid} {label} the incident (offset {offset}): leader {row['leader']}, "
                             f"leader epoch {row['leader_epoch']}, ISR {row['isr']}, replicas {row['replicas']}")
    return summary


__all__ = ["DEFAULT_LIMIT", "Summary", "summarize"]
