"""Kafka's ``ConfigurationControlManager`` side of the simulated controller: topic and cluster-default configs,
and the two configs the controller's own rules read (``min.insync.replicas``, ``unclean.leader.election.enable``)."""

from __future__ import annotations

from records.model import MetadataRecord
from simulator.model import RESOURCE_BROKER, RESOURCE_TOPIC, Topic, record

UNCLEAN_KEY = "unclean.leader.election.enable"
MIN_ISR_KEY = "min.insync.replicas"


class ConfigurationControlManager:
    """Mixin of :class:`~simulator.controller.ControllerSimulator`: configs and the values its rules read."""

    def set_topic_config(self, name: str, key: str, value: str | None) -> int:
        self._topic(name)
        self._latency()
        return self._commit(self._config_records(RESOURCE_TOPIC, name, key, value))

    def set_cluster_config(self, key: str, value: str | None) -> int:
        """A cluster-wide broker default (``kafka-configs --entity-type brokers --entity-default``)."""
        return self._commit(self._config_records(RESOURCE_BROKER, "", key, value))

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
