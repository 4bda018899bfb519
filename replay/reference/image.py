"""The reference fold's in-memory image (Kafka's ``MetadataImage``: brokers, controllers, topics, partitions,
features, and the other parts of ``replay.reference.image_parts_delta``) and what one commit changed in it; the
rules that change it are ``replay.reference.metadata_delta``."""

from __future__ import annotations

from dataclasses import dataclass, field

from records.partition_registration import PartitionRegistration
from replay.reference.image_parts_delta import Cause, ImageParts, PartChanges


@dataclass(frozen=True)
class Partition(PartitionRegistration[str]):
    """A partition's registration (Kafka's rule: ``records.partition_registration``, directory ids as Kafka prints
    them) with the topic and partition ids it is registered under."""

    topic_id: str
    partition_id: int


@dataclass(frozen=True)
class Broker:
    broker_id: int
    broker_epoch: int
    incarnation_id: str
    fenced: bool
    in_controlled_shutdown: bool
    rack: str | None
    endpoints: tuple[tuple[str, str, int, int], ...]  # (name, host, port, security_protocol)
    features: tuple[tuple[str, int, int], ...]  # (name, min_supported_version, max_supported_version)
    log_dirs: tuple[str, ...]
    is_migrating_zk_broker: bool


@dataclass(frozen=True)
class Controller:
    controller_id: int
    incarnation_id: str
    zk_migration_ready: bool
    endpoints: tuple[tuple[str, str, int, int], ...]
    features: tuple[tuple[str, int, int], ...]


@dataclass
class Image(ImageParts):
    """The metadata image: what Kafka's ``MetadataImage`` holds (its other parts: ``ImageParts``)."""

    topics: dict[str, str] = field(default_factory=dict)  # topic id -> name
    partitions: dict[tuple[str, int], Partition] = field(default_factory=dict)
    brokers: dict[int, Broker] = field(default_factory=dict)
    controllers: dict[int, Controller] = field(default_factory=dict)
    features: dict[str, int] = field(default_factory=dict)

    def copy(self) -> Image:
        """An independent copy (the values are immutable, so copying the dicts suffices)."""
        return Image(topics=dict(self.topics), partitions=dict(self.partitions), brokers=dict(self.brokers),
                     controllers=dict(self.controllers), features=dict(self.features), **self.parts_copy())

    def topic_partitions(self, topic_id: str) -> dict[int, Partition]:
        return {pid: p for (tid, pid), p in self.partitions.items() if tid == topic_id}


@dataclass(frozen=True)
class Anomaly:
    offset: int
    record_type: str
    kind: str  # "refused" (not applied, as Kafka refuses) or "invariant" (applied, breaks an invariant)
    reason: str


@dataclass
class Changes(PartChanges):
    """What the records of one commit touched, each with the last record that touched it."""

    topics: dict[str, Cause] = field(default_factory=dict)
    partitions: dict[tuple[str, int], Cause] = field(default_factory=dict)
    brokers: dict[int, Cause] = field(default_factory=dict)
    registered_brokers: set[int] = field(default_factory=set)  # RegisterBrokerRecord: always a new version
    registered_topics: set[str] = field(default_factory=set)  # TopicRecord: always a new version
    controllers: dict[int, Cause] = field(default_factory=dict)
    features: dict[str, Cause] = field(default_factory=dict)
    anomalies: list[Anomaly] = field(default_factory=list)
