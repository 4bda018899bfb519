"""`kraft-replay report`: the plots of a replayed cluster, and one HTML page that holds them all.

The page embeds its images (``data:`` URIs), so ``index.html`` alone can be mailed or attached to an incident
ticket; the PNG files sit beside it for slides. The series come from ``replay.audit.health`` (Spark aggregates over
the history tables), the text from ``kraft_replay.summary``.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pyspark.sql import SparkSession

from kraft_replay.plots import broker_fencing_figure, cluster_health_figure, partition_timeline_figure, save_png
from kraft_replay.summary import Summary, summarize
from lakehouse.lake import Lake
from lakehouse.tables import BROKER_HISTORY, PARTITION_HISTORY
from replay.audit.health import (
    broker_spans,
    busiest_partition,
    collect_broker_spans,
    collect_health,
    collect_timeline,
    health_series,
    health_window,
    partition_timeline,
)
from replay.query.log_offsets import append_times, offset_bounds
from replay.query.state import QueryError, history_table, iso_ms, resolve_cluster

PLOTS = ("partition_timeline", "cluster_health", "broker_fencing")
Progress = Callable[[str], None]


@dataclass(frozen=True)
class Report:
    """What `write_report` wrote, and the choices it made."""

    root: Path
    html: Path
    images: dict[str, Path]
    cluster_id: str
    from_offset: int
    to_offset: int
    topic: str
    partition: int
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"report of cluster {self.cluster_id}, offsets {self.from_offset}..{self.to_offset}"]
        out += [f"  {note}" for note in self.notes]
        out += [f"  {name}: {path}" for name, path in self.images.items()]
        out.append(f"  open {self.html}")
        return out


def write_report(spark: SparkSession, lake: Lake, out: Path, *, cluster_id: str | None = None,
                 from_offset: int | None = None, to_offset: int | None = None, topic: str | None = None,
                 partition: int | None = None, summary: Summary | None = None,
                 progress: Progress | None = None) -> Report:
    """Write the three PNG plots and ``index.html`` into ``out``. Without ``topic``/``partition`` the
    timeline shows the partition whose leader changed most (the report says so)."""
    tell = progress or (lambda _message: None)
    if (topic is None) != (partition is None):
        raise QueryError("give both --topic and --partition, or neither (then the partition with the most "
                         "leader changes is shown)")
    cluster = resolve_cluster(spark, lake, cluster_id)
    first, last = offset_bounds(spark, lake, cluster)
    start = first if from_offset is None else from_offset
    end = last if to_offset is None else to_offset
    if start > end:
        raise QueryError(f"--from {start} is after --to {end}: the log of cluster {cluster} holds offsets "
                         f"{first}..{last}")
    partitions = history_table(spark, lake, PARTITION_HISTORY, cluster)
    brokers = history_table(spark, lake, BROKER_HISTORY, cluster)
    notes: list[str] = []
    if topic is None or partition is None:
        busiest = busiest_partition(partitions)
        if busiest is None:
            raise QueryError(f"no partition in partition_history of cluster {cluster}: nothing to plot")
        topic, partition, changes = busiest
        notes.append(f"partition timeline: {topic}-{partition}, the partition with the most leader changes "
                     f"({changes}); choose another with --topic and --partition")
    anchors = append_times(spark, lake, cluster, sorted({start, end}))
    images: dict[str, Path] = {}

    tell(f"plotting the timeline of {topic}-{partition}")
    timeline = partition_timeline(partitions, topic, partition)
    points = collect_timeline(timeline, start, end)
    if not points and timeline.isEmpty():
        raise QueryError(f"no partition {topic}-{partition} in partition_history of cluster {cluster}: "
                         "`kraft-replay state --offset N` lists the partitions")
    images["partition_timeline"] = save_png(partition_timeline_figure(
        points, title=f"{topic}-{partition}: leader, leader epoch and ISR", start=start, end=end, anchors=anchors),
        out / "partition_timeline.png")

    tell("computing the cluster's health over time")
    health = collect_health(health_window(health_series(partitions, brokers), start, end))
    images["cluster_health"] = save_png(cluster_health_figure(
        health, start=start, end=end, anchors=anchors, title=f"cluster {cluster}: health"),
        out / "cluster_health.png")

    tell("plotting the brokers' fencing")
    spans = collect_broker_spans(broker_spans(brokers), start, end)
    images["broker_fencing"] = save_png(broker_fencing_figure(
        spans, start=start, end=end, anchors=anchors, title=f"cluster {cluster}: broker fencing"),
        out / "broker_fencing.png")

    if summary is None:
        tell("summarizing what happened")
        summary = summarize(spark, lake, cluster)
    page = out / "index.html"
    page.write_text(_html(cluster, start, end, anchors, notes, images, summary), encoding="utf-8")
    return Report(out.resolve(), page.resolve(), {k: v.resolve() for k, v in images.items()}, cluster, start, end,
                  topic, partition, notes)


CAPTIONS = {
    "partition_timeline": "Partition timeline: the leader (shaded: no leader), the leader epoch, and the ISR "
                          "size against the replica count.",
    "cluster_health": "Cluster health: partitions without a leader, led partitions whose ISR is smaller than "
                      "their replicas, and fenced brokers, after each offset.",
    "broker_fencing": "Broker fencing: each broker's registration state along the log.",
}


def _html(cluster: str, start: int, end: int, anchors: list[tuple[int, int]], notes: list[str],
          images: dict[str, Path], summary: Summary) -> str:
    times = dict(anchors)
    span = f"offsets {start} ({iso_ms(times.get(start))}) to {end} ({iso_ms(times.get(end))})"
    figures = []
    for name, path in images.items():
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        figures.append(f'<figure id="{name}"><img alt="{name}" src="data:image/png;base64,{data}">'
                       f"<figcaption>{html.escape(CAPTIONS[name])} "
                       f'(<a href="{html.escape(path.name)}">{html.escape(path.name)}</a>)</figcaption></figure>')
    note_items = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
    made = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>kraft-replay report: {html.escape(cluster)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1150px; color: #222; }}
figure {{ margin: 2em 0; }} img {{ max-width: 100%; border: 1px solid #ddd; }}
figcaption {{ color: #555; font-size: 0.9em; }} pre {{ background: #f6f8fa; padding: 1em; overflow-x: auto; }}
</style></head><body>
<h1>Cluster {html.escape(cluster)}</h1>
<p>{html.escape(span)}. Made by kraft-replay on {made}.</p>
<ul>{note_items}</ul>
<h2>What happened (the whole log)</h2>
<pre>{html.escape(chr(10).join(summary.lines))}</pre>
<h2>Plots</h2>
{chr(10).join(figures)}
</body></html>
"""


__all__ = ["PLOTS", "Report", "write_report"]
