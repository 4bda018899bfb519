"""Planning an ingest (``lakehouse.ingest_plan``): what a source holds, its cluster id, its chunks."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakehouse.ingest_plan import SegmentInput, plan_source, segment_chunks
from records.errors import RecordsError
from records.writer import write_segments
from tests.test_lake_support import CLUSTER, simulated, write_jsonl_file, write_log_dir


def test_a_data_dir_plans_its_segments_in_order_with_its_cluster_id(tmp_path: Path) -> None:
    log = write_log_dir(tmp_path / "log", simulated()[:300], segment_bytes=4096)
    plan = plan_source(log)
    assert plan.cluster_id == CLUSTER and plan.entry_file is None and plan.snapshots == []
    assert len(plan.segments) > 1
    assert [s.is_last for s in plan.segments] == [False] * (len(plan.segments) - 1) + [True]
    assert [s.path for s in plan.segments] == sorted(s.path for s in plan.segments)
    assert plan_source(log, "given").cluster_id == "given"  # --cluster-id wins over meta.properties
    first = plan.segments[0].path
    single = plan_source(first)  # one segment: the cluster id of the meta.properties above it
    assert single.cluster_id == CLUSTER and single.segments == [SegmentInput(first, True)]


def test_a_log_without_a_cluster_id_needs_one(tmp_path: Path) -> None:
    write_segments(simulated()[:20], tmp_path / "bare" / "__cluster_metadata-0")
    with pytest.raises(RecordsError, match="--cluster-id"):
        plan_source(tmp_path / "bare")


def test_an_entry_file_is_planned_whole_and_checked_row_by_row(tmp_path: Path) -> None:
    path = write_jsonl_file(tmp_path / "a.jsonl", simulated()[:5])
    plan = plan_source(path)
    assert plan.cluster_id is None and plan.segments == [] and plan.entry_file is not None
    assert plan.entry_file[0] == path


def test_segment_chunks_group_consecutive_segments_up_to_the_budget(tmp_path: Path) -> None:
    segments = []
    for index, size in enumerate((10, 20, 30, 5)):
        path = tmp_path / f"{index:020d}.log"
        path.write_bytes(b"x" * size)
        segments.append(SegmentInput(path, index == 3))
    assert segment_chunks(segments, 30) == [segments[:2], [segments[2]], [segments[3]]]
    assert segment_chunks(segments, 8) == [[s] for s in segments]  # a segment over the budget goes alone
    assert segment_chunks(segments, 1000) == [segments]
