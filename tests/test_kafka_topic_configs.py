"""records/kafka_topic_configs.py: the defaults and broker synonyms of the topic configs the election audit reads
are Kafka's own (its jars asked through tests/referee/KafkaConfigDefs.java), in Kafka 4.4.0 and 3.9.2 alike."""

from __future__ import annotations

import json

import pytest

from records.kafka_configs import kafka_configs
from records.kafka_topic_configs import (
    AUDITED_KEYS,
    KAFKA_VERSION,
    MIN_IN_SYNC_REPLICAS,
    TOPIC_CONFIG_DEFAULTS,
    TOPIC_CONFIG_SYNONYMS,
    UNCLEAN_LEADER_ELECTION_ENABLE,
)
from tests.referee import RefereeUnavailable


def test_the_generated_values() -> None:
    assert KAFKA_VERSION == "4.4.0"
    assert TOPIC_CONFIG_DEFAULTS == {UNCLEAN_LEADER_ELECTION_ENABLE: "false", MIN_IN_SYNC_REPLICAS: "1"}
    assert TOPIC_CONFIG_SYNONYMS == {UNCLEAN_LEADER_ELECTION_ENABLE: (UNCLEAN_LEADER_ELECTION_ENABLE,),
                                     MIN_IN_SYNC_REPLICAS: (MIN_IN_SYNC_REPLICAS,)}
    assert tuple(TOPIC_CONFIG_DEFAULTS) == AUDITED_KEYS


@pytest.mark.kafka
@pytest.mark.parametrize("version", ["4.4.0", "3.9.2"])
def test_kafka_gives_the_same(version: str) -> None:
    from tests.referee.kafka_configs import kafka_configs_text

    try:
        answer = json.loads(kafka_configs_text(version))
    except RefereeUnavailable as reason:
        pytest.skip(str(reason))
    committed = kafka_configs()
    assert answer["kafkaVersion"] == version
    audited = {key: answer["topicConfigs"][key] for key in AUDITED_KEYS}
    assert audited == {key: committed["topicConfigs"][key] for key in AUDITED_KEYS}
