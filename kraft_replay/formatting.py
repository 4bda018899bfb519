"""The text of the domain's summaries: what ``ingest`` and ``replay`` print (printing stays out of the domain)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # not at start-up: both modules load pyspark
    from lakehouse.ingest import IngestSummary
    from replay.store.runs import ReplaySummary


def format_ingest_summary(summary: IngestSummary) -> list[str]:
    """What an ingest did, as the CLI prints it."""
    lines = [
        f"ingest {summary.ingest_id} of {summary.source} (cluster {', '.join(summary.cluster_ids) or '?'})",
        f"  records read:              {summary.records_read:,}",
        f"  records added:             {summary.records_added:,}",
        f"  skipped (already present): {summary.records_skipped:,}",
        f"  conflicts:                 {summary.conflicts:,}",
        f"  batch/record issues:       {summary.issues:,}",
        f"  gaps:                      {len(summary.gaps):,}",
        f"  rejects added:             {summary.rejects_added:,}",
    ]
    if summary.snapshot_records_added or summary.snapshot_records_skipped:
        lines.append(f"  snapshot records added:    {summary.snapshot_records_added:,} "
                     f"(skipped {summary.snapshot_records_skipped:,})")
    lines += [f"  gap: cluster {cluster} offsets {first}..{last} missing"
              for cluster, first, last in summary.gaps[:20]]
    versions = ", ".join(f"{table} v{'/'.join(map(str, numbers))}"
                         for table, numbers in sorted(summary.versions.items()))
    lines.append(f"  new table versions:        {versions or 'none'}")
    if summary.commit_retries:
        lines.append(f"  commit retries:            {summary.commit_retries} (another writer committed first)")
    lines += [f"  note: {note}" for note in summary.notes[:20]]
    return lines


def format_replay_summary(summary: ReplaySummary) -> list[str]:
    """What a replay wrote: the clusters and offsets, each table's rows and Delta version, the anomalies."""
    clusters = ", ".join(f"{cluster} (offsets 0..{last})" for cluster, last in sorted(summary.clusters.items()))
    lines = [f"replayed {clusters} from metadata_log v{summary.metadata_log_version} ({summary.mode}) "
             f"in {summary.seconds:.1f}s"]
    width = max(len(name) for name in summary.rows)
    for name, rows in summary.rows.items():
        lines.append(f"  {name:<{width}}  {rows:>12,} rows  v{summary.versions[name]}")
    lines.append(f"  anomalies: {summary.anomalies:,}")
    lines.extend(f"  note: {note}" for note in summary.notes)
    return lines


__all__ = ["format_ingest_summary", "format_replay_summary"]
