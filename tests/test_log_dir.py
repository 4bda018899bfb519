"""Log directory discovery: file classification, real Kafka data dirs, every skipped file with a reason."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from records.batch_writer import NewRecord, encode_batch, write_segments
from records.errors import RecordsError
from records.log_dir import LogFile, classify, discover, parse_properties, read_quorum_state

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
REAL = SHARED / "data" / "real"
PRODUCER_STATE_NOTE = ("producer-state snapshot (Kafka's *.snapshot files hold producer ids, not metadata); "
                       "skipped")


def real_dir(name: str) -> Path:
    path = REAL / name
    if not path.exists():
        pytest.skip(f"../shared not present: {path} is missing")
    return path


@pytest.mark.parametrize(("name", "expected"), [
    ("00000000000000000000.log", LogFile(Path("00000000000000000000.log"), "segment", base_offset=0)),
    ("00000000000000004929.log", LogFile(Path("00000000000000004929.log"), "segment", base_offset=4929)),
    ("00000000000000001772-0000000003.checkpoint",
     LogFile(Path("00000000000000001772-0000000003.checkpoint"), "snapshot", snapshot_end_offset=1772,
             snapshot_epoch=3)),
    ("bootstrap.checkpoint", LogFile(Path("bootstrap.checkpoint"), "bootstrap")),
    ("00000000000000001772.snapshot", LogFile(Path("00000000000000001772.snapshot"), "producer-state")),
    ("00000000000000000000.log.deleted", LogFile(Path("00000000000000000000.log.deleted"), "deleted")),
    ("00000000000000000000.log.cleaned", LogFile(Path("00000000000000000000.log.cleaned"), "deleted")),
    ("00000000000000000000.log.swap", LogFile(Path("00000000000000000000.log.swap"), "deleted")),
    ("00000000000000000010-0000000001.checkpoint.part",
     LogFile(Path("00000000000000000010-0000000001.checkpoint.part"), "deleted")),
    ("00000000000000000000.index", LogFile(Path("00000000000000000000.index"), "index")),
    ("00000000000000000000.timeindex", LogFile(Path("00000000000000000000.timeindex"), "index")),
    ("00000000000000000000.txnindex", LogFile(Path("00000000000000000000.txnindex"), "index")),
    ("quorum-state", LogFile(Path("quorum-state"), "other")),
    ("leader-epoch-checkpoint", LogFile(Path("leader-epoch-checkpoint"), "other")),
    ("partition.metadata", LogFile(Path("partition.metadata"), "other")),
    ("meta.properties", LogFile(Path("meta.properties"), "other")),
    ("0.log", LogFile(Path("0.log"), "other")),  # not 20 digits: not a segment name Kafka writes
    ("00000000000000000001-1.checkpoint", LogFile(Path("00000000000000000001-1.checkpoint"), "other")),
])
def test_classify(name: str, expected: LogFile) -> None:
    assert classify(name) == expected


@pytest.mark.real_logs
def test_real_data_dir() -> None:
    data_dir = real_dir("ldi-poc")
    layout = discover(data_dir)
    assert [f.path for f in layout.segments] == [data_dir / "__cluster_metadata-0/00000000000000000000.log"]
    assert layout.snapshots == []
    assert layout.bootstrap == LogFile(data_dir / "bootstrap.checkpoint", "bootstrap")
    assert layout.cluster_id == "q1w2e3r4t5y6u7i8o9p0"
    assert layout.meta_properties == {"node.id": "1", "directory.id": "XHhkr4tkSsD900pOQ8pPfg",
                                      "version": "1", "cluster.id": "q1w2e3r4t5y6u7i8o9p0"}
    assert layout.quorum_state == data_dir / "__cluster_metadata-0/quorum-state"
    assert sorted(p.name for p, _ in layout.skipped) == ["leader-epoch-checkpoint", "partition.metadata"]


@pytest.mark.real_logs
@pytest.mark.parametrize(("name", "snapshot", "bootstrap", "cluster_id"), [
    ("gani-guru-kafka42", "00000000000000001772.snapshot", True, "5L6g3nShT-eMCtK--X86sw"),
    ("nurlan-3broker-pre33", "00000000000000000188.snapshot", False, "EP6hyiddQNW5FPrAvR9kWw"),
])
def test_real_partition_dir_finds_parent_files_and_skips_producer_state(
        name: str, snapshot: str, bootstrap: bool, cluster_id: str) -> None:
    partition = real_dir(name) / "__cluster_metadata-0"
    layout = discover(partition)
    assert [f.base_offset for f in layout.segments] == [0]
    assert (layout.bootstrap is not None) == bootstrap
    if layout.bootstrap is not None:
        assert layout.bootstrap.path == partition.parent / "bootstrap.checkpoint"
    assert layout.cluster_id == cluster_id
    assert (partition / snapshot, PRODUCER_STATE_NOTE) in layout.skipped
    assert classify(partition / snapshot).kind == "producer-state"
    assert discover(partition.parent).segments == layout.segments


@pytest.mark.real_logs
def test_real_quorum_state() -> None:
    state = read_quorum_state(real_dir("nurlan-3broker-pre33") / "__cluster_metadata-0/quorum-state")
    assert state["leaderId"] == 1 and state["leaderEpoch"] == 3
    assert [v["voterId"] for v in state["currentVoters"]] == [1, 2, 3]


@pytest.mark.real_logs
def test_single_real_file() -> None:
    path = real_dir("gani-guru-kafka42") / "bootstrap.checkpoint"
    layout = discover(path)
    assert layout.bootstrap == LogFile(path, "bootstrap") and layout.segments == []


def make_log_dir(tmp_path: Path) -> Path:
    """A data dir with three segments written by the batch writer, snapshots and Kafka's other files."""
    partition = tmp_path / "__cluster_metadata-0"
    partition.mkdir()
    batches = [encode_batch([NewRecord(None, b"v" * 50, 1000 + n)], base_offset=n, partition_leader_epoch=1)
               for n in range(9)]
    write_segments(batches, partition, segment_bytes=len(batches[0]) * 3)
    for name in ["00000000000000000006-0000000002.checkpoint", "00000000000000000003-0000000001.checkpoint",
                 "00000000000000000003.snapshot", "00000000000000000000.index",
                 "00000000000000000000.timeindex", "00000000000000000000.log.deleted",
                 "00000000000000000003.log.swap", "notes.txt", "partition.metadata"]:
        (partition / name).write_bytes(b"")
    (partition / "quorum-state").write_text('{"leaderId": 2, "leaderEpoch": 7}')
    (tmp_path / "meta.properties").write_text("# written by kafka-storage format\nversion=1\n"
                                              "cluster.id=abcDEF123\nnode.id=2\n")
    (tmp_path / "bootstrap.checkpoint").write_bytes(b"")
    (tmp_path / "recovery-point-offset-checkpoint").write_text("0\n")
    (tmp_path / "orders-0").mkdir()
    return tmp_path


def test_discover_sorts_and_explains_every_skipped_file(tmp_path: Path) -> None:
    data_dir = make_log_dir(tmp_path)
    partition = data_dir / "__cluster_metadata-0"
    layout = discover(data_dir)
    assert [f.base_offset for f in layout.segments] == [0, 3, 6]
    assert [(f.snapshot_end_offset, f.snapshot_epoch) for f in layout.snapshots] == [(3, 1), (6, 2)]
    assert layout.bootstrap == LogFile(data_dir / "bootstrap.checkpoint", "bootstrap")
    assert layout.cluster_id == "abcDEF123" and layout.meta_properties["node.id"] == "2"
    assert layout.quorum_state is not None and read_quorum_state(layout.quorum_state)["leaderEpoch"] == 7
    notes = {path.relative_to(data_dir).as_posix(): note for path, note in layout.skipped}
    assert notes == {
        "__cluster_metadata-0/00000000000000000003.snapshot": PRODUCER_STATE_NOTE,
        "__cluster_metadata-0/00000000000000000000.index":
            "offset/time/transaction index (Kafka rebuilds it; no metadata in it); skipped",
        "__cluster_metadata-0/00000000000000000000.timeindex":
            "offset/time/transaction index (Kafka rebuilds it; no metadata in it); skipped",
        "__cluster_metadata-0/00000000000000000000.log.deleted":
            "marked for deletion or temporary (Kafka's *.deleted, *.cleaned, *.swap, *.part); skipped",
        "__cluster_metadata-0/00000000000000000003.log.swap":
            "marked for deletion or temporary (Kafka's *.deleted, *.cleaned, *.swap, *.part); skipped",
        "__cluster_metadata-0/notes.txt": "not a file Kafka's metadata log writes; skipped",
        "__cluster_metadata-0/partition.metadata": "Kafka bookkeeping file, not metadata records; skipped",
        "recovery-point-offset-checkpoint": "Kafka bookkeeping file, not metadata records; skipped",
        "orders-0": "another partition's directory, not the metadata log; skipped",
    }
    # Named by its partition dir, the parent's meta.properties and bootstrap.checkpoint are still found,
    # and the parent's unrelated entries are not listed.
    from_partition = discover(partition)
    assert from_partition.segments == layout.segments and from_partition.bootstrap == layout.bootstrap
    assert from_partition.cluster_id == "abcDEF123"
    assert all(path.parent == partition for path, _ in from_partition.skipped)


def test_conflicting_cluster_ids_are_an_error(tmp_path: Path) -> None:
    data_dir = make_log_dir(tmp_path)
    (data_dir / "__cluster_metadata-0" / "meta.properties").write_text("cluster.id=other\n")
    with pytest.raises(RecordsError, match=r"cluster\.id abcDEF123 differs from other"):
        discover(data_dir)


@pytest.mark.parametrize("make", ["missing", "empty", "not-a-log-file"])
def test_nothing_to_replay_is_an_error(tmp_path: Path, make: str) -> None:
    target = tmp_path / "x"
    if make == "empty":
        target.mkdir()
    elif make == "not-a-log-file":
        target.write_text("hello")
    with pytest.raises(RecordsError, match=re.escape(str(target))):
        discover(target)


def test_parse_properties() -> None:
    text = ("# comment\n! also a comment\n\n  cluster.id = abc\nnode.id:3\nversion 1\n"
            "long=first \\\n    second\nescaped\\=key=a\\tb\\u0041\nempty=\n")
    assert parse_properties(text) == {"cluster.id": "abc", "node.id": "3", "version": "1",
                                      "long": "first second", "escaped=key": "a\tbA", "empty": ""}


def test_bad_quorum_state(tmp_path: Path) -> None:
    path = tmp_path / "quorum-state"
    path.write_text("{not json")
    with pytest.raises(RecordsError, match="cannot read quorum-state"):
        read_quorum_state(path)
