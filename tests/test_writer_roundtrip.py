"""Writer ↔ reader: every record type and version, every codec, through real segment files."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch

from records.compression import Compression
from records.definitions import definitions
from records.errors import RecordsError
from records.model import LogEntry, MetadataRecord
from records.sources import ReadOptions, ReadReport, read_entries
from records.writer import snapshot_file_name, write_segments, write_snapshot
from tests.strategies import all_type_versions, record_data


def _entries_for_every_type(draw: st.DataObject, seed: int = 0) -> list[LogEntry]:
    """One entry per (type, version), each drawn from the definitions, in batches of up to 4."""
    rng = random.Random(seed)
    entries = []
    for offset, (type_name, version) in enumerate(all_type_versions()):
        data = draw.draw(record_data(definitions()[type_name], version))
        entries.append(LogEntry(offset=offset, record=MetadataRecord(type_name, version, data),
                                batch_base_offset=offset - offset % 4, raft_leader_epoch=3 + offset // 8,
                                append_time_ms=1_700_000_000_000 + rng.randrange(10_000)))
    return entries


def _normalise(entries: list[LogEntry]) -> list[tuple]:
    return [(e.offset, e.record, e.raft_leader_epoch, e.append_time_ms) for e in entries]


@pytest.mark.parametrize("compression", list(Compression))
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                               HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), data=st.data())
def test_every_type_version_and_codec_round_trips(tmp_path: Path, compression: Compression, seed: int,
                                                  data: st.DataObject) -> None:
    tmp_path = Path(tempfile.mkdtemp(dir=tmp_path))  # one directory per hypothesis example
    entries = _entries_for_every_type(data, seed)
    directory = tmp_path / f"log-{compression.name}-{seed}"
    write_segments(entries, directory, compression=compression, segment_bytes=2048)
    back = list(read_entries(directory))
    assert _normalise(back) == _normalise(entries)
    # Control records were given control batches of their own, metadata records stayed batched.
    for entry in back:
        assert entry.is_control == entry.record.definition.is_control


@settings(max_examples=2, deadline=None, phases=[Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_segments_roll_and_batches_follow_batch_base_offsets(tmp_path: Path, data: st.DataObject) -> None:
    tmp_path = Path(tempfile.mkdtemp(dir=tmp_path))  # one directory per hypothesis example
    entries = _entries_for_every_type(data, 7)
    paths = write_segments(entries, tmp_path, segment_bytes=400)
    assert len(paths) > 1 and [p.name for p in paths] == sorted(p.name for p in paths)
    back = list(read_entries(tmp_path))
    metadata = [e for e in back if not e.is_control]
    by_batch: dict[int, list[int]] = {}
    for entry in metadata:
        assert entry.batch_base_offset is not None
        by_batch.setdefault(entry.batch_base_offset, []).append(entry.offset)
    for base, offsets in by_batch.items():
        assert offsets[0] == base and offsets == list(range(base, base + len(offsets)))


@settings(max_examples=2, deadline=None, phases=[Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_kafka_python_reads_what_the_writer_writes(tmp_path: Path, data: st.DataObject) -> None:
    """An independent parser of Kafka's framing (kafka-python) reads every batch we write."""
    tmp_path = Path(tempfile.mkdtemp(dir=tmp_path))  # one directory per hypothesis example
    entries = _entries_for_every_type(data, 11)
    (path,) = write_segments(entries, tmp_path, compression=Compression.ZSTD)
    data = path.read_bytes()
    position, offsets = 0, []
    while position < len(data):
        length = int.from_bytes(data[position + 8: position + 12], "big")
        batch = DefaultRecordBatch(data[position: position + 12 + length])
        assert batch.validate_crc()
        offsets.extend(record.offset for record in batch)
        position += 12 + length
    assert offsets == [e.offset for e in entries]


@settings(max_examples=2, deadline=None, phases=[Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_snapshot_file_has_header_records_and_footer(tmp_path: Path, data: st.DataObject) -> None:
    tmp_path = Path(tempfile.mkdtemp(dir=tmp_path))  # one directory per hypothesis example
    records = [e.record for e in _entries_for_every_type(data, 3) if not e.is_control][:6]
    path = write_snapshot(records, tmp_path, end_offset=4929, epoch=7,
                          last_contained_log_timestamp=1_700_000_123_000)
    assert path.name == snapshot_file_name(4929, 7) == "00000000000000004929-0000000007.checkpoint"
    back = list(read_entries(path))
    assert back[0].type_name == "SnapshotHeaderRecord"
    assert back[0].record["lastContainedLogTimestamp"] == 1_700_000_123_000
    assert back[-1].type_name == "SnapshotFooterRecord"
    assert [e.record for e in back[1:-1]] == records
    assert [e.offset for e in back] == list(range(len(records) + 2))
    assert {e.raft_leader_epoch for e in back} == {7}


@settings(max_examples=2, deadline=None, phases=[Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_offsets_must_increase(tmp_path: Path, data: st.DataObject) -> None:
    tmp_path = Path(tempfile.mkdtemp(dir=tmp_path))  # one directory per hypothesis example
    entries = _entries_for_every_type(data, 5)[:3]
    entries = [entries[0], entries[2], LogEntry(offset=1, record=entries[1].record)]
    with pytest.raises(RecordsError, match="offsets in a log only grow"):
        write_segments(entries, tmp_path)


# --- fuzz through the whole reading path: never a traceback -----------------------------------


def _generated_segment(tmp_path: Path, data: st.DataObject) -> bytes:
    (path,) = write_segments(_entries_for_every_type(data, 1), tmp_path / "src", compression=Compression.LZ4)
    return path.read_bytes()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_damaged_segments_give_clear_errors_or_listed_skips(tmp_path: Path, data: st.DataObject) -> None:
    tmp_path = Path(tempfile.mkdtemp(dir=tmp_path))  # one directory per hypothesis example
    original = _generated_segment(tmp_path, data)
    damaged = bytearray(original)
    action = data.draw(st.sampled_from(["flip", "truncate", "append"]))
    if action == "flip":
        for _ in range(data.draw(st.integers(1, 4))):
            position = data.draw(st.integers(0, len(damaged) - 1))
            damaged[position] ^= 1 << data.draw(st.integers(0, 7))
    elif action == "truncate":
        damaged = damaged[: data.draw(st.integers(0, len(damaged) - 1))]
    else:
        damaged += data.draw(st.binary(min_size=1, max_size=80))
    target = tmp_path / "damaged" / "00000000000000000000.log"
    target.parent.mkdir(exist_ok=True)
    target.write_bytes(bytes(damaged))
    for skip in (False, True):
        report = ReadReport()
        try:
            entries = list(read_entries(target, ReadOptions(skip_corrupt=skip), report))
        except RecordsError as exc:
            text = str(exc)
            assert str(target) in text and "byte" in text
            continue
        # Whatever was read is real: offsets increase and every entry is accounted for.
        offsets = [e.offset for e in entries]
        assert offsets == sorted(set(offsets))
        if bytes(damaged) != original and len(entries) < len(all_type_versions()):
            assert report.issues or report.notes or any(e.read_mode != "exact" for e in entries) \
                or len(damaged) < len(original)
