"""Reading record batches (records.batch): real KRaft logs, round trips, kafka-python as independent parser,
bad input, fuzz. Shared helpers here serve the tests of framing, compression, record parsing and writing."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from records.batch import BatchIssue, BatchIssueWarning, BatchRecord, RecordBatch, iter_batches
from records.batch_writer import NewRecord, encode_batch
from records.compression import Compression
from records.errors import CorruptBatchError, RecordsError

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
REAL = SHARED / "data" / "real"
CODECS = list(Compression)

# Kafka's control record key: int16 version, int16 type (2 LeaderChange, 3 SnapshotHeader, 4 SnapshotFooter).
LEADER_CHANGE_KEY = b"\x00\x00\x00\x02"
SNAPSHOT_HEADER_KEY = b"\x00\x00\x00\x03"
SNAPSHOT_FOOTER_KEY = b"\x00\x00\x00\x04"


def real_file(relative: str) -> Path:
    path = REAL / relative
    if not path.exists():
        pytest.skip(f"../shared not present: {path} is missing")
    return path


def read_all(data: bytes, source: str = "test.log", *, is_last_segment: bool = True,
             skip_corrupt: bool = False) -> tuple[list[RecordBatch], list[BatchIssue]]:
    issues: list[BatchIssue] = []
    batches = list(iter_batches(io.BytesIO(data), source=source, is_last_segment=is_last_segment,
                                skip_corrupt=skip_corrupt, on_issue=issues.append))
    return batches, issues


def read_path(path: Path) -> tuple[list[RecordBatch], list[BatchIssue]]:
    issues: list[BatchIssue] = []
    with path.open("rb") as stream:
        batches = list(iter_batches(stream, source=str(path), on_issue=issues.append))
    return batches, issues


def offsets(batches: list[RecordBatch]) -> list[int]:
    return [record.offset for batch in batches for record in batch.records]


def assert_contiguous(batches: list[RecordBatch]) -> None:
    """Each batch starts where the previous ended, in the file and in offsets."""
    position = 0
    next_offset = batches[0].base_offset
    for batch in batches:
        assert batch.position == position
        assert batch.base_offset == next_offset
        assert [r.offset for r in batch.records] == list(range(batch.base_offset, batch.last_offset + 1))
        assert all(r.position == batch.position for r in batch.records)
        position += batch.size_in_bytes
        next_offset = batch.last_offset + 1


def sample_records(count: int = 5, value_size: int = 40) -> list[NewRecord]:
    return [NewRecord(key=None if i % 2 else f"k{i}".encode(),
                      value=None if i == 3 else bytes([i % 251]) * (value_size + i),
                      timestamp=1_700_000_000_000 + i * 7 - (20 if i == 2 else 0),
                      headers=(("h", b"v"), ("nul", None), ("ünï", b"")) if i % 3 == 0 else ())
            for i in range(count)]


def generated_log(batch_count: int = 6) -> bytes:
    """A segment with every codec, control and transactional batches and contiguous offsets."""
    parts = []
    offset = 0
    for n in range(batch_count):
        records = sample_records(1 + n % 4)
        parts.append(encode_batch(records, base_offset=offset, partition_leader_epoch=3,
                                  compression=CODECS[n % len(CODECS)], is_transactional=n == 4,
                                  producer_id=7 if n == 4 else -1, producer_epoch=1 if n == 4 else -1,
                                  base_sequence=0 if n == 4 else -1))
        offset += len(records)
    return b"".join(parts)


def recrc(batch: bytes | bytearray) -> bytes:
    """Fix the CRC of a tampered batch so checks behind the CRC are reached."""
    out = bytearray(batch)
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


def expect_record(record: BatchRecord, new: NewRecord, offset: int) -> None:
    assert (record.offset, record.timestamp, record.key, record.value, record.headers) == (
        offset, new.timestamp, new.key, new.value, tuple(new.headers))


# ------------------------------------------------------------------------------------------ real logs


@pytest.mark.real_logs
def test_ldi_poc_segment() -> None:
    path = real_file("ldi-poc/__cluster_metadata-0/00000000000000000000.log")
    batches, issues = read_path(path)
    assert issues == []
    assert len(batches) == 4814
    assert offsets(batches) == list(range(4929))
    assert_contiguous(batches)
    first = batches[0]
    assert first.is_control and first.base_offset == 0 and first.producer_id == -1
    assert first.records[0].key == LEADER_CHANGE_KEY
    assert all(b.magic == 2 and b.compression == Compression.NONE for b in batches)
    assert sum(b.size_in_bytes for b in batches) == path.stat().st_size


@pytest.mark.real_logs
@pytest.mark.parametrize(("name", "records"), [("nurlan-3broker-pre33", 188), ("gani-guru-kafka42", 3513)])
def test_other_real_segments(name: str, records: int) -> None:
    batches, issues = read_path(real_file(f"{name}/__cluster_metadata-0/00000000000000000000.log"))
    assert issues == []
    assert offsets(batches) == list(range(records))
    assert_contiguous(batches)
    assert batches[0].is_control


@pytest.mark.real_logs
@pytest.mark.parametrize(("name", "per_batch"), [("ldi-poc", [1, 1, 1]), ("gani-guru-kafka42", [1, 6, 1])])
def test_bootstrap_checkpoints_are_batches(name: str, per_batch: list[int]) -> None:
    batches, issues = read_path(real_file(f"{name}/bootstrap.checkpoint"))
    assert issues == []
    assert [len(b.records) for b in batches] == per_batch
    assert offsets(batches) == list(range(sum(per_batch)))
    assert [b.is_control for b in batches] == [True, False, True]
    assert batches[0].records[0].key == SNAPSHOT_HEADER_KEY
    assert batches[-1].records[0].key == SNAPSHOT_FOOTER_KEY
    assert all(r.key is None for r in batches[1].records)


@pytest.mark.real_logs
def test_real_segment_matches_kafka_python() -> None:
    """kafka-python, an independent parser, sees the same bytes, CRCs and records as we do."""
    path = real_file("gani-guru-kafka42/__cluster_metadata-0/00000000000000000000.log")
    data = path.read_bytes()
    batches, _ = read_all(data, source=str(path))
    for batch in batches:
        theirs = DefaultRecordBatch(data[batch.position:batch.position + batch.size_in_bytes])
        assert theirs.validate_crc()
        assert (theirs.base_offset, theirs.crc, theirs.is_control_batch) == (
            batch.base_offset, batch.crc, batch.is_control)
        if not batch.is_control:
            assert [(r.offset, r.timestamp, r.key, r.value) for r in theirs] == [
                (r.offset, r.timestamp, r.key, r.value) for r in batch.records]


# ------------------------------------------------------------------------------------------ round trips


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize(("control", "transactional"), [(False, False), (True, False), (False, True)])
def test_round_trip(codec: Compression, control: bool, transactional: bool) -> None:
    records = [*sample_records(8), NewRecord(b"big", bytes(range(256)) * 700, 1_700_000_000_100)]
    data = encode_batch(records, base_offset=100, partition_leader_epoch=9, compression=codec,
                        is_control=control, is_transactional=transactional,
                        producer_id=42 if transactional else -1, producer_epoch=3 if transactional else -1,
                        base_sequence=5 if transactional else -1, timestamp_type=1 if control else 0)
    (batch,), issues = read_all(data)
    assert issues == []
    assert (batch.compression, batch.is_control, batch.is_transactional) == (codec, control, transactional)
    assert (batch.base_offset, batch.last_offset, batch.partition_leader_epoch) == (100, 108, 9)
    assert batch.timestamp_type == (1 if control else 0)
    assert batch.producer_id == (42 if transactional else -1)
    assert batch.base_sequence == (5 if transactional else -1)
    assert batch.max_timestamp == max(r.timestamp for r in records)
    assert batch.base_timestamp == records[0].timestamp
    assert batch.size_in_bytes == len(data)
    for i, (record, new) in enumerate(zip(batch.records, records, strict=True)):
        expect_record(record, new, 100 + i)


records_strategy = st.lists(
    st.builds(
        NewRecord,
        key=st.none() | st.binary(max_size=40),
        value=st.none() | st.binary(max_size=300),
        timestamp=st.integers(min_value=-(2**40), max_value=2**40),
        headers=st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=20)),
                         max_size=3).map(tuple),
    ),
    min_size=1, max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(records=records_strategy, codec=st.sampled_from(CODECS), base_offset=st.integers(0, 2**62),
       epoch=st.integers(-1, 2**31 - 1), control=st.booleans())
def test_round_trip_property(records: list[NewRecord], codec: Compression, base_offset: int, epoch: int,
                             control: bool) -> None:
    data = encode_batch(records, base_offset=base_offset, partition_leader_epoch=epoch, compression=codec,
                        is_control=control)
    (batch,), issues = read_all(data)
    assert issues == []
    assert (batch.partition_leader_epoch, batch.is_control, batch.compression) == (epoch, control, codec)
    for i, (record, new) in enumerate(zip(batch.records, records, strict=True)):
        expect_record(record, new, base_offset + i)


# ------------------------------------------------------------------------------------------ kafka-python


@pytest.mark.parametrize("codec", CODECS)
def test_we_read_what_kafka_python_writes(codec: Compression) -> None:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=int(codec), is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 22)
    records = sample_records(10, value_size=9000)
    for i, record in enumerate(records):
        assert builder.append(i, record.timestamp, record.key, record.value, list(record.headers)) is not None
    (batch,), issues = read_all(bytes(builder.build()))
    assert issues == [] and batch.compression == codec
    for i, (record, new) in enumerate(zip(batch.records, records, strict=True)):
        expect_record(record, new, i)


# ------------------------------------------------------------------------------------------ bad input


def three_batches() -> tuple[bytes, list[int]]:
    """Three uncompressed batches (offsets 0-4, 5-9, 10-14) and their byte positions."""
    parts = [encode_batch(sample_records(), base_offset=5 * n, partition_leader_epoch=1) for n in range(3)]
    positions = [0, len(parts[0]), len(parts[0]) + len(parts[1])]
    return b"".join(parts), positions


def corrupt_at(data: bytes, index: int) -> bytes:
    out = bytearray(data)
    out[index] ^= 0x40
    return bytes(out)


def test_crc_mismatch_names_file_position_and_offset() -> None:
    data, positions = three_batches()
    bad = corrupt_at(data, positions[1] + 70)
    with pytest.raises(CorruptBatchError) as caught:
        read_all(bad, source="/logs/00000000000000000000.log")
    error = caught.value
    assert isinstance(error, RecordsError)
    assert (error.source, error.position, error.base_offset) == (
        "/logs/00000000000000000000.log", positions[1], 5)
    text = str(error)
    assert text.startswith(f"/logs/00000000000000000000.log: corrupt record batch at byte {positions[1]} "
                           "(base offset 5): CRC-32C mismatch: stored 0x")
    assert ", computed 0x" in text


def test_unknown_magic() -> None:
    data, positions = three_batches()
    bad = bytearray(data)
    bad[positions[1] + 16] = 1
    with pytest.raises(CorruptBatchError, match=r"byte \d+ \(base offset 5\): unknown magic 1, expected 2"):
        read_all(bytes(bad))


def test_skip_corrupt_lists_every_skipped_batch() -> None:
    data, positions = three_batches()
    bad = corrupt_at(corrupt_at(data, positions[0] + 80), positions[2] + 75)
    batches, issues = read_all(bad, skip_corrupt=True)
    assert offsets(batches) == list(range(5, 10))
    assert [(i.kind, i.position, i.base_offset) for i in issues] == [
        ("skipped-corrupt", positions[0], 0), ("skipped-corrupt", positions[2], 10)]
    assert all("CRC-32C mismatch" in i.message for i in issues)


def test_issues_without_a_callback_are_warnings() -> None:
    data, _ = three_batches()
    with pytest.warns(BatchIssueWarning, match="partial record batch"):
        batches = list(iter_batches(io.BytesIO(data[:-5]), source="x.log"))
    assert offsets(batches) == list(range(10))


def test_reads_in_small_pieces_from_unbuffered_streams() -> None:
    """A raw stream may return fewer bytes than asked; the reader must keep reading."""

    class Trickle(io.RawIOBase):
        def __init__(self, data: bytes) -> None:
            self._data = io.BytesIO(data)

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: bytearray) -> int:  # type: ignore[override]
            chunk = self._data.read(min(len(buffer), 7))
            buffer[:len(chunk)] = chunk
            return len(chunk)

    data = generated_log()
    batches = list(iter_batches(Trickle(data), source="trickle"))  # type: ignore[arg-type]
    assert batches == read_all(data, source="trickle")[0]


# ------------------------------------------------------------------------------------------ fuzz


def check_outcome(data: bytes, *, is_last_segment: bool, skip_corrupt: bool) -> None:
    """Batches plus listed issues account for every byte, or a CorruptBatchError explains the stop."""
    events: list[RecordBatch | BatchIssue] = []
    try:
        for batch in iter_batches(io.BytesIO(data), source="fuzz.log", is_last_segment=is_last_segment,
                                  skip_corrupt=skip_corrupt, on_issue=events.append):
            events.append(batch)
    except CorruptBatchError as error:
        assert not skip_corrupt
        assert str(error).startswith(f"fuzz.log: corrupt record batch at byte {error.position}")
        return
    position = 0
    for event in events:
        assert event.position == position
        if isinstance(event, RecordBatch):
            position += event.size_in_bytes
        elif event.kind == "skipped-corrupt":
            position += 12 + struct.unpack_from(">i", data, position + 8)[0]
        else:
            assert event is events[-1]
            return
    assert position == len(data)


def fuzz_sources() -> list[bytes]:
    sources = [generated_log()]
    real = REAL / "nurlan-3broker-pre33/__cluster_metadata-0/00000000000000000000.log"
    if real.exists():
        sources.append(real.read_bytes())
    return sources


FUZZ_SOURCES = fuzz_sources()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), source=st.sampled_from(range(len(FUZZ_SOURCES))), is_last=st.booleans(),
       skip=st.booleans())
def test_fuzz_only_corrupt_batch_errors(data: st.DataObject, source: int, is_last: bool, skip: bool) -> None:
    log = bytearray(FUZZ_SOURCES[source])
    for _ in range(data.draw(st.integers(0, 4), label="flips")):
        index = data.draw(st.integers(0, len(log) - 1), label="flip at")
        log[index] ^= 1 << data.draw(st.integers(0, 7), label="bit")
    mutation = data.draw(st.sampled_from(["none", "truncate", "append"]), label="mutation")
    if mutation == "truncate":
        del log[data.draw(st.integers(0, len(log)), label="truncate at"):]
    elif mutation == "append":
        log += data.draw(st.binary(min_size=1, max_size=120), label="garbage")
    check_outcome(bytes(log), is_last_segment=is_last, skip_corrupt=skip)


# ------------------------------------------------------------------------------------------ segments


def test_reading_is_streaming(tmp_path: Path) -> None:
    """Reads stay bounded by the chunk size however large the file is: memory does not grow with it."""
    batch = encode_batch([NewRecord(None, bytes(2000), 0)] * 50, base_offset=0, partition_leader_epoch=0)
    sizes: list[int] = []

    class Recording(io.BytesIO):
        def read(self, size: int | None = -1) -> bytes:
            sizes.append(-1 if size is None else size)
            return super().read(size)

    stream = Recording(b"".join(_with_offset(batch, 50 * n) for n in range(60)))
    count = sum(len(b.records) for b in iter_batches(stream, source="big.log"))
    assert count == 3000 and len(stream.getvalue()) > 5 * 1024 * 1024
    assert 0 < max(sizes) <= 1024 * 1024 and -1 not in sizes


def _with_offset(batch: bytes, base_offset: int) -> bytes:
    return struct.pack(">q", base_offset) + batch[8:]
