"""The topic configs Kafka's controller reads when it elects a leader, with their defaults and broker synonyms as
Kafka's own jars give them (the ``topicConfigs`` of ``kafka_configs.json``, ``records.kafka_configs``: generated,
never typed by hand).

``ReplicationControlManager`` asks ``ConfigurationControlManager.getTopicConfig`` for
``unclean.leader.election.enable`` (``uncleanLeaderElectionEnabledForTopic``: ``Boolean.parseBoolean`` of the
value, false when empty) and ``min.insync.replicas`` (``getTopicEffectiveMinIsr``: ``Integer.parseInt`` of the
value, at most the partition count of replicas), and ``KafkaConfigSchema.resolveEffectiveTopicConfig`` answers in
this order: the topic's config, then each broker synonym in the controller's own node config (BROKER
``<its node id>``), then in the cluster default (BROKER ``""``), then in its static ``server.properties``, then the
TOPIC ConfigDef's default. Sources are named as ``ConfigEntry.ConfigSource`` names them.
"""

from __future__ import annotations

from records.kafka_configs import kafka_configs

UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"  # TopicConfig.UNCLEAN_LEADER_ELECTION_ENABLE_CONFIG
MIN_IN_SYNC_REPLICAS = "min.insync.replicas"  # TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG
AUDITED_KEYS = (UNCLEAN_LEADER_ELECTION_ENABLE, MIN_IN_SYNC_REPLICAS)

# ConfigEntry.ConfigSource, in resolveEffectiveTopicConfig's order of precedence
DYNAMIC_TOPIC_CONFIG = "DYNAMIC_TOPIC_CONFIG"
DYNAMIC_BROKER_CONFIG = "DYNAMIC_BROKER_CONFIG"  # the active controller's own node (BROKER "<node id>")
DYNAMIC_DEFAULT_BROKER_CONFIG = "DYNAMIC_DEFAULT_BROKER_CONFIG"  # the cluster default (BROKER "")
STATIC_BROKER_CONFIG = "STATIC_BROKER_CONFIG"  # server.properties: not in the log, only what the user passes
DEFAULT_CONFIG = "DEFAULT_CONFIG"
CONFIG_SOURCES = (DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG,
                  DEFAULT_CONFIG)

_GENERATED = kafka_configs()
_TOPIC_CONFIGS = _GENERATED["topicConfigs"]
KAFKA_VERSION: str = _GENERATED["kafkaVersion"]
# audited key → the TOPIC ConfigDef's default (ConfigDef.convertToString), and the broker config names read before it
TOPIC_CONFIG_DEFAULTS: dict[str, str | None] = {key: _TOPIC_CONFIGS[key]["default"] for key in AUDITED_KEYS}
TOPIC_CONFIG_SYNONYMS: dict[str, tuple[str, ...]] = {
    key: tuple(_TOPIC_CONFIGS[key]["synonyms"]) for key in AUDITED_KEYS}
