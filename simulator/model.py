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
from records.partition_registration import RECORDED_DIRECTORY_IDS, merged_values, values_from_record

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


class Partition:
    """A partition registration (Kafka's ``PartitionRegistration``, its fields named so), in lists the controller's
    rules extend and compare. Kafka's rule builds and merges it: :meth:`register` and :meth:`merge` take the values
    of ``records.partition_registration`` in place. A list is never changed in place: a new value is a new list, so
    the controller's indexes look only at lists that changed."""

    __slots__ = ("adding_replicas", "directories", "eligible_leader_replicas", "isr", "key", "last_known_elr",
                 "leader", "leader_epoch", "leader_recovery_state", "partition_epoch", "partition_id",
                 "removing_replicas", "replicas", "topic")

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
        self.eligible_leader_replicas: list[int] = []
        self.last_known_elr: list[int] = []
        self.directories: list[bytes] = []

    def register(self, record: MetadataRecord) -> None:
        """``PartitionRegistration(PartitionRecord)``: the registration the record makes (the rule's values in the
        order of ``REGISTRATION_FIELDS``, directory ids as the records carry them)."""
        (self.replicas, self.isr, self.removing_replicas, self.adding_replicas, self.leader,
         self.leader_recovery_state, self.leader_epoch, self.partition_epoch, self.directories,
         self.eligible_leader_replicas, self.last_known_elr) = values_from_record(record, RECORDED_DIRECTORY_IDS, list)

    def merge(self, record: MetadataRecord) -> None:
        """``PartitionRegistration.merge(PartitionChangeRecord)``, in place: a null field keeps the old value (the
        same list)."""
        (self.replicas, self.isr, self.removing_replicas, self.adding_replicas, self.leader,
         self.leader_recovery_state, self.leader_epoch, self.partition_epoch, self.directories,
         self.eligible_leader_replicas, self.last_known_elr) = merged_values(self, record, RECORDED_DIRECTORY_IDS,
                                                                             list)


class Topic:
    """A topic registration (Kafka's ``TopicControlInfo``) with its configs."""

    __slots__ = ("configs", "name", "partitions", "topic_id", "topic_id_str")

    def __init__(self, name: str, topic_id: bytes) -> None:
        self.name = name
        self.topic_id = topic_id
        self.topic_id_str = uuid_to_str(topic_id)
        self.partitions: list[int] = []  # partition keys by partition id
        self.configs: dict[str, str] = {}
