"""Replay tables collected from Spark or a lake and compared row for row with what another replay (or the
reference fold) gave: shared by tests/test_replay_incremental.py and tests/test_snapshots.py."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from lakehouse.lake import Lake
from lakehouse.tables import DERIVED_TABLES
from records.model import LogEntry
from records.redaction import redact
from replay.fold.engine import TABLE_KEYS
from replay.reference.fold import TABLES as REFERENCE_FOLD_TABLES
from replay.store.runs import ANOMALIES
from tests.table_rows import sorted_rows

TABLES = (*TABLE_KEYS, ANOMALIES)
# the tables the reference fold computes: the ones a comparison with it can check
REFERENCE_TABLES = tuple(name for name in TABLES if name in REFERENCE_FOLD_TABLES)
WITH_DERIVED = (*TABLES, *DERIVED_TABLES)  # the state machines and the audit, rebuilt after every replay


def as_ingested(entries: Iterable[LogEntry], fingerprint_key: bytes | None = None) -> list[LogEntry]:
    """The entries as the lake keeps them (``lakehouse.log_rows.entry_row`` redacts every row): what the reference
    fold must fold to be compared with a Spark replay of the lake."""
    return [redact(entry, fingerprint_key) for entry in entries]


def _collect(df: DataFrame) -> list[dict[str, Any]]:
    return [row.asDict(recursive=True) for row in df.collect()]


def _assert_same(got: dict[str, list[dict[str, Any]]], want: dict[str, list[dict[str, Any]]], what: str,
                 names: tuple[str, ...] = TABLES) -> None:
    for name in names:
        assert len(got[name]) == len(want[name]), f"{what}: {name}: {len(got[name])} vs {len(want[name])} rows"
        assert sorted_rows(got[name]) == sorted_rows(want[name]), f"{what}: {name} differs"


def _lake_tables(spark: SparkSession, lake: Lake) -> dict[str, list[dict[str, Any]]]:
    return {name: _collect(lake.read(spark, name)) for name in WITH_DERIVED if lake.table_exists(name)}


def _by_cluster(tables: dict[str, list[dict[str, Any]]], cluster: str) -> dict[str, list[dict[str, Any]]]:
    return {name: [r for r in rows if r["cluster_id"] == cluster] for name, rows in tables.items()}
