"""Builders shared by the lake tests (no tests here): simulated logs as segments or JSON lines, the offsets a
lake holds."""

from __future__ import annotations

import functools
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable

from lakehouse.lake import Lake
from lakehouse.tables import METADATA_LOG
from records.jsonl import write_jsonl
from records.model import LogEntry
from records.writer import write_meta_properties, write_segments
from simulator import ScenarioOptions, run_scenario

CLUSTER = "simClusterAAAAAAAAAAAA"


@functools.cache
def simulated(events: int = 200, seed: int = 1) -> tuple[LogEntry, ...]:
    """A realistic, deterministic log (the simulator's random mix of cluster events)."""
    return tuple(run_scenario("random", ScenarioOptions(events=events, seed=seed)).entries())


def write_log_dir(root: Path, entries: list[LogEntry] | tuple[LogEntry, ...], cluster_id: str = CLUSTER,
                  segment_bytes: int = 1 << 30) -> Path:
    """A Kafka data dir: meta.properties + __cluster_metadata-0/*.log; returns the data dir."""
    write_meta_properties(root, cluster_id=cluster_id, node_id=1)
    write_segments(entries, root / "__cluster_metadata-0", segment_bytes=segment_bytes)
    return root


def write_jsonl_file(path: Path, entries: list[LogEntry] | tuple[LogEntry, ...]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        write_jsonl(entries, out)
    return path


def stored_offsets(lake: Lake, cluster_id: str | None = None) -> list[int]:
    table = pa.table(DeltaTable(lake.path(METADATA_LOG)).to_pyarrow_table(columns=["cluster_id", "offset"]))
    return sorted(o for c, o in zip(table.column("cluster_id").to_pylist(), table.column("offset").to_pylist(),
                                    strict=True) if cluster_id is None or c == cluster_id)
