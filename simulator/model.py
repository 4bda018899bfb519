"""The simulated controller's options and registrations (brokers, topics, partitions), and its record maker."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import cache
from typing import Any

from records.kafka_constants import (
    CONFIG_RESOURCE_BROKER,
    CONFIG_RESOURCE_TOPIC,
    NO_LEADER,
    RECOVERY_STATES,
    UNASSIGNED_DIR,
)
from records.kafka_json import make_record
from records.model import MetadataRecord, uuid_from_str, uuid_to_str
from records.partition_registration import PartitionRegistration

RECOVERED, RECOVERING = RECOVERY_STATES  # LeaderRecoveryState
UNASSIGNED_DIR_ID = uuid_from_str(UNASSIGNED_DIR)  # the records carry directory ids as 16 bytes
RESOURCE_TOPIC = CONFIG_RESOURCE_TOPIC  # the config resources (ConfigResource.Type), as the simulator names them
RESOURCE_BROKER = CONFIG_RESOURCE_BROKER


class SimulationError(ValueError):
    """An operation Kafka's controller would reject (unknown broker, not enough brokers, ...)."""


class Election(Enum):
    """PartitionChangeBuilder.Election."""

    PREFERRED = "preferred"
    ONLINE = "online"
    UNCLEAN = "unclean"


@dataclass(frozen=True)
class SimConfig:
    """Options of one simulated cluster; the same config always gives the same log."""

    metadata_version: str = "3.9"
    seed: int = 0
    unclean: bool = False  # cluster default unclean.leader.election.enable (written as a ConfigRecord)
    elr: bool = False  # eligible leader replicas (KIP-966); needs metadata version 4.0
    min_insync_replicas: int = 1  # cluster default min.insync.replicas (Kafka's default is 1)
    controller_ids: tuple[int, ...] = (3000, 3001, 3002)
    start_time_ms: int = 1_700_000_000_000
    noop_interval_ms: int = 500  # metadata.max.idle.interval.ms
    session_timeout_ms: int = 9000  # broker.session.timeout.ms
    max_records_per_batch: int = 10000  # QuorumController's MAX_RECORDS_PER_BATCH
    cluster_id: str | None = None


@cache
def _defaults(type_name: str, version: int) -> tuple[tuple[str, Any], ...]:
    return tuple(make_record(type_name, version).data.items())


def record(type_name: str, version: int, /, **fields: Any) -> MetadataRecord:
    """A record from cached Kafka defaults plus fields; fields the version lacks are dropped."""
    data = dict(_defaults(type_name, version))
    for name, value in fields.items():
        if name in data:
            data[name] = value
    return MetadataRecord(type_name, version, data)


class Broker:
    """A broker registration (Kafka's ``BrokerRegistration``), the fields the controller's rules read."""

    __slots__ = ("broker_id", "epoch", "fenced", "in_controlled_shutdown", "incarnation", "log_dir", "rack")

    def __init__(self, broker_id: int, epoch: int, incarnation: bytes, rack: str | None,
                 log_dir: bytes) -> None:
        self.broker_id = broker_id
        self.epoch = epoch
        self.incarnation = incarnation
        self.rack = rack
        self.fenced = True
        self.in_controlled_shutdown = False
        self.log_dir = log_dir


# A partition's lists: (its name here, its name in Kafka's PartitionRegistration)
LISTS = (("replicas", "replicas"), ("isr", "isr"), ("removing_replicas", "removing_replicas"),
         ("adding_replicas", "adding_replicas"), ("directories", "directories"), ("elr", "eligible_leader_replicas"),
         ("last_known_elr", "last_known_elr"))


class Partition:
    """A partition registration (PartitionRegistration), the fields the records carry, in lists the controller's
    rules extend and compare; Kafka's rule that builds and merges it is ``records.partition_registration``
    (:meth:`registration`, :meth:`register`)."""

    __slots__ = ("_registration", "adding_replicas", "directories", "elr", "isr", "key", "last_known_elr", "leader",
                 "leader_epoch", "leader_recovery_state", "partition_epoch", "partition_id", "removing_replicas",
                 "replicas", "topic")

    def __init__(self, key: int, topic: Topic, partition_id: int) -> None:
        self.key = key
        self.topic = topic
        self.partition_id = partition_id
        self.replicas: list[int] = []
        self.isr: list[int] = []
        self.removing_replicas: list[int] = []
        self.adding_replicas: list[int] = []
        self.leader = NO_LEADER
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.leader_recovery_state = RECOVERED
        self.elr: list[int] = []
        self.last_known_elr: list[int] = []
        self.directories: list[bytes] = []
        self._registration: PartitionRegistration[bytes] | None = None

    def registration(self) -> PartitionRegistration[bytes]:
        """The registration as Kafka's rule holds it (directory ids as the records carry them): the one it was
        last given; the lists above are its values, never changed in place."""
        assert self._registration is not None, "a partition is registered before it changes"
        return self._registration

    def register(self, registration: PartitionRegistration[bytes]) -> None:
        """Take a registration Kafka's rule built or merged; a list the merge kept stays the same object (the
        controller's indexes look only at lists that changed)."""
        old, self._registration = self._registration, registration
        for name, kafka_name in LISTS:
            value = getattr(registration, kafka_name)
            if old is None or value is not getattr(old, kafka_name):
                setattr(self, name, list(value))
        self.leader = registration.leader
        self.leader_recovery_state = registration.leader_recovery_state
        self.leader_epoch = registration.leader_epoch
        self.partition_epoch = registration.partition_epoch


class Topic:
    """A topic registration (Kafka's ``TopicControlInfo``) with its configs."""

    __slots__ = ("configs", "name", "partitions", "topic_id", "topic_id_str")

    def __init__(self, name: str, topic_id: bytes) -> None:
        self.name = name
        self.topic_id = topic_id
        self.topic_id_str = uuid_to_str(topic_id)
        self.partitions: list[int] = []  # partition keys by partition id
        self.configs: dict[str, str] = {}
