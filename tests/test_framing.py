"""The one batch-boundary scan (records.framing.BatchScan): what a complete batch is, what ends a scan and
what is corrupt, as Kafka's log input streams decide it; the reader, the Spark slice planner
(tests/test_spark_decode.py) and the follower (tests/test_follow.py) must all agree with it."""

from __future__ import annotations

import io
import struct

import pytest

from records.errors import CorruptBatchError, TruncatedTailWarning
from records.framing import LOG_OVERHEAD, MIN_BATCH_LENGTH, BatchScan, IncompleteBatch
from tests.test_batch import offsets, read_all, three_batches

#: Lengths below Kafka's minimum: zero (``RECORD_OVERHEAD_V0`` rejects it) and short of a v2 header.
BAD_LENGTHS = {"zero": 0, "short": 20}


def damaged_log(length: int) -> tuple[bytes, int]:
    """Three batches whose third declares ``length``; (the bytes, the third batch's position)."""
    data, positions = three_batches()
    bad = bytearray(data)
    struct.pack_into(">i", bad, positions[2] + 8, length)
    return bytes(bad), positions[2]


def scan_outcome(data: bytes, *, read_bodies: bool) -> tuple[list[tuple[int, int, int]], int, str | None]:
    """The scan's frames (position, base offset, length), where complete batches end, and its error."""
    scan = BatchScan(io.BytesIO(data), source="test.log", read_bodies=read_bodies)
    frames: list[tuple[int, int, int]] = []
    try:
        frames.extend((f.position, f.base_offset, f.batch_length) for f in scan)
    except CorruptBatchError as error:
        return frames, scan.position, str(error)
    return frames, scan.position, None


def expected_error(length: int, position: int) -> str:
    return (f"test.log: corrupt record batch at byte {position} (base offset 10): impossible length {length} "
            f"(a v2 batch has {MIN_BATCH_LENGTH} to {128 * 1024 * 1024} bytes after the length field); "
            "cannot find the next batch")


@pytest.mark.parametrize("read_bodies", [True, False])
def test_scan_yields_each_batch_position_base_offset_and_length(read_bodies: bool) -> None:
    data, positions = three_batches()
    frames, end, error = scan_outcome(data, read_bodies=read_bodies)
    lengths = [b - a - LOG_OVERHEAD for a, b in zip(positions, [*positions[1:], len(data)], strict=True)]
    assert frames == [(p, 5 * n, lengths[n]) for n, p in enumerate(positions)]
    assert (end, error) == (len(data), None)


@pytest.mark.parametrize("read_bodies", [True, False])
def test_scan_frames_hold_their_bytes_only_when_bodies_are_read(read_bodies: bool) -> None:
    data, positions = three_batches()
    frame = list(BatchScan(io.BytesIO(data), source="m", read_bodies=read_bodies))[1]
    held = frame.data[frame.start:frame.start + frame.size]
    assert held == (data[positions[1]:positions[2]] if read_bodies else b"")


@pytest.mark.parametrize("name", BAD_LENGTHS)
@pytest.mark.parametrize("read_bodies", [True, False])
def test_zero_or_short_length_is_corrupt_as_in_kafka(name: str, read_bodies: bool) -> None:
    """Kafka's ``FileLogInputStream.nextBatch`` throws ``CorruptRecordException`` for a size below the
    minimum record overhead: a zero length is corruption, not the end of the log."""
    data, position = damaged_log(BAD_LENGTHS[name])
    frames, end, error = scan_outcome(data, read_bodies=read_bodies)
    assert [f[1] for f in frames] == [0, 5] and end == position
    assert error == expected_error(BAD_LENGTHS[name], position)


@pytest.mark.parametrize("name", BAD_LENGTHS)
def test_the_reader_agrees_with_the_scan_on_zero_or_short_length(name: str) -> None:
    data, position = damaged_log(BAD_LENGTHS[name])
    with pytest.raises(CorruptBatchError) as caught:
        read_all(data)
    assert str(caught.value) == expected_error(BAD_LENGTHS[name], position)
    batches, issues = read_all(data, skip_corrupt=True)
    assert offsets(batches) == list(range(10))
    assert [(i.kind, i.position, i.message) for i in issues] == [
        ("stopped-corrupt", position, expected_error(BAD_LENGTHS[name], position))]


@pytest.mark.parametrize("keep", [0, 3, 10, 16, 40])
@pytest.mark.parametrize("read_bodies", [True, False])
def test_a_partial_batch_ends_the_scan_without_error(keep: int, read_bodies: bool) -> None:
    """A batch still being written (or a crash's tail) is not corrupt: the scan ends before it."""
    data, positions = three_batches()
    scan = BatchScan(io.BytesIO(data[:positions[2] + keep]), source="tail.log", read_bodies=read_bodies)
    assert [f.base_offset for f in scan] == [0, 5]
    assert scan.position == positions[2]
    expected = None if keep == 0 else IncompleteBatch(
        positions[2], 10 if keep >= 8 else None, keep, None if keep < LOG_OVERHEAD else len(data) - positions[2])
    assert scan.incomplete == expected


def test_header_scan_starts_and_ends_where_asked() -> None:
    data, positions = three_batches()
    scan = BatchScan(io.BytesIO(data), source="m", read_bodies=False, start=positions[1], end=positions[2] + 30)
    assert [f.position for f in scan] == [positions[1]]
    assert scan.position == positions[2] and scan.incomplete is not None
    assert scan.incomplete.bytes_present == 30


@pytest.mark.parametrize("length", [0, 48, -1, 2**31 - 1])
def test_impossible_length(length: int) -> None:
    data, positions = three_batches()
    bad = bytearray(data)
    struct.pack_into(">i", bad, positions[2] + 8, length)
    with pytest.raises(CorruptBatchError, match=f"test.log: corrupt record batch at byte {positions[2]} "
                                                f"\\(base offset 10\\): impossible length {length}"):
        read_all(bytes(bad))
    batches, issues = read_all(bytes(bad), skip_corrupt=True)
    assert offsets(batches) == list(range(10))
    assert [i.kind for i in issues] == ["stopped-corrupt"]
    assert issues[0].position == positions[2] and issues[0].base_offset == 10
    assert isinstance(issues[0].detail, CorruptBatchError)


def test_batch_cut_short_in_a_segment_that_is_not_the_last() -> None:
    data, positions = three_batches()
    cut = data[:positions[1] + 30]
    with pytest.raises(CorruptBatchError) as caught:
        read_all(cut, source="00000000000000000000.log", is_last_segment=False)
    assert str(caught.value).startswith(
        f"00000000000000000000.log: corrupt record batch at byte {positions[1]} (base offset 5): "
        "batch cut short")
    batches, issues = read_all(cut, is_last_segment=False, skip_corrupt=True)
    assert offsets(batches) == list(range(5))
    assert [i.kind for i in issues] == ["stopped-corrupt"]


@pytest.mark.parametrize("keep", [3, 10, 40, 100])
def test_truncated_tail_of_last_segment_is_reported_not_raised(keep: int) -> None:
    data, positions = three_batches()
    cut = data[:positions[2] + keep]
    batches, issues = read_all(cut, source="tail.log")
    assert offsets(batches) == list(range(10))
    (issue,) = issues
    assert (issue.kind, issue.source, issue.position) == ("truncated-tail", "tail.log", positions[2])
    detail = issue.detail
    assert isinstance(detail, TruncatedTailWarning)
    assert detail.bytes_present == keep
    assert detail.base_offset == (10 if keep >= 8 else None)
    assert detail.bytes_expected == (None if keep < 12 else len(data) - positions[2])
    assert "tail.log" in issue.message and f"byte {positions[2]}" in issue.message

