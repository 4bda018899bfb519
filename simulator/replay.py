"""The controller replays its own records to change its state, as Kafka's controller does
(``ClusterControlManager.replay``, ``ReplicationControlManager.replay``, ``ConfigurationControlManager.replay``),
so the state can never drift from the log it wrote."""

from __future__ import annotations

from typing import Any

from records.kafka_constants import NO_LEADER, NO_LEADER_CHANGE
from records.model import MetadataRecord
from simulator.facts import LeaderRecovered, PartitionLeaderless, Reassignment, UncleanElection
from simulator.model import RESOURCE_BROKER, RESOURCE_TOPIC, UNASSIGNED_DIR_ID, Broker, Partition, Topic


class ControllerReplay:
    """Mixin of :class:`~simulator.controller.ControllerSimulator`: applying a written record to the state."""

    def _replay(self, rec: MetadataRecord, offset: int, mark: str | None) -> None:
        kind = rec.type_name
        data = rec.data
        if kind == "PartitionChangeRecord":
            self._replay_change(data, offset, mark)
        elif kind == "PartitionRecord":
            self._replay_partition(data)
        elif kind == "RegisterBrokerRecord":
            self._replay_register(data)
        elif kind == "BrokerRegistrationChangeRecord":
            fenced = data["fenced"]
            self._set_broker_state(data["brokerId"], True if fenced == 1 else False if fenced == -1 else None,
                                   True if data.get("inControlledShutdown") == 1 else None)
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
        elif kind == "RemoveTopicRecord":
            self._replay_remove_topic(data["topicId"])
        elif kind == "ClearElrRecord":
            self._replay_clear_elr(data["topicName"])

    def _replay_clear_elr(self, topic_name: str) -> None:
        """``ReplicationControlManager.replay(ClearElrRecord)``: a partition of the topic (of every topic for an
        empty name) with an ELR or a last known ELR loses both, and its partition epoch moves on."""
        topics = [self.topics[topic_name]] if topic_name else list(self.topics.values())
        for topic in topics:
            for key in topic.partitions:
                p = self.partitions[key]
                if p.elr or p.last_known_elr:
                    p.elr, p.last_known_elr = [], []
                    p.partition_epoch += 1

    @staticmethod
    def _set_config(configs: dict[str, str], name: str, value: str | None) -> None:
        if value is None:
            configs.pop(name, None)
        else:
            configs[name] = value

    def _set_broker_state(self, broker_id: int, fenced: bool | None, cs: bool | None) -> None:
        broker = self.brokers[broker_id]
        if fenced is not None:
            broker.fenced = fenced
        if cs is not None:
            broker.in_controlled_shutdown = cs
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

    def _index(self, p: Partition, old_replicas: list[int], old_isr: list[int]) -> None:
        key = p.key
        if old_isr is not p.isr:
            for b in old_isr:
                if b not in p.isr:
                    self.isr_index[b].discard(key)
            for b in p.isr:
                if b not in old_isr:
                    self.isr_index.setdefault(b, set()).add(key)
        if old_replicas is not p.replicas:
            for b in old_replicas:
                if b not in p.replicas:
                    self.replica_index[b].discard(key)
            for b in p.replicas:
                if b not in old_replicas:
                    self.replica_index.setdefault(b, set()).add(key)
        if p.leader == NO_LEADER:
            self.leaderless.add(key)
        else:
            self.leaderless.discard(key)
        if p.leader != p.replicas[0]:
            self.imbalanced.add(key)
        else:
            self.imbalanced.discard(key)
        if p.leader_recovery_state == 1:
            self.recovering.add(key)
        else:
            self.recovering.discard(key)
        if p.adding_replicas or p.removing_replicas:
            self.reassigning.add(key)
        else:
            self.reassigning.discard(key)

    def _replay_partition(self, data: dict[str, Any]) -> None:
        topic = self._by_id[data["topicId"]]
        key = self.next_partition_key
        self.next_partition_key += 1
        p = Partition(key, topic, data["partitionId"])
        p.replicas = list(data["replicas"])
        p.isr = list(data["isr"])
        p.removing_replicas = list(data["removingReplicas"])
        p.adding_replicas = list(data["addingReplicas"])
        p.leader = data["leader"]
        p.leader_epoch = data["leaderEpoch"]
        p.partition_epoch = data["partitionEpoch"]
        p.leader_recovery_state = data["leaderRecoveryState"]
        p.directories = list(data.get("directories", ()))
        p.elr = list(data.get("eligibleLeaderReplicas") or ())
        p.last_known_elr = list(data.get("lastKnownElr") or ())
        self.partitions[key] = p
        topic.partitions.append(key)
        self._index(p, [], [])

    def _replay_change(self, data: dict[str, Any], offset: int, mark: str | None) -> None:
        topic = self._by_id[data["topicId"]]
        p = self.partitions[topic.partitions[data["partitionId"]]]
        old_replicas, old_isr, old_leader = p.replicas, p.isr, p.leader
        if data["isr"] is not None:
            p.isr = list(data["isr"])
        if data["leader"] != NO_LEADER_CHANGE:
            p.leader = data["leader"]
            p.leader_epoch += 1
        if data["replicas"] is not None:
            p.replicas = list(data["replicas"])
        if data["removingReplicas"] is not None:
            p.removing_replicas = list(data["removingReplicas"])
        if data["addingReplicas"] is not None:
            p.adding_replicas = list(data["addingReplicas"])
        old_lrs = p.leader_recovery_state
        if data["leaderRecoveryState"] != -1:
            p.leader_recovery_state = data["leaderRecoveryState"]
        if data.get("directories") is not None:
            p.directories = list(data["directories"])
        if data.get("eligibleLeaderReplicas") is not None:
            p.elr = list(data["eligibleLeaderReplicas"])
        if data.get("lastKnownElr") is not None:
            p.last_known_elr = list(data["lastKnownElr"])
        p.partition_epoch += 1
        self._index(p, old_replicas, old_isr)
        facts = self.facts
        if p.leader == NO_LEADER and old_leader != NO_LEADER:
            facts.leaderless.append(PartitionLeaderless(offset, topic.name, topic.topic_id_str, p.partition_id,
                                                        p.leader_epoch, old_leader))
        if mark == "unclean":
            facts.unclean_elections.append(UncleanElection(offset, topic.name, topic.topic_id_str, p.partition_id,
                                                           p.leader, p.leader_epoch))
        elif mark == "cancelled":
            facts.reassignments.append(Reassignment(offset, mark, topic.name, topic.topic_id_str, p.partition_id,
                                                    tuple(p.replicas)))
        if old_lrs == 1 and p.leader_recovery_state == 0:
            facts.recovered.append(LeaderRecovered(offset, topic.name, topic.topic_id_str, p.partition_id))

    def _replay_remove_topic(self, topic_id: bytes) -> None:
        topic = self._by_id.pop(topic_id)
        del self.topics[topic.name]
        for key in topic.partitions:
            p = self.partitions.pop(key)
            for b in p.isr:
                self.isr_index[b].discard(key)
            for b in p.replicas:
                self.replica_index[b].discard(key)
            for index in (self.leaderless, self.imbalanced, self.recovering, self.reassigning):
                index.discard(key)
