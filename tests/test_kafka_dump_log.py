"""Record by record against Kafka's own ``kafka-dump-log --cluster-metadata-decoder`` (releases 4.4.0 and 3.9.2).

Every segment (``*.log``) and snapshot (``*.checkpoint``) of the real logs in ../shared and of simulated logs
(metadata.version 3.0 to 4.0, metadata transactions, aborted ones, every compression codec, several segments,
snapshots, every raft control record) goes through Kafka's ``DumpLogSegments`` and through ``kraft-replay dump``.
Kafka's output is the truth: every batch field, every record's offset, timestamp, sizes, type, version and every
field must be what we decode. Then ``records.dumplog`` reads Kafka's actual text and must give back exactly the
entries our segment decoder gives: the dump-log input format, proved on the text of both Kafka versions.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kraft_replay.cli import app
from lakehouse.jars import KAFKA_VERSIONS
from records.batch import RecordBatch, iter_batches
from records.compression import Compression
from records.definitions import StructDef, by_json_type_name, definitions
from records.dumplog import SkippedRecord, read_dump_log
from records.dumplog_format import format_dump_log
from records.kafka_json import dumps_compact, make_record, record_to_json
from records.model import LogEntry, uuid_from_str
from records.sources import read_entries
from records.writer import encode_entries_batch, group_batches, snapshot_file_name, write_segments, write_snapshot
from replay.reference.fold import image_at
from simulator import SimulationError, run_scenario
from tests.conftest import REPO_ROOT, SUMMARY
from tests.image_snapshot_support import image_snapshot_records
from tests.referee import RefereeUnavailable, scenario_options
from tests.referee.dump_log import (
    KafkaBatch,
    KafkaFile,
    KafkaRecord,
    dump_log_classpath,
    kafka_dump_log,
    kafka_record_versions,
    parse_dump,
)

pytestmark = pytest.mark.kafka

REAL = ("ldi-poc", "nurlan-3broker-pre33", "gani-guru-kafka42")
CODECS = {Compression.NONE: "none", Compression.GZIP: "gzip", Compression.SNAPPY: "snappy", Compression.LZ4: "lz4",
          Compression.ZSTD: "zstd"}

TALLY: dict[str, Counts] = {}


@dataclass
class KafkaDumps:
    """One Kafka release's dump of every file."""

    version: str
    texts: dict[Path, str]  # file -> what the tool printed for it
    failed: dict[Path, str]  # file -> why the tool failed on it
    known: dict[str, int]  # metadata record class -> the highest version this release knows

    def newer(self, line: dict[str, Any]) -> bool:
        """A record of a type or version this Kafka does not know: it prints "Error at …" (an unknown type, or a
        version whose bytes it cannot read) or what it could read (without the fields it does not know)."""
        message = by_json_type_name().get(line["type"])
        return (message is not None and not message.is_control
                and line["version"] > self.known.get(message.name, -1))


@dataclass
class Counts:
    """What one Kafka version's dump was compared with, and what it could not print."""

    files: int = 0
    batches: int = 0
    records: int = 0
    parsed_back: int = 0
    without_content: dict[str, int] = field(default_factory=dict)  # why Kafka printed no content -> records
    newer: dict[str, int] = field(default_factory=dict)  # records newer than the Kafka release -> how many


# --- the files --------------------------------------------------------------------------------------------------


# (directory name, scenario, metadata.version, seed, compression, segment bytes)
SIMULATED: list[tuple[str, str, str, int, Compression, int]] = [
    ("random-3.0", "random", "3.0", 1, Compression.NONE, 1 << 30),  # Fence/UnfenceBrokerRecord, no NoOp
    ("random-3.3", "random", "3.3", 2, Compression.NONE, 1 << 30),
    ("reassignment-3.3", "reassignment-under-failure", "3.3", 3, Compression.NONE, 1 << 30),
    ("random-3.6", "random", "3.6", 4, Compression.NONE, 1 << 30),  # metadata transactions from 3.6
    ("aborted-transaction-3.9", "aborted-transaction", "3.9", 5, Compression.NONE, 1 << 30),
    ("random-3.9-segments", "random", "3.9", 6, Compression.NONE, 16 << 10),  # several segments
    ("random-4.0", "random", "4.0", 7, Compression.NONE, 1 << 30),  # ELR, PartitionRecord v2, ClearElrRecord
    ("min-isr-4.0", "min-isr-change", "4.0", 8, Compression.NONE, 1 << 30),
    *[(f"random-3.9-{CODECS[c]}", "random", "3.9", 9, c, 1 << 30)
      for c in (Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD)],
]


def _control_records() -> tuple[list[LogEntry], list[LogEntry]]:
    """Every raft control record Kafka writes (LeaderChange, KRaftVersion, KRaftVoters), in a log and in a
    snapshot's first batch as a kraft.version 1 controller writes it. LeaderChange is always v0: Kafka writes and
    reads its body at ``ControlRecordUtils.LEADER_CHANGE_CURRENT_VERSION`` (0) whatever its version field says, so
    its tool cannot read a v1 body (with directory ids), and no Kafka writes one."""
    voters = [{"voterId": i, "voterDirectoryId": uuid_from_str(f"AAAAAAAAAAAAAAAAAAAAA{c}"),
               "endpoints": [{"name": "CONTROLLER", "host": f"controller-{i}", "port": 9093}],
               "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1}}
              for i, c in ((1, "Q"), (2, "g"), (3, "w"))]
    kraft_version = make_record("KRaftVersionRecord", 0, kRaftVersion=1)
    voters_record = make_record("VotersRecord", 0, voters=voters)
    records = [make_record("LeaderChangeMessage", 0, leaderId=1, voters=[{"voterId": 1}, {"voterId": 2}],
                           grantingVoters=[{"voterId": 1}]),
               make_record("FeatureLevelRecord", 0, name="metadata.version", featureLevel=21),
               kraft_version, voters_record,
               make_record("LeaderChangeMessage", 0, leaderId=2, voters=[{"voterId": 1}, {"voterId": 2}],
                           grantingVoters=[{"voterId": 2}, {"voterId": 1}]),
               make_record("NoOpRecord", 0)]
    log = [LogEntry(offset=i, record=r, raft_leader_epoch=1 + i // 4, append_time_ms=1_700_000_000_000 + i)
           for i, r in enumerate(records)]
    snapshot = [make_record("SnapshotHeaderRecord", 0, lastContainedLogTimestamp=1_700_000_000_005),
                kraft_version, voters_record,
                make_record("FeatureLevelRecord", 0, name="metadata.version", featureLevel=21),
                make_record("SnapshotFooterRecord", 0)]
    bases = [0, 0, 0, 3, 4]  # the header batch holds the header, KRaftVersion and KRaftVoters
    snap = [LogEntry(offset=i, record=r, batch_base_offset=b, raft_leader_epoch=2, append_time_ms=1_700_000_000_005)
            for i, (r, b) in enumerate(zip(snapshot, bases, strict=True))]
    return log, snap


_SAMPLES: dict[str, Any] = {"int8": 7, "int16": 300, "int32": 70_000, "int64": 1_700_000_000_123, "uint16": 9093,
                            "bool": True, "string": "s-\u00e9\u4e2d", "uuid": bytes(range(16)),
                            "bytes": b"\x00\xffab", "float64": 10_485_760.0}


def _sample(struct: StructDef, version: int, fill: bool) -> dict[str, Any]:
    """Every field of ``struct`` at ``version`` set away from its default (tagged ones too), or (``fill`` False)
    every nullable field null and the rest left to their defaults."""
    out: dict[str, Any] = {}
    for f in struct.fields_in(version):
        if not fill:
            if f.nullable_in(version):
                out[f.json_name] = None
            continue
        value = (_sample(f.struct, version, fill) if f.struct is not None
                 else _SAMPLES[f.element_type] if f.element_type != "float64" or not f.is_array else 1.5)
        if f.json_name == "version":
            continue  # a control record's own version field: make_record sets it
        out[f.json_name] = [value, value] if f.is_array else value
    return out


def _every_record() -> list[LogEntry]:
    """Every metadata record type at every version the definitions hold: once with every field (tagged ones too)
    away from its default, once with nullable fields null and the rest at their defaults."""
    records = [make_record(m.name, v, **_sample(m.body, v, fill))
               for m in sorted(definitions().values(), key=lambda m: m.name) if not m.is_control
               for v in m.versions for fill in (True, False)]
    return [LogEntry(offset=i, record=r, raft_leader_epoch=4, append_time_ms=1_700_000_000_000 + i)
            for i, r in enumerate(records)]


def _simulate(root: Path) -> list[Path]:
    """The simulated logs' segments and snapshots."""
    files: list[Path] = []
    for name, scenario, mv, seed, codec, segment_bytes in SIMULATED:
        try:
            options = scenario_options(mv, seed, brokers=5, partitions_per_topic=4, events=80)
            entries = list(run_scenario(scenario, options).entries())
        except SimulationError:  # a scenario that needs a newer metadata.version: the others cover it
            continue
        files += write_segments(entries, root / name, compression=codec, segment_bytes=segment_bytes)
        if name in ("random-3.9-zstd", "random-4.0"):
            # a snapshot of the image at a batch boundary in the middle, as a controller writes one
            end = next(e.offset for e in entries if e.offset > len(entries) // 2 and e.offset == e.batch_base_offset)
            files.append(write_snapshot(image_snapshot_records(image_at(entries, end - 1)), root / name, end_offset=end,
                                        epoch=3, last_contained_log_timestamp=1_700_000_000_000, compression=codec,
                                        max_batch_records=20))
    files += write_segments(_every_record(), root / "every-record", max_batch_records=5)
    log, snap = _control_records()
    files += write_segments(log, root / "control-records")
    path = root / "control-records" / snapshot_file_name(6, 2)
    with path.open("wb") as out:
        for batch in group_batches(snap, 1000):
            out.write(encode_entries_batch(batch, Compression.NONE))
    files.append(path)
    return files


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Every ``*.log`` and ``*.checkpoint`` of the real logs (those present in ../shared), then of the simulated
    ones."""
    real: list[Path] = []
    for name in REAL:
        root = REPO_ROOT.parent / "shared" / "data" / "real" / name
        if root.is_dir():
            real += sorted(root.glob("*.checkpoint")) + sorted(root.glob("__cluster_metadata-0/*.log"))
            real += sorted(root.glob("__cluster_metadata-0/*.checkpoint"))
    return real + _simulate(tmp_path_factory.mktemp("dump-log"))


def dumps_of(version: str, files: list[Path]) -> KafkaDumps:
    """Kafka ``version``'s dump of every file; skip, saying why, without java or Kafka's jars."""
    try:
        dump_log_classpath(version)
        known = kafka_record_versions(version)
    except RefereeUnavailable as reason:
        pytest.skip(f"Kafka {version}'s kafka-dump-log: {reason}")
    texts, failed = kafka_dump_log(version, files)
    return KafkaDumps(version, texts, failed, known)


@pytest.fixture(scope="module", params=KAFKA_VERSIONS)
def kafka_dumps(request: pytest.FixtureRequest, files: list[Path]) -> KafkaDumps:
    """One Kafka release's dump of every file."""
    return dumps_of(request.param, files)


@pytest.fixture(scope="module", autouse=True)
def tally(request: pytest.FixtureRequest) -> Iterator[None]:
    """The counts compared, one line per Kafka version at the end of the run."""
    yield
    lines = request.config.stash.setdefault(SUMMARY, [])
    for version, c in sorted(TALLY.items(), reverse=True):
        lines.append(f"Kafka {version}'s kafka-dump-log: {c.files} files, {c.batches} batches, {c.records} records "
                     f"compared record by record with kraft-replay dump; {c.parsed_back} read back from Kafka's "
                     f"text by records.dumplog; printed without content: {c.without_content or 'none'}; newer than "
                     f"that Kafka knows (compared on place, type and version): {c.newer or 'none'}")


# --- our side ---------------------------------------------------------------------------------------------------


def _our_dump(path: Path) -> list[dict[str, Any]]:
    """``kraft-replay dump --keep-secrets FILE``: one JSON line per record. kafka-dump-log redacts nothing, so the
    record-for-record comparison asks for the secrets too (``dump`` redacts them by default: test_redaction.py)."""
    result = CliRunner().invoke(app, ["dump", "--keep-secrets", str(path)])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def _our_batches(path: Path) -> list[RecordBatch]:
    with path.open("rb") as stream:
        return list(iter_batches(stream, source=str(path)))


def _expected_batch(batch: RecordBatch) -> dict[str, str]:
    """The batch line Kafka prints, from our decoder's batch."""
    last_sequence = -1 if batch.base_sequence == -1 else (batch.base_sequence + batch.last_offset_delta) % (1 << 31)
    delete_horizon = (f"OptionalLong[{batch.base_timestamp}]" if batch.attributes & 0x40 else "OptionalLong.empty")
    return {"baseOffset": str(batch.base_offset), "lastOffset": str(batch.last_offset),
            "count": str(len(batch.records)), "baseSequence": str(batch.base_sequence),
            "lastSequence": str(last_sequence), "producerId": str(batch.producer_id),
            "producerEpoch": str(batch.producer_epoch), "partitionLeaderEpoch": str(batch.partition_leader_epoch),
            "isTransactional": str(batch.is_transactional).lower(), "isControl": str(batch.is_control).lower(),
            "deleteHorizonMs": delete_horizon, "position": str(batch.position),
            "LogAppendTime" if batch.timestamp_type else "CreateTime": str(batch.max_timestamp),
            "size": str(batch.size_in_bytes), "magic": str(batch.magic),
            "compresscodec": CODECS[batch.compression], "crc": str(batch.crc), "isvalid": "true"}


def _compare_record(kafka: KafkaRecord, ours: dict[str, Any], batch: KafkaBatch, key: bytes | None,
                    value: bytes | None) -> list[str]:
    """One record: its place, sizes and content, as Kafka printed it and as ``kraft-replay dump`` does."""
    problems = []
    if ours["offset"] != kafka.offset:
        return [f"offset: kafka {kafka.offset} ours {ours['offset']}"]
    placed = {"appendTimeMs": (kafka.timestamp, ours.get("appendTimeMs")),
              "raftLeaderEpoch": (batch.int("partitionLeaderEpoch"), ours.get("raftLeaderEpoch")),
              "batchBaseOffset": (batch.int("baseOffset"), ours.get("batchBaseOffset", ours["offset"])),
              "control": (batch.fields["isControl"] == "true", ours.get("control", False)),
              "keySize": (kafka.key_size, -1 if key is None else len(key)),
              "valueSize": (kafka.value_size, -1 if value is None else len(value))}
    problems += [f"{name}: kafka {a!r} ours {b!r}" for name, (a, b) in placed.items() if a != b]
    if kafka.kind == "payload":
        mine = {"type": ours["type"], "version": ours["version"], "data": ours.get("data")}
        if mine != kafka.json:
            assert kafka.json is not None
            problems += [f"{name}: kafka {kafka.json.get(name)!r} ours {mine[name]!r}" for name in mine
                         if mine[name] != kafka.json.get(name)] or ["payload differs"]
        elif dumps_compact(mine) != kafka.text:
            problems.append(f"payload text: kafka {kafka.text} ours {dumps_compact(mine)}")
    elif kafka.kind in ("control", "control-type"):
        if ours["type"] != kafka.type:
            problems.append(f"control type: kafka {kafka.type} ours {ours['type']}")
        if kafka.kind == "control":
            assert kafka.json is not None
            if ours["version"] != kafka.json["version"] or ours.get("data") != kafka.json:
                problems.append(f"control record: kafka {kafka.text} ours v{ours['version']} {ours.get('data')}")
            elif dumps_compact(ours["data"]) != kafka.text:
                problems.append(f"control record text: kafka {kafka.text} ours {dumps_compact(ours['data'])}")
    return problems


def compare_file(dumps: KafkaDumps, path: Path, kafka: KafkaFile, counts: Counts) -> list[str]:
    """Kafka's dump of one file against ``kraft-replay dump`` and our decoder's batches: the problems found."""
    version = dumps.version
    problems: list[str] = []
    ours = {line["offset"]: line for line in _our_dump(path)}
    batches = _our_batches(path)
    first = batches[0].base_offset if batches else None
    ours_text = list(format_dump_log(read_entries(path), path=str(path), kafka_version=version))
    if ours_text[:len(kafka.header)] != kafka.header:
        problems.append(f"header: kafka {kafka.header} ours {ours_text[:len(kafka.header)]} (first offset {first})")
    if kafka.trailer:
        problems.append(f"kafka found invalid bytes: {kafka.trailer}")
    if len(batches) != len(kafka.batches):
        problems.append(f"batches: kafka {len(kafka.batches)} ours {len(batches)}")
    seen: set[int] = set()
    newer: set[int] = set()  # records newer than this Kafka: it prints what it can of them
    for kb, ob in zip(kafka.batches, batches, strict=False):
        expected = _expected_batch(ob)
        if kb.fields != expected:
            problems += [f"batch {ob.base_offset} {name}: kafka {kb.fields.get(name)} ours {expected.get(name)}"
                         for name in sorted(set(kb.fields) | set(expected))
                         if kb.fields.get(name) != expected.get(name)]
        if len(kb.records) != len(ob.records):
            problems.append(f"batch {ob.base_offset}: kafka {len(kb.records)} records ours {len(ob.records)}")
        for kr, br in zip(kb.records, ob.records, strict=False):
            line = ours.get(kr.offset)
            seen.add(kr.offset)
            if line is None:
                problems.append(f"offset {kr.offset}: not in kraft-replay dump")
                continue
            if br.offset != kr.offset or br.timestamp != kr.timestamp:
                problems.append(f"offset {kr.offset}: our decoder has offset {br.offset} at time {br.timestamp}")
            if dumps.newer(line):
                why = f"{line['type']} v{line['version']}, newer than Kafka {version} knows"
                counts.newer[why] = counts.newer.get(why, 0) + 1
                printed = (kr.type, kr.json["version"]) if kr.kind == "payload" and kr.json else None
                if printed not in (None, (line["type"], line["version"])):
                    problems.append(f"offset {kr.offset}: Kafka {version} printed {kr.text}; ours {line}")
                newer.add(kr.offset)
                counts.records += 1
                continue
            if kr.kind == "error":
                problems.append(f"offset {kr.offset}: Kafka {version} printed {kr.text}; ours {line}")
            elif kr.kind == "control-type":
                why = f"{kr.type} without content"
                counts.without_content[why] = counts.without_content.get(why, 0) + 1
            problems += [f"offset {kr.offset}: {p}" for p in _compare_record(kr, line, kb, br.key, br.value)]
            counts.records += 1
        counts.batches += 1
    extra = sorted(set(ours) - seen)
    if extra:
        problems.append(f"offsets only in kraft-replay dump: {extra[:10]}")
    uncompressed = all(b.compression is Compression.NONE for b in batches)
    # records.dumplog writes Kafka's text too (fixtures without a Kafka install): the same lines, but for the
    # records newer than this Kafka (records.dumplog does not know which records a Kafka release knows)
    def shown(line: str) -> bool:
        return not line.startswith("| offset: ") or int(line.split()[2]) not in newer

    theirs = [line for line in kafka.lines if shown(line)]
    mine = [line for line in ours_text if shown(line)]
    if uncompressed and not problems and kafka.batches and (mine != theirs or len(ours_text) != len(kafka.lines)):
        diff = next(((a, b) for a, b in zip(mine, theirs, strict=False) if a != b),
                    (f"{len(ours_text)} lines", f"{len(kafka.lines)} lines"))
        problems.append(f"records.dumplog.format_dump_log differs from Kafka's text: ours {diff[0]!r} "
                        f"kafka {diff[1]!r}")
    counts.files += 1
    return problems


def assert_same_dumps(dumps: KafkaDumps, counts: Counts) -> None:
    """Every file of ``dumps`` as Kafka printed it and as we decode it: no difference, the tool failed on none."""
    problems = {path: [f"Kafka's tool failed: {why}"] for path, why in dumps.failed.items()}
    for path, text in dumps.texts.items():
        found = compare_file(dumps, path, parse_dump(text), counts)
        if found:
            problems[path] = found
    shown = [f"{path}: {p}" for path, found in problems.items() for p in found[:5]]
    assert not problems, (f"Kafka {dumps.version}'s kafka-dump-log and kraft-replay dump differ:\n"
                          + "\n".join(shown[:60]))


# --- the tests --------------------------------------------------------------------------------------------------


def test_record_by_record(kafka_dumps: KafkaDumps) -> None:
    """Kafka's kafka-dump-log and kraft-replay dump agree on every batch and record of every file (on a record
    newer than the Kafka release, only on its place, type and version: that Kafka cannot print the rest)."""
    version = kafka_dumps.version
    counts = TALLY.setdefault(version, Counts())
    assert_same_dumps(kafka_dumps, counts)
    print(f"Kafka {version}: {counts.files} files, {counts.batches} batches, {counts.records} records compared; "
          f"without content: {counts.without_content}; newer than Kafka knows: {counts.newer}")
    assert counts.files == len(kafka_dumps.texts) and counts.records > 0


def _key(entry: LogEntry) -> tuple[Any, ...]:
    return (entry.offset, entry.type_name, entry.version, entry.record.data if hasattr(entry.record, "data") else None,
            entry.batch_base_offset, entry.raft_leader_epoch, entry.append_time_ms, entry.position, entry.is_control)


def test_dump_log_parser_reads_kafkas_text(kafka_dumps: KafkaDumps) -> None:
    """records.dumplog on Kafka's actual text gives back exactly the entries our segment decoder gives; a record
    Kafka printed without content (LeaderChange before 4.1, a type it does not know) is listed as skipped, and a
    record newer than the Kafka release is what that Kafka printed of it."""
    version = kafka_dumps.version
    counts = TALLY.setdefault(version, Counts())
    problems = []
    for path, text in kafka_dumps.texts.items():
        skipped: list[SkippedRecord] = []
        back = {e.offset: e for e in read_dump_log(io.StringIO(text), f"kafka-{version}-dump.txt",
                                                   skip_unparsable=True, skipped=skipped)}
        printed = {r.offset: r for b in parse_dump(text).batches for r in b.records}
        no_content = {offset for offset, r in printed.items() if r.kind in ("error", "control-type")}
        for entry in read_entries(path):
            got = back.pop(entry.offset, None)
            if entry.offset in no_content:
                continue
            if got is None:
                problems.append(f"{path}: offset {entry.offset}: records.dumplog gives nothing")
            elif kafka_dumps.newer({"type": record_to_json(entry.record)["type"], "version": entry.version}):
                if _key(got)[:3] + _key(got)[4:] != _key(entry)[:3] + _key(entry)[4:] \
                        or record_to_json(got.record) != printed[entry.offset].json:
                    problems.append(f"{path}: offset {entry.offset}: records.dumplog gives {got}, Kafka printed "
                                    f"{printed[entry.offset].text}")
            elif _key(got) != _key(entry):
                problems.append(f"{path}: records.dumplog gives {_key(got)}, the decoder {_key(entry)}")
            counts.parsed_back += got is not None
        if back:
            problems.append(f"{path}: records.dumplog gives offsets the decoder does not: {sorted(back)[:10]}")
        if {s.offset for s in skipped} != no_content:
            problems.append(f"{path}: skipped {sorted(s.offset for s in skipped)}, Kafka printed no content for "
                            f"{sorted(no_content)}")
    assert not problems, "\n".join(problems[:20])
