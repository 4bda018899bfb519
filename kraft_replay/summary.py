"""What happened in a replayed cluster, in the words an operator uses: the answer `demo`, `run` and `report` give.

Brokers fenced and put into controlled shutdown, partitions that went offline (when, until when, which leader
they lost and the broker event behind it, from the replay's election audit), unclean elections, elections
against Kafka's rule, the worst moments of the cluster's health, and one partition before and during
its incident. The answer is ``replay.query.summary.cluster_summary``'s (only the lines shown reach the driver,
so a log with thousands of incidents prints the first ``limit`` of each kind and how many more there are); this
module words it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from replay.query.rules import iso_ms

if TYPE_CHECKING:
    from pyspark.sql import Row, SparkSession

    from lakehouse.lake import Lake
    from replay.query.summary import Listed

DEFAULT_LIMIT = 10


@dataclass
class Summary:
    """The lines to print, and the incident to look at next (first offline partition and its offset)."""

    lines: list[str] = field(default_factory=list)
    focus: tuple[str, int, int] | None = None  # (topic, partition, offset the partition went offline)


def _section(lines: list[str], title: str, found: Listed, render: Callable[[Row], str], limit: int) -> None:
    """A titled list of the rows shown, with a count of the rest."""
    lines.append(f"  {title}:")
    if not found.rows:
        lines.append("    none")
        return
    for row in found.rows:
        lines.append(f"    {render(row)}")
    if found.total is not None:
        lines.append(f"    … and {found.total - limit:,} more (`kraft-replay sql` lists them all, see "
                     "docs/sql-recipes.md)")


def summarize(spark: SparkSession, lake: Lake, cluster_id: str | None = None, limit: int = DEFAULT_LIMIT) -> Summary:
    """The operator's summary of one cluster of the lake (``cluster_id`` needed only when it holds several)."""
    from replay.query.summary import cluster_summary

    found = cluster_summary(spark, lake, cluster_id, limit)
    summary = Summary(focus=found.focus)
    lines = summary.lines

    def broker_line(verb: str) -> Callable[[Row], str]:
        return lambda r: (f"broker {r['broker_id']} (epoch {r['broker_epoch']}) {verb} at offset "
                          f"{r['valid_from_offset']} ({iso_ms(r['valid_from_time_ms'])}) by {r['cause_type']}")

    _section(lines, "brokers in controlled shutdown", found.shutdowns, broker_line("entered controlled shutdown"),
             limit)
    _section(lines, "brokers fenced", found.fences, broker_line("fenced"), limit)

    def offline_line(row: Row) -> str:
        until = ("still offline at the end of the log" if row["valid_to_offset"] is None
                 else f"until offset {row['valid_to_offset']} ({iso_ms(row['valid_to_time_ms'])}, "
                      f"{row['ended_by']})")
        return (f"{row['topic_name']}-{row['partition_id']}: from offset {row['valid_from_offset']} "
                f"({iso_ms(row['valid_from_time_ms'])}) {until}; {row['reason']}")

    _section(lines, "partitions offline (no leader)", found.offline, offline_line, limit)
    _section(lines, "unclean elections (leader not in the previous ISR: possible data loss)", found.unclean,
             lambda r: (f"{r['topic_name']}-{r['partition_id']}: broker {r['leader']} elected at offset "
                        f"{r['offset']}, previous ISR {r['previous_isr']}, leader epoch "
                        f"{r['leader_epoch']}, recovery state {r['leader_recovery_state']}; "
                        f"{r['unclean_verdict'] or 'configs not replayed'}"), limit)
    _section(lines, "elections against Kafka's rule", found.deviations,
             lambda r: f"{r['topic_name']}-{r['partition_id']} at offset {r['offset']}: {r['deviation']}", limit)

    lines.append("  cluster health at its worst:")
    for metric, label in (("offline", "partitions offline"), ("under_replicated", "partitions under-replicated")):
        peak = found.peaks[metric]
        where = "" if peak.offset is None else f" from offset {peak.offset} ({iso_ms(peak.time_ms)})"
        lines.append(f"    {label} at once: {peak.value}{where}")

    if found.focus is not None:
        topic, pid, _at = found.focus
        for state in found.focus_states:
            for row in state.rows:
                lines.append(f"  {topic}-{pid} {state.label} the incident (offset {state.offset}): leader "
                             f"{row['leader']}, leader epoch {row['leader_epoch']}, ISR {row['isr']}, replicas "
                             f"{row['replicas']}")
    return summary


__all__ = ["DEFAULT_LIMIT", "Summary", "summarize"]
