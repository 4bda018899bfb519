"""Kafka's ``ConfigurationControlManager`` side of the simulated controller: topic, broker and cluster-default
configs, and the two configs the controller's own rules read (``min.insync.replicas``,
``unclean.leader.election.enable``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from records.model import MetadataRecord
from simulator.facts import ImageChange
from simulator.model import RESOURCE_BROKER, RESOURCE_TOPIC, SimulationError, Topic, record

if TYPE_CHECKING:
    from simulator.facts import ScenarioFacts
    from simulator.model import Broker

UNCLEAN_KEY = "unclean.leader.election.enable"
MIN_ISR_KEY = "min.insync.replicas"


class ConfigurationControlManager:
    """Mixin of :class:`~simulator.controller.ControllerSimulator`: configs and the values its rules read."""

    if TYPE_CHECKING:  # what it uses of the controller it is mixed into (for type checkers only)
        cluster_configs: dict[str, str]
        elr: bool
        facts: ScenarioFacts

        def _broker(self, broker_id: int) -> Broker: ...
        def _commit(self, records: list[MetadataRecord], marks: dict[int, str] | None = None) -> int: ...
        def _latency(self) -> None: ...
        def _topic(self, name: str) -> Topic: ...

    def set_topic_config(self, name: str, key: str, value: str | None) -> int:
        """IncrementalAlterConfigs on a topic: SET (``value``) or DELETE (None). Returns the ConfigRecord's offset."""
        self._topic(name)
        self._latency()
        return self._commit_config(RESOURCE_TOPIC, name, key, value)

    def set_cluster_config(self, key: str, value: str | None) -> int:
        """A cluster-wide broker default (``kafka-configs --entity-type brokers --entity-default``)."""
        return self._commit_config(RESOURCE_BROKER, "", key, value)

    def set_broker_config(self, broker_id: int, key: str, value: str | None) -> int:
        """A dynamic config of one broker (``--entity-type brokers --entity-name ID``); brokers accept keys Kafka
        does not define (``DynamicConfig.Broker`` allows custom configs), as well as password-type ones, which the
        log holds in the clear."""
        self._broker(broker_id)
        self._latency()
        return self._commit_config(RESOURCE_BROKER, str(broker_id), key, value)

    def _commit_config(self, resource_type: int, resource_name: str, key: str, value: str | None) -> int:
        """One config change's batch; its facts name the ConfigRecord's offset."""
        if not key:
            raise SimulationError("a config needs a name")
        offset = self._commit(self._config_records(resource_type, resource_name, key, value))
        self.facts.image_changes.append(ImageChange(offset, "config", "removed" if value is None else "set",
                                                    (resource_type, resource_name, key), value))
        return offset

    def _config_records(self, resource_type: int, resource_name: str, key: str,
                        value: str | None) -> list[MetadataRecord]:
        """The ConfigRecord, then the ClearElrRecord Kafka 4.x's ``ConfigurationControlManager`` adds in the
        same atomic batch when ``min.insync.replicas`` changes while ELR is enabled: an ELR chosen under the
        old minimum means nothing under the new one. It names the topic; a broker resource clears every topic."""
        records = [record("ConfigRecord", 0, resourceType=resource_type, resourceName=resource_name,
                          name=key, value=value)]
        if self.elr and key == MIN_ISR_KEY:
            records.append(record("ClearElrRecord", 0,
                                  topicName=resource_name if resource_type == RESOURCE_TOPIC else ""))
        return records

    def _min_isr(self, topic: Topic) -> int:
        value = topic.configs.get(MIN_ISR_KEY) or self.cluster_configs.get(MIN_ISR_KEY)
        return int(value) if value else 1

    def _unclean_enabled(self, topic: Topic) -> bool:
        value = topic.configs.get(UNCLEAN_KEY, self.cluster_configs.get(UNCLEAN_KEY, "false"))
        return value == "true"
