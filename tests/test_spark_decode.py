"""Segments decoded in parallel by Spark tasks give exactly what the single-process reader gives."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from lakehouse.log_rows import ROW_KIND_ERROR, entry_row
from lakehouse.spark_decode import SegmentFile, decode_segments, decode_slice, slice_boundaries
from records.compression import Compression
from records.log_dir import discover
from records.sources import read_entries
from records.writer import write_segments
from tests.test_batch import three_batches
from tests.test_cli import sample_entries
from tests.test_framing import BAD_LENGTHS, damaged_log, expected_error

pytestmark = pytest.mark.spark


def _segments(path: Path) -> tuple[list[SegmentFile], str | None]:
    layout = discover(path)
    last = len(layout.segments) - 1
    return [SegmentFile(str(s.path), i == last) for i, s in enumerate(layout.segments)], layout.cluster_id


def _local_rows(path: Path, cluster_id: str | None) -> list[dict]:
    return [entry_row(e, cluster_id) for e in read_entries(path)]


@pytest.mark.parametrize("name", ["ldi-poc", "nurlan-3broker-pre33", "gani-guru-kafka42"])
def test_real_logs_decode_the_same_on_spark(spark: SparkSession, real_log: Callable[[str], Path],
                                             name: str) -> None:
    path = real_log(name)
    segments, cluster_id = _segments(path)
    # A small split size forces several slices (tasks) inside the one real segment.
    df = decode_segments(spark, segments, cluster_id=cluster_id, split_bytes=32 * 1024)
    rows = [r.asDict() for r in df.orderBy("offset").collect()]
    assert {r["row_kind"] for r in rows} == {"record"}
    assert rows == _local_rows(path, cluster_id)


def test_slices_cut_at_batch_boundaries(real_log: Callable[[str], Path]) -> None:
    segment = real_log("ldi-poc") / "__cluster_metadata-0" / "00000000000000000000.log"
    ranges = slice_boundaries(str(segment), 50_000)
    assert len(ranges) == 8
    assert ranges[0][0] == 0 and ranges[-1][1] == segment.stat().st_size == 353439
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))


def test_many_compressed_segments_and_a_corrupt_batch(spark: SparkSession, tmp_path: Path) -> None:
    entries = list(sample_entries())
    paths = write_segments(entries, tmp_path, compression=Compression.ZSTD, segment_bytes=600)
    assert len(paths) >= 3
    segments = [SegmentFile(str(p), i == len(paths) - 1) for i, p in enumerate(paths)]
    rows = decode_segments(spark, segments, cluster_id="c1", split_bytes=300).orderBy("offset").collect()
    assert [r["offset"] for r in rows] == list(range(31))
    assert rows[23]["record_type"] == "BrokerRegistrationChangeRecord"
    assert rows[23]["payload_json"] == '{"brokerId":2,"brokerEpoch":6,"fenced":1}'
    # Damage the second segment: without --skip-corrupt its slice reports one error row naming it.
    damaged = bytearray(paths[1].read_bytes())
    damaged[40] ^= 0xFF
    paths[1].write_bytes(bytes(damaged))
    result = decode_segments(spark, segments, cluster_id="c1", split_bytes=300)
    errors = result.where("row_kind = 'error'").collect()
    assert len(errors) == 1 and str(paths[1]) in errors[0]["message"] and "CRC-32C" in errors[0]["message"]
    skipped = decode_segments(spark, segments, cluster_id="c1", skip_corrupt=True, split_bytes=300)
    issues = skipped.where("row_kind = 'issue'").collect()
    assert len(issues) == 1 and issues[0]["source_position"] == 0 and issues[0]["source_file"] == str(paths[1])
    kept = skipped.where("row_kind = 'record'").count()
    first_batch_of_second = sum(1 for e in entries if e.offset >= int(paths[1].stem))
    assert 0 < kept < 31 and kept <= 31 - 1 and first_batch_of_second > 0


@pytest.mark.parametrize("name", BAD_LENGTHS)
def test_slices_and_their_decoding_agree_with_the_scan_on_zero_or_short_length(name: str, tmp_path: Path) -> None:
    """Planning stops before the corrupt batch (the scan's rule) and the slice that holds it reports the very
    error the reader raises, naming file, position and length."""
    data, position = damaged_log(BAD_LENGTHS[name])
    path = tmp_path / "test.log"
    path.write_bytes(data)
    ranges = slice_boundaries(str(path), 100)
    assert ranges[-1] == (position, len(data)) and all(end <= position for _, end in ranges[:-1])
    rows = [row for start, end in ranges
            for row in decode_slice(str(path), start, end, end == len(data), "c1", skip_corrupt=False)]
    assert [row["offset"] for row in rows if row["row_kind"] == "record"] == list(range(10))
    (error,) = [row for row in rows if row["row_kind"] == ROW_KIND_ERROR]
    assert error["source_position"] == position
    assert error["message"] == expected_error(BAD_LENGTHS[name], position).replace("test.log", str(path))


def test_slices_end_before_a_partial_batch_as_the_scan_does(tmp_path: Path) -> None:
    data, positions = three_batches()
    path = tmp_path / "tail.log"
    path.write_bytes(data[:positions[2] + 40])
    ranges = slice_boundaries(str(path), 100)
    assert [end for _, end in ranges] == [positions[1], positions[2], positions[2] + 40]
