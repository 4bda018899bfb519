"""Decode throughput of the embedded single-process reader, on a generated busy-cluster metadata log.

Run ``python -m bench.bench_decode --size-mb 1024 --out /tmp/kraft-bench``. It generates (once, cached
under ``--out`` by size, seed and codec) a ``__cluster_metadata-0`` directory of valid Kafka segments,
then measures, each in a fresh subprocess so generation memory does not count towards the peak RSS:

* ``framing``: :func:`records.batch.iter_batches` (framing, CRC-32C, decompression, record split);
* ``full``: :func:`records.sources.read_entries`, what users get (``LogEntry`` with decoded records).

Generation is fast because it encodes a pool of batches once and then only restamps copies of them
(base offset, leader epoch, timestamps, CRC), so offsets stay contiguous and every CRC stays valid.
The target of the issue is >= 20 MB/s per core for ``full`` with a peak RSS under 300 MB.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import resource
import shlex
import shutil
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import crc32c

from records.batch import Compression, NewRecord, encode_batch, iter_batches, write_segments
from records.kafka_json import make_record
from records.model import LogEntry, MetadataRecord
from records.sources import read_entries
from records.writer import encode_entry, write_meta_properties

REPO_ROOT = Path(__file__).resolve().parents[1]
GENERATOR_VERSION = 1  # bump when the generated content changes, so cached data sets are rebuilt
POOL_BATCHES_PER_KIND = 48
BASE_TIME_MS = 1_700_000_000_000
CLUSTER_ID = "kraftReplayBenchAAAAAA"

# Byte offsets in a v2 batch header (see records.batch): fields the generator restamps.
_BASE_OFFSET = struct.Struct(">q")  # at 0, outside the CRC
_LEADER_EPOCH = struct.Struct(">i")  # at 12, outside the CRC
_CRC = struct.Struct(">I")  # at 17, covers byte 21 (attributes) to the end
_TIMESTAMPS = struct.Struct(">qq")  # base and max timestamp at 27, inside the CRC
_CRC_AT, _CRC_FROM, _TIMESTAMPS_AT = 17, 21, 27

# (kind, weight by batch count): a busy cluster, where heartbeat NoOps are the most frequent batches
# but partition churn and topic creations carry most of the bytes.
BATCH_MIX: tuple[tuple[str, int], ...] = (
    ("noop", 40),  # NoOpRecord alone, the active controller's idle write every 500 ms
    ("isr", 30),  # PartitionChangeRecords: ISR shrink/expand and leader moves, 1-60 per batch
    ("brokers", 10),  # BrokerRegistrationChange / RegisterBroker / Fence / Unfence
    ("configs", 8),  # ConfigRecords, 1-20 per batch
    ("topics", 7),  # TopicRecord + PartitionRecords of a topic creation, up to 200 per batch
    ("producer-ids", 4),  # ProducerIdsRecord
    ("leader", 1),  # a raft LeaderChangeMessage control batch; bumps the leader epoch
)


# --------------------------------------------------------------------------------------------- generation


class _Cluster:
    """Random but self-consistent ids (brokers, topics, log dirs) for the generated records."""

    def __init__(self, rng: random.Random, brokers: int = 12, topics: int = 400) -> None:
        self.rng = rng
        self.brokers = list(range(1, brokers + 1))
        self.dirs = {b: [rng.randbytes(16) for _ in range(2)] for b in self.brokers}
        self.topics = [(f"events.{rng.choice(['orders', 'clicks', 'audit', 'metrics'])}.{i}",
                        rng.randbytes(16)) for i in range(topics)]

    def replicas(self, n: int = 3) -> list[int]:
        return self.rng.sample(self.brokers, n)

    def directories(self, replicas: list[int]) -> list[bytes]:
        return [self.rng.choice(self.dirs[b]) for b in replicas]


def _isr_records(c: _Cluster) -> list[MetadataRecord]:
    rng = c.rng
    out = []
    for _ in range(rng.choice([1, 1, 2, 4, 8, 20, 60])):
        version = rng.choice([0, 1, 1, 2])
        replicas = c.replicas()
        fields: dict[str, Any] = {"partitionId": rng.randrange(64), "topicId": rng.choice(c.topics)[1]}
        fields["isr"] = replicas[: rng.choice([1, 2, 3])]
        if rng.random() < 0.5:
            fields["leader"] = fields["isr"][0]
        if rng.random() < 0.1:
            fields["leaderRecoveryState"] = 0
        if version >= 1 and rng.random() < 0.3:
            fields["replicas"] = replicas
            fields["directories"] = c.directories(replicas)
        if version >= 2 and rng.random() < 0.2:
            fields["eligibleLeaderReplicas"] = replicas[1:]
        out.append(make_record("PartitionChangeRecord", version, **fields))
    return out


def _topic_records(c: _Cluster) -> list[MetadataRecord]:
    rng = c.rng
    name, topic_id = rng.choice(c.topics)
    version = rng.choice([0, 1, 1, 2])
    out = [make_record("TopicRecord", 0, name=name, topicId=topic_id)]
    for partition in range(rng.choice([1, 3, 12, 50, 100, 199])):
        replicas = c.replicas()
        fields: dict[str, Any] = {"partitionId": partition, "topicId": topic_id, "replicas": replicas,
                                  "isr": replicas, "leader": replicas[0], "leaderEpoch": 0,
                                  "partitionEpoch": 0}
        if version >= 1:
            fields["directories"] = c.directories(replicas)
        out.append(make_record("PartitionRecord", version, **fields))
    return out


def _config_records(c: _Cluster) -> list[MetadataRecord]:
    rng = c.rng
    topic = rng.choice(c.topics)[0]
    names = ["retention.ms", "cleanup.policy", "min.insync.replicas", "segment.bytes", "max.message.bytes"]
    return [make_record("ConfigRecord", 0, resourceType=2, resourceName=topic, name=rng.choice(names),
                        value=str(rng.randrange(1, 10**9)) if rng.random() < 0.9 else None)
            for _ in range(rng.randint(1, 20))]


def _broker_records(c: _Cluster) -> list[MetadataRecord]:
    rng = c.rng
    broker = rng.choice(c.brokers)
    epoch = rng.randrange(10**6)
    pick = rng.random()
    if pick < 0.2:
        host = f"broker-{broker}.kafka.svc.cluster.local"
        return [make_record(
            "RegisterBrokerRecord", 3, brokerId=broker, incarnationId=rng.randbytes(16), brokerEpoch=epoch,
            endPoints=[{"name": "PLAINTEXT", "host": host, "port": 9092, "securityProtocol": 0},
                       {"name": "SSL", "host": host, "port": 9093, "securityProtocol": 1}],
            features=[{"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 21}],
            rack=f"rack-{broker % 3}", fenced=True, logDirs=c.dirs[broker])]
    if pick < 0.4:
        kind = rng.choice(["FenceBrokerRecord", "UnfenceBrokerRecord"])
        return [make_record(kind, 0, id=broker, epoch=epoch)]
    return [make_record("BrokerRegistrationChangeRecord", rng.choice([0, 1]), brokerId=b,
                        brokerEpoch=epoch, fenced=rng.choice([-1, 0, 1]))
            for b in rng.sample(c.brokers, rng.randint(1, 5))]


def _producer_id_records(c: _Cluster) -> list[MetadataRecord]:
    return [make_record("ProducerIdsRecord", 0, brokerId=c.rng.choice(c.brokers),
                        brokerEpoch=c.rng.randrange(10**6), nextProducerId=c.rng.randrange(10**9))]


def _leader_records(c: _Cluster) -> list[MetadataRecord]:
    voters = [{"voterId": v} for v in (3000, 3001, 3002)]
    return [make_record("LeaderChangeMessage", 0, version=0, leaderId=c.rng.choice([3000, 3001, 3002]),
                        voters=voters, grantingVoters=voters[:2])]


_BUILDERS: dict[str, Callable[[_Cluster], list[MetadataRecord]]] = {
    "noop": lambda c: [make_record("NoOpRecord", 0)],
    "isr": _isr_records,
    "brokers": _broker_records,
    "configs": _config_records,
    "topics": _topic_records,
    "producer-ids": _producer_id_records,
    "leader": _leader_records,
}


def _encode_pool_batch(records: list[MetadataRecord], codec: Compression, rng: random.Random) -> bytes:
    """One batch at offset 0 and time 0; the generator restamps copies of it."""
    new = []
    timestamp = 0
    for record in records:
        key, value = encode_entry(LogEntry(offset=0, record=record))
        new.append(NewRecord(key=key, value=value, timestamp=timestamp))
        timestamp += rng.choice([0, 0, 1, 2])
    control = records[0].is_control
    return encode_batch(new, base_offset=0, partition_leader_epoch=0, base_timestamp=0,
                        compression=Compression.NONE if control else codec, is_control=control)


def _restamp(batch: bytes, base_offset: int, leader_epoch: int, base_time: int) -> bytes:
    """A copy of a pool batch at a new offset, epoch and time, with its CRC recomputed."""
    out = bytearray(batch)
    _BASE_OFFSET.pack_into(out, 0, base_offset)
    _LEADER_EPOCH.pack_into(out, 12, leader_epoch)
    old_base, old_max = _TIMESTAMPS.unpack_from(out, _TIMESTAMPS_AT)
    _TIMESTAMPS.pack_into(out, _TIMESTAMPS_AT, base_time, base_time + old_max - old_base)
    _CRC.pack_into(out, _CRC_AT, crc32c.crc32c(memoryview(out)[_CRC_FROM:]))
    return bytes(out)


def _batch_stream(size_bytes: int, seed: int, codec: Compression, stats: dict[str, int]) -> Iterator[bytes]:
    rng = random.Random(seed)
    cluster = _Cluster(rng)
    pool = {kind: [(_encode_pool_batch(records, codec, rng), len(records))
                   for records in (_BUILDERS[kind](cluster) for _ in range(POOL_BATCHES_PER_KIND))]
            for kind, _ in BATCH_MIX}
    kinds = [kind for kind, _ in BATCH_MIX]
    weights = [weight for _, weight in BATCH_MIX]
    offset, epoch, now, written = 0, 1, BASE_TIME_MS, 0
    while written < size_bytes:
        for kind in rng.choices(kinds, weights, k=1024):
            if kind == "leader":
                epoch += 1
            batch, count = rng.choice(pool[kind])
            out = _restamp(batch, offset, epoch, now)
            offset += count
            now += rng.randrange(1, 50)
            written += len(out)
            stats["batches"] += 1
            yield out
    stats["records"] = offset
    stats["bytes"] = written


def dataset_dir(out: Path, size_mb: int, seed: int, codec: Compression, segment_mb: int) -> Path:
    return out / f"decode-{size_mb}mb-seed{seed}-{codec.name.lower()}-seg{segment_mb}-v{GENERATOR_VERSION}"


def generate(out: Path, size_mb: int, seed: int, codec: Compression, segment_mb: int) -> tuple[Path, dict]:
    """The cached data set's metadata partition dir and manifest, generating it if it is not there."""
    root = dataset_dir(out, size_mb, seed, codec, segment_mb)
    partition = root / "data" / "__cluster_metadata-0"
    manifest_path = root / "manifest.json"
    if manifest_path.is_file():
        return partition, json.loads(manifest_path.read_text())
    tmp = root.with_name(root.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "data" / "__cluster_metadata-0").mkdir(parents=True)
    started = time.perf_counter()
    stats = {"batches": 0, "records": 0, "bytes": 0}
    segments = write_segments(_batch_stream(size_mb * 2**20, seed, codec, stats),
                              tmp / "data" / "__cluster_metadata-0", segment_bytes=segment_mb * 2**20)
    write_meta_properties(tmp / "data", cluster_id=CLUSTER_ID, node_id=3000)
    manifest = dict(stats, segments=len(segments), codec=codec.name.lower(), seed=seed,
                    generate_s=round(time.perf_counter() - started, 1))
    (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1))
    shutil.rmtree(root, ignore_errors=True)
    tmp.rename(root)
    return partition, manifest


# --------------------------------------------------------------------------------------------- measuring


def _work_framing(partition: Path) -> tuple[int, int]:
    batches = records = 0
    for segment in sorted(partition.glob("*.log")):
        with segment.open("rb") as stream:
            for batch in iter_batches(stream, source=str(segment)):
                batches += 1
                records += len(batch.records)
    return batches, records


def _work_full(partition: Path) -> tuple[int, int]:
    records = batches = 0
    for expected, entry in enumerate(read_entries(partition)):
        if entry.offset != expected:
            raise SystemExit(f"offset {entry.offset} where {expected} was expected")
        if entry.offset == entry.batch_base_offset:
            batches += 1
        records += 1
    return batches, records


def worker(path: str, partition: Path) -> None:
    """Runs in a fresh process: one measurement, printed as JSON."""
    work = _work_framing if path == "framing" else _work_full
    wall, cpu = time.perf_counter(), time.process_time()
    batches, records = work(partition)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(json.dumps({"batches": batches, "records": records, "wall_s": wall, "cpu_s": cpu,
                      "peak_rss_mb": peak_kb / 1024}))


def measure(path: str, partition: Path) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    done = subprocess.run([sys.executable, "-m", "bench.bench_decode", "--worker", path, str(partition)],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{path} worker failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        mem_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                      if line.startswith("MemTotal:"))
        ram = f"{mem_kb / 2**20:.0f} GiB RAM"
    except (OSError, StopIteration):
        ram = "unknown RAM"
    return f"{len(os.sched_getaffinity(0))} CPU ({model}), {ram}, {platform.system()} {platform.machine()}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=64, help="size of each generated data set")
    parser.add_argument("--out", type=Path, default=Path("/tmp/kraft-bench"), help="cache of data sets")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--compression", default="none,lz4",
                        help="comma-separated codecs, one data set each: none, gzip, snappy, lz4, zstd")
    parser.add_argument("--segment-mb", type=int, default=256, help="segment roll size (segment.bytes)")
    parser.add_argument("--paths", default="framing,full", help="what to measure: framing, full")
    parser.add_argument("--worker", choices=["framing", "full"], help=argparse.SUPPRESS)
    parser.add_argument("partition", nargs="?", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.partition)
        return 0

    command = "python -m bench.bench_decode " + shlex.join(argv if argv is not None else sys.argv[1:])
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    header = ("| date | command | machine | Python | input | path | MB | batches | records | wall s | CPU s "
              "| MB/s | records/s | peak RSS MB |")
    rows = [header, "|" + "---|" * header.count(" | ") + "---|"]
    for name in args.compression.split(","):
        codec = Compression[name.strip().upper()]
        partition, manifest = generate(args.out, args.size_mb, args.seed, codec, args.segment_mb)
        print(f"data set {partition}: {manifest}", file=sys.stderr)
        megabytes = manifest["bytes"] / 2**20
        for path in args.paths.split(","):
            result = measure(path.strip(), partition)
            if (result["records"], result["batches"]) != (manifest["records"], manifest["batches"]):
                raise SystemExit(f"{path} read {result} but the data set has {manifest}")
            rows.append(
                f"| {date} | `{command}` | {machine()} | {platform.python_version()} | {args.size_mb} MB "
                f"{name.strip()} | {path.strip()} | {megabytes:.0f} | {result['batches']} "
                f"| {result['records']} | {result['wall_s']:.1f} | {result['cpu_s']:.1f} "
                f"| {megabytes / result['wall_s']:.1f} "
                f"| {result['records'] / result['wall_s']:,.0f} | {result['peak_rss_mb']:.0f} |")
            print(rows[-1], file=sys.stderr)
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
