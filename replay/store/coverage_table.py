"""The ``replay_coverage`` table: which offsets each cluster's history answers, from which base, and what the
checks of its later snapshots found. Every replay writes it (``replay.store.runs``); the questions read it
(``replay.query.rules.resolved_offset``) to answer an offset outside the history clearly instead of with an
empty cluster, and SQL users read it beside the history tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lakehouse.lake import Lake
from lakehouse.parquet_files import spark_rows
from lakehouse.tables import REPLAY_COVERAGE, spark_schema
from replay.core.coverage import ClusterCoverage
from replay.store.snapshot_checks import CHECK_KIND


def stored_coverage(lake: Lake) -> dict[str, dict[str, Any]]:
    """Cluster id → its ``replay_coverage`` row (none before the table existed)."""
    if not lake.table_exists(REPLAY_COVERAGE):
        return {}
    return {row["cluster_id"]: row for row in lake.small_rows(REPLAY_COVERAGE)}


def write_coverage(lake: Lake, covered: Mapping[str, ClusterCoverage],
                   counts: Mapping[str, tuple[int, int]]) -> int:
    """Replace the rows of the ``covered`` clusters (``counts``: cluster → (checked, differing) snapshots), keep the
    others, a row per cluster the driver holds and writes; returns the Delta version written."""
    schema = spark_schema(REPLAY_COVERAGE)
    rows = {c: covered[c].row(*counts.get(c, (0, 0))) for c in covered}
    # a row per cluster: the others' rows are kept as stored, read and written back by the driver
    for cluster, row in stored_coverage(lake).items():
        if cluster not in rows:
            rows[cluster] = {name: row.get(name) for name in schema.fieldNames()}
    return lake.write(spark_rows([rows[c] for c in sorted(rows)], schema), REPLAY_COVERAGE, "overwrite")


def coverage_notes(covered: Mapping[str, ClusterCoverage], counts: Mapping[str, tuple[int, int]]) -> list[str]:
    """The replay's note per cluster: the base its history starts from and what the snapshot checks found."""
    notes = []
    for cluster in sorted(covered):
        checked, differing = counts.get(cluster, (0, 0))
        if not checked:
            found = "no later snapshot to check"
        elif not differing:
            found = f"{checked} later snapshot{'s' if checked > 1 else ''} checked against the fold: all agree"
        else:
            found = (f"{differing} of {checked} later snapshots differ from the fold (replay_anomalies, kind "
                     f"{CHECK_KIND})")
        notes.append(f"{covered[cluster].note()}; {found}")
    return notes


__all__ = ["coverage_notes", "stored_coverage", "write_coverage"]
