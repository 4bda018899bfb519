"""The controller replays its own records to change its state, as Kafka's controller does
(``ClusterControlManager.replay``, ``ReplicationControlManager.replay``, ``ConfigurationControlManager.replay``, and
the client-quota, ACL, SCRAM, delegation-token and producer-id managers' ``replay``), so the state can never drift
from the log it wrote."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from records.kafka_constants import (
    FENCING_AS_BOOLEAN,
    IN_CONTROLLED_SHUTDOWN_AS_BOOLEAN,
    NO_LEADER,
    NONE,
)
from records.model import MetadataRecord
from records.partition_registration import ELR_CLEARED, has_elr
from records.standard_acl import StandardAcl
from records.token_information import DelegationToken
from simulator.facts import LeaderRecovered, PartitionLeaderless, Reassignment, UncleanElection
from simulator.model import (
    RECOVERED,
    RECOVERING,
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    UNASSIGNED_DIR_ID,
    Broker,
    Partition,
    SimulationError,
    Topic,
)

if TYPE_CHECKING:
    from simulator.client_control import QuotaEntity
    from simulator.facts import ScenarioFacts


class ControllerReplay:
    """Mixin of :class:`~simulator.controller.ControllerSimulator`: applying a written record to the state."""

    if TYPE_CHECKING:  # the controller state it changes (for type checkers only)
        _by_id: dict[bytes, Topic]
        acls: dict[bytes, StandardAcl]
        active: set[int]
        broker_configs: dict[str, dict[str, str]]
        brokers: dict[int, Broker]
        client_quotas: dict[QuotaEntity, dict[str, float]]
        cluster_configs: dict[str, str]
        delegation_tokens: dict[str, DelegationToken]
        facts: ScenarioFacts
        imbalanced: set[int]
        isr_index: dict[int, set[int]]
        leaderless: set[int]
        next_partition_key: int
        next_producer_id: int
        partitions: dict[int, Partition]
        reassigning: set[int]
        recovering: set[int]
        replica_index: dict[int, set[int]]
        scram_credentials: dict[tuple[str, int], int]
        topics: dict[str, Topic]

    def _replay(self, metadata_record: MetadataRecord, offset: int, mark: str | None) -> None:
        """Apply one committed record; ``mark`` names the incident the caller knows it to be (facts only)."""
        kind = metadata_record.type_name
        data = metadata_record.data
        topic: Topic | None  # a ConfigRecord's topic may be unknown
        if kind == "PartitionChangeRecord":
            self._replay_change(metadata_record, offset, mark)
        elif kind == "PartitionRecord":
            self._replay_partition(metadata_record)
        elif kind == "RegisterBrokerRecord":
            self._replay_register(data)
        elif kind == "BrokerRegistrationChangeRecord":
            self._set_broker_state(data["brokerId"], FENCING_AS_BOOLEAN.get(data["fenced"]),
                                   IN_CONTROLLED_SHUTDOWN_AS_BOOLEAN.get(data.get("inControlledShutdown", NONE)))
        elif kind == "FenceBrokerRecord":
            self._set_broker_state(data["id"], True, None)
        elif kind == "UnfenceBrokerRecord":
            self._set_broker_state(data["id"], False, None)
        elif kind == "UnregisterBrokerRecord":
            self.brokers.pop(data["brokerId"], None)
            self.active.discard(data["brokerId"])
        elif kind == "TopicRecord":
            topic = Topic(data["name"], data["topicId"])
            self.topics[topic.name] = topic
            self._by_id[topic.topic_id] = topic
        elif kind == "ConfigRecord":
            if data["resourceType"] == RESOURCE_TOPIC:
                topic = self.topics.get(data["resourceName"])
                if topic is not None:
                    self._set_config(topic.configs, data["name"], data["value"])
            elif data["resourceType"] == RESOURCE_BROKER and data["resourceName"] == "":
                self._set_config(self.cluster_configs, data["name"], data["value"])
            elif data["resourceType"] == RESOURCE_BROKER:
                configs = self.broker_configs.setdefault(data["resourceName"], {})
                self._set_config(configs, data["name"], data["value"])
                if not configs:  # a resource left empty disappears
                    del self.broker_configs[data["resourceName"]]
        elif kind == "RemoveTopicRecord":
            self._replay_remove_topic(data["topicId"])
        elif kind == "ClearElrRecord":
            self._replay_clear_elr(data["topicName"])
        else:
            self._replay_other_parts(metadata_record)

    def _replay_other_parts(self, metadata_record: MetadataRecord) -> None:
        """Client quotas, ACLs, SCRAM, delegation tokens and producer ids, as their managers replay them; a record
        their ``replay`` throws on is a simulator bug, never written on purpose."""
        kind, data = metadata_record.type_name, metadata_record.data
        if kind == "ClientQuotaRecord":
            entity = tuple((item["entityType"], item["entityName"]) for item in data["entity"])
            quotas = self.client_quotas.setdefault(entity, {})
            if data["remove"]:
                quotas.pop(data["key"], None)
                if not quotas:
                    del self.client_quotas[entity]
            else:
                quotas[data["key"]] = data["value"]
        elif kind == "AccessControlEntryRecord":
            self.acls[data["id"]] = StandardAcl.from_record(metadata_record)
        elif kind == "RemoveAccessControlEntryRecord":
            if self.acls.pop(data["id"], None) is None:
                raise SimulationError("Unable to replay RemoveAccessControlEntryRecord: no acl with that ID found.")
        elif kind == "UserScramCredentialRecord":
            self.scram_credentials[(data["name"], data["mechanism"])] = data["iterations"]
        elif kind == "RemoveUserScramCredentialRecord":
            if self.scram_credentials.pop((data["name"], data["mechanism"]), None) is None:
                raise SimulationError(f"Unable to find credential to delete: {data['name']}")
        elif kind == "DelegationTokenRecord":
            self.delegation_tokens[data["tokenId"]] = DelegationToken(
                data["tokenId"], data["owner"], data["requester"], tuple(data["renewers"]), data["issueTimestamp"],
                data["maxTimestamp"], data["expirationTimestamp"])
        elif kind == "RemoveDelegationTokenRecord":
            self.delegation_tokens.pop(data["tokenId"], None)
        elif kind == "ProducerIdsRecord":
            if data["nextProducerId"] <= self.next_producer_id:
                raise SimulationError("Producer ID from record is not monotonically increasing")
            self.next_producer_id = data["nextProducerId"]

    def _replay_clear_elr(self, topic_name: str) -> None:
        """``ReplicationControlManager.replay(ClearElrRecord)``: a partition of the topic (of every topic for an
        empty name) with an ELR or a last known ELR loses both, and its partition epoch moves on."""
        topics = [self.topics[topic_name]] if topic_name else list(self.topics.values())
        for topic in topics:
            for key in topic.partitions:
                partition = self.partitions[key]
                if has_elr(partition):
                    partition.merge(ELR_CLEARED)

    @staticmethod
    def _set_config(configs: dict[str, str], name: str, value: str | None) -> None:
        if value is None:
            configs.pop(name, None)
        else:
            configs[name] = value

    def _set_broker_state(self, broker_id: int, fenced: bool | None, in_controlled_shutdown: bool | None) -> None:
        """``ClusterControlManager.replayRegistrationChange``: None leaves a flag as it is."""
        broker = self.brokers[broker_id]
        if fenced is not None:
            broker.fenced = fenced
        if in_controlled_shutdown is not None:
            broker.in_controlled_shutdown = in_controlled_shutdown
        if broker.fenced or broker.in_controlled_shutdown:
            self.active.discard(broker_id)
        else:
            self.active.add(broker_id)

    def _replay_register(self, data: dict[str, Any]) -> None:
        broker_id = data["brokerId"]
        old = self.brokers.get(broker_id)
        log_dir = data["logDirs"][0] if data.get("logDirs") else (old.log_dir if old else UNASSIGNED_DIR_ID)
        broker = Broker(broker_id, data["brokerEpoch"], data["incarnationId"], data["rack"], log_dir)
        broker.fenced = data["fenced"]
        self.brokers[broker_id] = broker
        self.active.discard(broker_id)
        if not broker.fenced:
            self.active.add(broker_id)

    def _index(self, partition: Partition, old_replicas: list[int], old_isr: list[int]) -> None:
        """Keep the per-broker and per-state indexes of partitions in step with one changed partition."""
        key = partition.key
        if old_isr is not partition.isr:
            for broker_id in old_isr:
                if broker_id not in partition.isr:
                    self.isr_index[broker_id].discard(key)
            for broker_id in partition.isr:
                if broker_id not in old_isr:
                    self.isr_index.setdefault(broker_id, set()).add(key)
        if old_replicas is not partition.replicas:
            for broker_id in old_replicas:
                if broker_id not in partition.replicas:
                    self.replica_index[broker_id].discard(key)
            for broker_id in partition.replicas:
                if broker_id not in old_replicas:
                    self.replica_index.setdefault(broker_id, set()).add(key)
        if partition.leader == NO_LEADER:
            self.leaderless.add(key)
        else:
            self.leaderless.discard(key)
        if partition.leader != partition.replicas[0]:
            self.imbalanced.add(key)
        else:
            self.imbalanced.discard(key)
        if partition.leader_recovery_state == RECOVERING:
            self.recovering.add(key)
        else:
            self.recovering.discard(key)
        if partition.adding_replicas or partition.removing_replicas:
            self.reassigning.add(key)
        else:
            self.reassigning.discard(key)

    def _replay_partition(self, metadata_record: MetadataRecord) -> None:
        topic = self._by_id[metadata_record.data["topicId"]]
        key = self.next_partition_key
        self.next_partition_key += 1
        partition = Partition(key, topic, metadata_record.data["partitionId"])
        partition.register(metadata_record)
        self.partitions[key] = partition
        topic.partitions.append(key)
        self._index(partition, [], [])

    def _replay_change(self, metadata_record: MetadataRecord, offset: int, mark: str | None) -> None:
        data = metadata_record.data
        topic = self._by_id[data["topicId"]]
        partition = self.partitions[topic.partitions[data["partitionId"]]]
        old_replicas, old_isr, old_leader = partition.replicas, partition.isr, partition.leader
        old_leader_recovery_state = partition.leader_recovery_state
        partition.merge(metadata_record)
        self._index(partition, old_replicas, old_isr)
        facts = self.facts
        topic_name, topic_id, partition_id = topic.name, topic.topic_id_str, partition.partition_id
        if partition.leader == NO_LEADER and old_leader != NO_LEADER:
            facts.leaderless.append(PartitionLeaderless(offset, topic_name, topic_id, partition_id,
                                                        partition.leader_epoch, old_leader))
        if mark == "unclean":
            facts.unclean_elections.append(UncleanElection(offset, topic_name, topic_id, partition_id,
                                                           partition.leader, partition.leader_epoch))
        elif mark == "cancelled":
            facts.reassignments.append(Reassignment(offset, mark, topic_name, topic_id, partition_id,
                                                    tuple(partition.replicas)))
        if old_leader_recovery_state == RECOVERING and partition.leader_recovery_state == RECOVERED:
            facts.recovered.append(LeaderRecovered(offset, topic_name, topic_id, partition_id))

    def _replay_remove_topic(self, topic_id: bytes) -> None:
        topic = self._by_id.pop(topic_id)
        del self.topics[topic.name]
        for key in topic.partitions:
            partition = self.partitions.pop(key)
            for broker_id in partition.isr:
                self.isr_index[broker_id].discard(key)
            for broker_id in partition.replicas:
                self.replica_index[broker_id].discard(key)
            for index in (self.leaderless, self.imbalanced, self.recovering, self.reassigning):
                index.discard(key)
