"""The lake's commit layer (``lakehouse.lake_commit``): Delta's optimistic concurrency, one retry loop for
every writer that retries, the same words when it gives up."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import deltalake
import pytest
from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError
from pyspark.sql import SparkSession

import lakehouse.ingest as ingest_module
import lakehouse.lake_commit as lake_commit
from lakehouse.delta_commit import commit_at_version
from lakehouse.ingest import IngestOptions, ingest
from lakehouse.lake import MAX_COMMIT_ATTEMPTS, Lake, LakeError
from lakehouse.lake_commit import CONFLICT, Conflict
from lakehouse.spark import DELTA_RS
from lakehouse.tables import AVRO_SCHEMAS, METADATA_LOG, SCHEMAS
from tests.test_lake_support import CLUSTER, simulated, stored_offsets, write_jsonl_file


def test_commit_is_refused_when_another_writer_committed_first(spark: SparkSession, tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    lake.ensure_table(METADATA_LOG)
    stale = DeltaTable(lake.path(METADATA_LOG))
    ingest(spark, lake, write_jsonl_file(tmp_path / "a.jsonl", simulated()[:10]), IngestOptions(cluster_id=CLUSTER))
    with pytest.raises(CommitFailedError):
        commit_at_version(stale, [], SCHEMAS[METADATA_LOG])


def test_ingest_retries_and_deduplicates_after_losing_a_commit_race(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The other writer commits between our read (dedup) and our commit: we must re-read and re-dedup."""
    entries = simulated()
    lake = Lake(tmp_path / "lake")
    ours = write_jsonl_file(tmp_path / "ours.jsonl", entries[:300])
    theirs = write_jsonl_file(tmp_path / "theirs.jsonl", entries[200:400])
    real = ingest_module.overlapping_files
    raced: list[int] = []

    def racing(table: DeltaTable, ranges: dict[str, tuple[int, int]]) -> list[str]:
        files = real(table, ranges)
        if not raced and table.table_uri.rstrip("/").endswith(METADATA_LOG):
            raced.append(table.version())
            ingest(spark, lake, theirs, IngestOptions(cluster_id=CLUSTER))  # commits the next version
        return files

    monkeypatch.setattr(ingest_module, "overlapping_files", racing)
    summary = ingest(spark, lake, ours, IngestOptions(cluster_id=CLUSTER))
    assert raced == [0]
    assert (summary.records_added, summary.records_skipped, summary.conflicts) == (200, 100, 0)
    assert stored_offsets(lake) == list(range(400))
    assert [h.operation for h in lake.history(METADATA_LOG)][:2] == ["ingest", "ingest"]


def _record_sleeps(monkeypatch: pytest.MonkeyPatch, sleeps: list[float]) -> None:
    """The commit layer's backoff waits, recorded instead of slept (only its own: other threads keep sleeping)."""
    monkeypatch.setattr(lake_commit, "time", SimpleNamespace(sleep=sleeps.append, time=time.time))


def test_commit_with_retry_recomputes_against_each_new_version(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    sleeps: list[float] = []
    _record_sleeps(monkeypatch, sleeps)
    lake = Lake(tmp_path / "lake", engine=DELTA_RS)
    lake.ensure_table(AVRO_SCHEMAS)
    seen: list[tuple[int, int]] = []

    def attempt(table: DeltaTable, number: int) -> str | Conflict:
        seen.append((number, table.version()))
        if number < 3:
            commit_at_version(table, [], SCHEMAS[AVRO_SCHEMAS])  # another writer commits first
            return CONFLICT
        return "committed"

    assert lake.commit_with_retry(AVRO_SCHEMAS, attempt, gave_up="never") == "committed"
    assert seen == [(1, 0), (2, 1), (3, 2)]
    assert len(sleeps) == 2 and 0.05 <= sleeps[0] <= 0.3 and 0.1 <= sleeps[1] <= 0.6


@pytest.mark.parametrize(("cap", "longest"), [(10, 0.3 * 10), (None, 0.3 * MAX_COMMIT_ATTEMPTS)])
def test_commit_with_retry_gives_up_in_the_callers_words(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         cap: int | None, longest: float) -> None:
    sleeps: list[float] = []
    _record_sleeps(monkeypatch, sleeps)
    lake = Lake(tmp_path / "lake", engine=DELTA_RS)
    lake.ensure_table(AVRO_SCHEMAS)
    with pytest.raises(LakeError, match=r"^avro_schemas: gave up$"):
        lake.commit_with_retry(AVRO_SCHEMAS, lambda _table, _number: CONFLICT, gave_up="avro_schemas: gave up",
                               backoff_cap=cap)
    assert len(sleeps) == MAX_COMMIT_ATTEMPTS and max(sleeps) <= longest
    assert (max(sleeps) > 0.3 * 10) == (cap is None)  # uncapped, the last waits grow past the capped maximum


def test_register_schemas_retries_a_lost_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sleeps: list[float] = []
    _record_sleeps(monkeypatch, sleeps)
    real = deltalake.write_deltalake
    calls: list[int] = []

    def losing_once(table: DeltaTable, *args: Any, **kwargs: Any) -> None:
        calls.append(table.version())
        if len(calls) == 1:
            raise CommitFailedError("another writer committed first")
        real(table, *args, **kwargs)

    monkeypatch.setattr(deltalake, "write_deltalake", losing_once)
    lake = Lake(tmp_path / "lake", engine=DELTA_RS)
    assert lake.register_schemas() == 1
    assert calls == [0, 0] and len(sleeps) == 1
    assert lake.register_schemas() is None  # nothing missing: no commit
