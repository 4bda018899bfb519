"""A small segment input decoded on the driver by several processes (``lakehouse.driver_decode``) gives exactly the
rows, in the same order, that one process gives: real logs, many compressed segments, a corrupt batch with and
without --skip-corrupt, a follow round's byte range."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakehouse import driver_decode
from lakehouse.driver_decode import decoded_batches, slice_runs
from lakehouse.ingest_plan import SegmentInput
from lakehouse.log_rows import LOG_ROW_SCHEMA, ROW_KIND_ERROR, ROW_KIND_ISSUE, ROW_KIND_RECORD
from records.compression import Compression
from records.log_dir import discover
from records.writer import write_segments
from tests.test_cli import sample_entries


def _segments(paths: list[Path]) -> list[SegmentInput]:
    return [SegmentInput(path, index == len(paths) - 1) for index, path in enumerate(paths)]


def _decoded(segments: list[SegmentInput], runs: int, skip_corrupt: bool = False) -> pa.Table:
    """Every byte split however small the input (``from_bytes=0``)."""
    return pa.Table.from_batches(list(decoded_batches(segments, "c1", skip_corrupt, None, runs, from_bytes=0)),
                                 LOG_ROW_SCHEMA)


@pytest.mark.parametrize("name", ["ldi-poc", "nurlan-3broker-pre33", "gani-guru-kafka42"])
def test_real_logs_decode_the_same_in_three_processes(real_log: Callable[[str], Path], name: str) -> None:
    segments = _segments([segment.path for segment in discover(real_log(name)).segments])
    runs = slice_runs(segments, 3, from_bytes=0)
    assert len(runs) == 3 and all(runs)
    assert [piece.is_last for run in runs for piece in run].count(True) == 1 and runs[-1][-1].is_last
    one, three = _decoded(segments, 1), _decoded(segments, 3)
    assert one.num_rows > 100 and set(one.column("row_kind").to_pylist()) == {ROW_KIND_RECORD}
    assert three.equals(one)
    offsets = one.column("offset").to_pylist()
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)


def test_many_compressed_segments_and_a_corrupt_batch(tmp_path: Path) -> None:
    paths = write_segments(list(sample_entries()), tmp_path, compression=Compression.ZSTD, segment_bytes=600)
    assert len(paths) >= 3
    segments = _segments(paths)
    whole = _decoded(segments, 2)
    assert whole.equals(_decoded(segments, 1))
    assert whole.column("offset").to_pylist() == list(range(31))
    damaged = bytearray(paths[1].read_bytes())
    damaged[40] ^= 0xFF
    paths[1].write_bytes(bytes(damaged))
    for skip_corrupt, kind in ((False, ROW_KIND_ERROR), (True, ROW_KIND_ISSUE)):
        one, two = _decoded(segments, 1, skip_corrupt), _decoded(segments, 2, skip_corrupt)
        assert two.equals(one)
        problems = [row for row in one.to_pylist() if row["row_kind"] != ROW_KIND_RECORD]
        assert [row["row_kind"] for row in problems] == [kind]
        assert problems[0]["source_file"] == str(paths[1])


def test_a_follow_rounds_byte_range_stays_one_slice(real_log: Callable[[str], Path]) -> None:
    (segment,) = discover(real_log("ldi-poc")).segments
    whole = _decoded([SegmentInput(segment.path, True)], 1)
    positions = whole.column("source_position").to_pylist()
    cut = positions[whole.num_rows // 2]  # a batch's position: the tail starts with its first record
    tail = [SegmentInput(segment.path, True, start=cut)]
    runs = slice_runs(tail, 2, from_bytes=0)
    assert [[(piece.start, piece.end) for piece in run] for run in runs] == [[(cut, segment.path.stat().st_size)]]
    assert _decoded(tail, 2).equals(whole.slice(positions.index(cut)))


def _no_child_left() -> bool:
    """This process has no child, running or unreaped."""
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_a_run_whose_process_fails_is_decoded_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A forked process that fails (here its reads, made to fail in the children only) costs only time: this process
    decodes its run itself, and every row comes back once, in order."""
    paths = write_segments(list(sample_entries()), tmp_path, segment_bytes=600)
    segments = _segments(paths)
    alone = _decoded(segments, 1)
    parent, decode = os.getpid(), driver_decode.decode_slice

    def failing_in_children(path: str, *args: Any) -> Iterator[dict[str, object]]:
        if os.getpid() != parent:
            raise OSError(f"{path}: a forked process's read failed")
        return decode(path, *args)

    monkeypatch.setattr(driver_decode, "decode_slice", failing_in_children)
    assert _decoded(segments, 3).equals(alone)
    assert alone.column("offset").to_pylist() == list(range(31))
    assert _no_child_left()


def test_a_decode_stopped_early_leaves_no_process(tmp_path: Path) -> None:
    """The reader stops after the first rows (an ingest that fails on them, or a Ctrl-C): the forked processes are
    stopped and reaped."""
    paths = write_segments(list(sample_entries()), tmp_path, segment_bytes=600)
    batches = decoded_batches(_segments(paths), "c1", False, None, 3, from_bytes=0)
    first = next(batches)
    assert first.num_rows > 0 and first.column("offset").to_pylist()[0] == 0
    batches.close()
    assert _no_child_left()
