"""What a simulation did, with the log offsets where it happened, so audits can be checked against it.

Every fact is recorded by the simulator when it writes the record, so the offsets are exact: an audit
that reads the generated log must find exactly these incidents.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class BrokerFenced:
    offset: int  # offset of the fence record (FenceBrokerRecord or BrokerRegistrationChangeRecord)
    broker_id: int
    broker_epoch: int
    reason: str  # "heartbeat-timeout", "controlled-shutdown"


@dataclass(frozen=True, slots=True)
class BrokerUnfenced:
    offset: int
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class BrokerRegistered:
    offset: int  # also the broker epoch, as Kafka assigns it
    broker_id: int
    broker_epoch: int
    incarnation_id: str


@dataclass(frozen=True, slots=True)
class BrokerUnregistered:
    offset: int
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class ControlledShutdown:
    offset: int  # first record of the controlled-shutdown batch
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class PartitionLeaderless:
    offset: int  # the PartitionChangeRecord with leader -1
    topic: str
    topic_id: str
    partition: int
    leader_epoch: int  # the epoch after the change
    previous_leader: int


@dataclass(frozen=True, slots=True)
class UncleanElection:
    offset: int
    topic: str
    topic_id: str
    partition: int
    leader: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class LeaderRecovered:
    offset: int  # leaderRecoveryState back to 0
    topic: str
    topic_id: str
    partition: int


@dataclass(frozen=True, slots=True)
class ControllerFailover:
    offset: int  # the LeaderChangeMessage
    raft_epoch: int
    leader_id: int


@dataclass(frozen=True, slots=True)
class Transaction:
    name: str
    begin_offset: int
    end_offset: int  # EndTransactionRecord or AbortTransactionRecord
    aborted: bool


@dataclass(frozen=True, slots=True)
class TopicChange:
    offset: int  # TopicRecord / first PartitionRecord / RemoveTopicRecord
    kind: str  # "created", "partitions-added", "deleted"
    topic: str
    topic_id: str
    partitions: int


@dataclass(frozen=True, slots=True)
class Reassignment:
    offset: int
    kind: str  # "started", "completed", "cancelled"
    topic: str
    topic_id: str
    partition: int
    replicas: tuple[int, ...]  # target (started/completed) or restored (cancelled) replicas


@dataclass(frozen=True, slots=True)
class ImageChange:
    """A change to one of the image's other parts (issue 19): configs, client quotas, ACLs, SCRAM credentials,
    delegation tokens, producer ids, each keyed as its history table keys it."""

    offset: int
    part: str  # "config", "client-quota", "acl", "scram", "delegation-token", "producer-ids"
    kind: str  # "set", "removed", "created", "upserted", "renewed", "allocated"
    key: Any  # (resourceType, resourceName, name); (entity, key); the ACL id; (name, mechanism); token id; broker
    value: Any  # the new value (None when removed): config value, quota, ACL entry, iterations, token, next id


@dataclass
class ScenarioFacts:
    """Incidents of one run, in log order, each with the offset of the record that made it."""

    scenario: str = "scripted"
    seed: int = 0
    metadata_version: str = ""
    fenced: list[BrokerFenced] = field(default_factory=list)
    unfenced: list[BrokerUnfenced] = field(default_factory=list)
    registered: list[BrokerRegistered] = field(default_factory=list)
    unregistered: list[BrokerUnregistered] = field(default_factory=list)
    controlled_shutdowns: list[ControlledShutdown] = field(default_factory=list)
    leaderless: list[PartitionLeaderless] = field(default_factory=list)
    unclean_elections: list[UncleanElection] = field(default_factory=list)
    recovered: list[LeaderRecovered] = field(default_factory=list)
    failovers: list[ControllerFailover] = field(default_factory=list)
    transactions: list[Transaction] = field(default_factory=list)
    topics: list[TopicChange] = field(default_factory=list)
    reassignments: list[Reassignment] = field(default_factory=list)
    image_changes: list[ImageChange] = field(default_factory=list)
    key: dict[str, Any] = field(default_factory=dict)  # scenario-specific facts (documented per scenario)

    @property
    def aborted_transactions(self) -> list[Transaction]:
        return [t for t in self.transactions if t.aborted]

    def changes_of(self, part: str) -> list[ImageChange]:
        """The image changes to one part, in log order."""
        return [change for change in self.image_changes if change.part == part]
