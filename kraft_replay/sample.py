"""The small sample KRaft log shipped with kraft-replay (``kraft_replay/samples/sample-cluster``).

A 3-broker cluster written the way Kafka 3.7's controller writes it: bootstrap transaction,
controller and broker registrations, unfencing, a topic ``orders`` with 3 partitions of
replication factor 3, heartbeats (NoOps), then an incident — broker 2 stops heartbeating, its
partitions move away and it is fenced — and its return. ``python -m kraft_replay.sample``
rewrites the files; a test proves the committed bytes are what this code writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from records.kafka_json import make_record
from records.model import LogEntry, MetadataRecord, uuid_from_str
from records.writer import write_meta_properties, write_segments

CLUSTER_ID = "kRaFtRePlAySaMpLe0001Q"
ORDERS = uuid_from_str("b3JkZXJzLXRvcGljLWlkAA")
START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
SAMPLE_DIR = Path(__file__).resolve().parent / "samples" / "sample-cluster"


def _incarnation(broker: int, generation: int) -> bytes:
    return bytes([broker, generation]) + bytes(range(2, 16))


def _broker(broker: int, epoch: int, generation: int) -> MetadataRecord:
    return make_record(
        "RegisterBrokerRecord", 3, brokerId=broker, incarnationId=_incarnation(broker, generation),
        brokerEpoch=epoch,
        endPoints=[{"name": "PLAINTEXT", "host": f"broker-{broker}", "port": 9092, "securityProtocol": 0}],
        features=[{"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 19}],
        rack=f"rack-{broker}", fenced=True, logDirs=[_incarnation(broker, 99)])


def sample_batches() -> Iterator[list[MetadataRecord]]:
    """The records, grouped as the controller commits them (one list per batch)."""
    yield [make_record("BeginTransactionRecord", 0, name="Bootstrap records"),
           make_record("FeatureLevelRecord", 0, name="metadata.version", featureLevel=19),
           make_record("EndTransactionRecord", 0)]
    yield [make_record("RegisterControllerRecord", 0, controllerId=3000, incarnationId=_incarnation(30, 0),
                       endPoints=[{"name": "CONTROLLER", "host": "controller-1", "port": 9093,
                                   "securityProtocol": 0}])]
    epochs: dict[int, int] = {}
    offset = 5  # leader change (0), bootstrap (1..3), controller (4)
    for broker in (1, 2, 3):
        epochs[broker] = offset  # Kafka's broker epoch: the offset of the registration record
        yield [_broker(broker, offset, 0)]
        offset += 1
    for broker in (1, 2, 3):
        yield [make_record("BrokerRegistrationChangeRecord", 0, brokerId=broker, brokerEpoch=epochs[broker],
                           fenced=-1)]
    yield [make_record("TopicRecord", 0, name="orders", topicId=ORDERS),
           make_record("ConfigRecord", 0, resourceType=2, resourceName="orders", name="min.insync.replicas",
                       value="2"),
           *[make_record("PartitionRecord", 1, partitionId=p, topicId=ORDERS,
                         replicas=[1 + (p + i) % 3 for i in range(3)],
                         isr=[1 + (p + i) % 3 for i in range(3)], leader=1 + p % 3, leaderEpoch=0,
                         partitionEpoch=0, directories=[_incarnation(1 + (p + i) % 3, 99) for i in range(3)])
             for p in range(3)]]
    for _ in range(4):
        yield [make_record("NoOpRecord", 0)]
    # Broker 2 misses its heartbeats: leave every ISR, lose leadership of orders-1, be fenced.
    yield [make_record("PartitionChangeRecord", 1, partitionId=0, topicId=ORDERS, isr=[1, 3]),
           make_record("PartitionChangeRecord", 1, partitionId=1, topicId=ORDERS, isr=[3, 1], leader=3),
           make_record("PartitionChangeRecord", 1, partitionId=2, topicId=ORDERS, isr=[3, 1]),
           make_record("BrokerRegistrationChangeRecord", 0, brokerId=2, brokerEpoch=epochs[2], fenced=1)]
    yield [make_record("NoOpRecord", 0)]
    # Broker 2 restarts: new incarnation and epoch, unfenced, back in the ISRs, preferred leader again.
    yield [_broker(2, 25, 1)]
    yield [make_record("BrokerRegistrationChangeRecord", 0, brokerId=2, brokerEpoch=25, fenced=-1)]
    yield [make_record("PartitionChangeRecord", 1, partitionId=p, topicId=ORDERS, isr=isr)
           for p, isr in ((0, [1, 3, 2]), (2, [3, 1, 2]))]
    yield [make_record("PartitionChangeRecord", 1, partitionId=1, topicId=ORDERS, isr=[3, 1, 2])]
    yield [make_record("PartitionChangeRecord", 1, partitionId=1, topicId=ORDERS, leader=2)]


def sample_entries() -> Iterator[LogEntry]:
    leader_change = make_record("LeaderChangeMessage", 0, version=0, leaderId=3000,
                                voters=[{"voterId": 3000}], grantingVoters=[{"voterId": 3000}])
    yield LogEntry(offset=0, record=leader_change, batch_base_offset=0, raft_leader_epoch=1,
                   append_time_ms=START_MS)
    offset = 1
    for number, batch in enumerate(sample_batches(), start=1):
        base = offset
        for record in batch:
            yield LogEntry(offset=offset, record=record, batch_base_offset=base, raft_leader_epoch=1,
                           append_time_ms=START_MS + 500 * number)
            offset += 1


def write_sample(root: Path = SAMPLE_DIR) -> list[Path]:
    """Write ``meta.properties`` and ``__cluster_metadata-0/*.log`` under ``root``."""
    write_meta_properties(root, cluster_id=CLUSTER_ID, node_id=3000)
    log_dir = root / "__cluster_metadata-0"
    for old in log_dir.glob("*.log"):
        old.unlink()
    return write_segments(sample_entries(), log_dir)


def main(argv: list[str] | None = None) -> Any:
    for path in write_sample():
        print(path)


if __name__ == "__main__":
    main()
