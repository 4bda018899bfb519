"""Decoding a small segment input on the driver with every core: its bytes cut into runs of slices at batch
boundaries (``lakehouse.spark_decode.slice_boundaries``), the first run decoded by this process and each other run
by a process it forks (decoding is CPU-bound Python: one process uses one core), the rows given back in the log's
order.

A forked process only decodes: it writes its rows as an Arrow IPC stream to a pipe this process reads and ends with
``os._exit``, using nothing else this process holds (its Spark Connect channel, its Delta handles, its exit hooks).
When one fails, this process decodes its run itself: nothing is lost, only the time. No file is left behind, even
when this process is killed (its child's next write fails).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Generator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa

from lakehouse.ingest_plan import SegmentInput
from lakehouse.log_rows import LOG_ROW_SCHEMA, to_record_batches
from lakehouse.spark_decode import decode_slice, slice_boundaries

BATCH_ROWS = 65536  # rows per Arrow batch of the staged Parquet file
# below this many bytes a forked process costs more than it saves
PARALLEL_FROM_BYTES = 1 << 20
MAX_PROCESSES = 8


@dataclass(frozen=True, slots=True)
class Slice:
    """The bytes ``[start, end)`` of a segment, starting and ending on batch boundaries."""

    path: str
    start: int
    end: int
    is_last: bool  # the end of the log's last segment: a partial batch there is the log's tail, not corruption


def processes() -> int:
    """How many processes decode at once: one a core this process may run on."""
    return max(1, min(MAX_PROCESSES, len(os.sched_getaffinity(0))))


def slice_runs(segments: list[SegmentInput], runs: int, from_bytes: int = PARALLEL_FROM_BYTES) -> list[list[Slice]]:
    """The segments' bytes as at most ``runs`` runs of consecutive slices of about equal size, in the log's order
    (one run below ``from_bytes``). A byte range of a segment (follow mode) stays one slice."""
    total = sum(segment.size() for segment in segments)
    if runs <= 1 or total < from_bytes:
        return [[_whole(segment) for segment in segments]]
    share = -(-total // runs)
    slices: list[Slice] = []
    for segment in segments:
        size = segment.path.stat().st_size
        if segment.start != 0 or segment.end not in (None, size):
            slices.append(_whole(segment))
            continue
        ranges = slice_boundaries(str(segment.path), share)
        slices += [Slice(str(segment.path), start, end, segment.is_last and index == len(ranges) - 1)
                   for index, (start, end) in enumerate(ranges)]
    grouped: list[list[Slice]] = [[]]
    filled = 0
    for piece in slices:
        if filled >= share and len(grouped) < runs:
            grouped.append([])
            filled = 0
        grouped[-1].append(piece)
        filled += piece.end - piece.start
    return grouped


def decoded_batches(segments: list[SegmentInput], cluster_id: str, skip_corrupt: bool,
                    fingerprint_key: bytes | None, runs: int | None = None, from_bytes: int = PARALLEL_FROM_BYTES
                    ) -> Generator[pa.RecordBatch, None, None]:
    """The segments' rows (``lakehouse.spark_decode.decode_slice``: records, then each run's issues) as Arrow
    batches in the log's order, ``runs`` runs (``slice_runs``; one a core by default) decoded at once; closed early,
    it stops its processes."""
    grouped = slice_runs(segments, processes() if runs is None else runs, from_bytes)
    children = [_forked(run, cluster_id, skip_corrupt, fingerprint_key) for run in grouped[1:]]
    with ThreadPoolExecutor(max_workers=max(1, len(children)), thread_name_prefix="kraft-replay-decode") as pool:
        try:
            # each child's rows read as it writes them (a pipe holds little): they wait here meanwhile
            streams = [pool.submit(_read, reading) for _pid, reading in children]
            yield from _decoded(grouped[0], cluster_id, skip_corrupt, fingerprint_key)
            for run, (pid, _reading), stream in zip(grouped[1:], list(children), streams, strict=True):
                table = _collected(pid, stream)
                children.remove((pid, _reading))
                if table is None:  # its process failed: decoded here
                    yield from _decoded(run, cluster_id, skip_corrupt, fingerprint_key)
                else:
                    yield from table.to_batches(BATCH_ROWS)
        finally:
            for pid, _reading in children:  # left when this generator is closed or raises: its readers end too
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)


def _whole(segment: SegmentInput) -> Slice:
    end = segment.end if segment.end is not None else segment.path.stat().st_size
    return Slice(str(segment.path), segment.start, end, segment.is_last)


def _decoded(run: list[Slice], cluster_id: str, skip_corrupt: bool,
             fingerprint_key: bytes | None) -> Iterator[pa.RecordBatch]:
    rows = (row for piece in run for row in decode_slice(piece.path, piece.start, piece.end, piece.is_last,
                                                         cluster_id, skip_corrupt, fingerprint_key))
    return to_record_batches(rows, BATCH_ROWS)


def _forked(run: list[Slice], cluster_id: str, skip_corrupt: bool, fingerprint_key: bytes | None
            ) -> tuple[int, int]:
    """A process that writes ``run``'s rows as an Arrow IPC stream to a pipe and ends: its pid, and the pipe's end
    this process reads."""
    reading, writing = os.pipe()
    pid = os.fork()
    if pid != 0:
        os.close(writing)
        return pid, reading
    code = 1
    try:
        os.close(reading)
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # its parent stops it (SIGKILL), never Ctrl-C's handler
        with open(writing, "wb") as sink, pa.ipc.new_stream(sink, LOG_ROW_SCHEMA) as writer:
            for batch in _decoded(run, cluster_id, skip_corrupt, fingerprint_key):
                writer.write_batch(batch)
        code = 0
    finally:
        os._exit(code)  # a parent gone closes the pipe: the next write fails and this ends


def _read(reading: int) -> pa.Table:
    """Every row a child writes to the pipe ``reading`` (closed after)."""
    with open(reading, "rb") as source:
        return pa.ipc.open_stream(source).read_all()


def _collected(pid: int, stream: Future[pa.Table]) -> pa.Table | None:
    """The rows of process ``pid`` once it ended; None when it failed (what it wrote may be cut short)."""
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0 or stream.exception() is not None:
        return None
    return stream.result()


__all__ = ["PARALLEL_FROM_BYTES", "Slice", "decoded_batches", "processes", "slice_runs"]
