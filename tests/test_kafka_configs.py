"""records/kafka_configs.json is, byte for byte, what tests/referee/KafkaConfigDefs.java prints from Kafka 4.4.0's
jars (regenerated here and compared), and ``records.kafka_configs`` reads it for both of its readers."""

from __future__ import annotations

import pytest

from records.kafka_configs import KAFKA_CONFIGS_PATH, REGENERATE, kafka_configs
from tests.referee import RefereeUnavailable


def test_one_file_names_its_kafka_and_how_to_regenerate_it() -> None:
    document = kafka_configs()
    assert (document["kafkaVersion"], document["regenerate"]) == ("4.4.0", REGENERATE)
    assert REGENERATE == "python -m tests.referee.kafka_configs"
    assert list(document) == ["comment", "regenerate", "kafkaVersion", "sensitiveTypes", "resourceTypes",
                              "topicConfigs"]
    topic = next(item for item in document["resourceTypes"] if item["name"] == "TOPIC")
    # every key of the TOPIC ConfigDef has its default and synonyms, and only those
    assert list(document["topicConfigs"]) == list(topic["keys"]) and len(topic["keys"]) == 38
    assert document["topicConfigs"]["retention.ms"] == {
        "default": "604800000", "synonyms": ["log.retention.ms", "log.retention.minutes", "log.retention.hours"]}
    assert document["topicConfigs"]["max.message.bytes"] == {"default": "1048588", "synonyms": ["message.max.bytes"]}
    assert document["topicConfigs"]["remote.storage.enable"] == {"default": "false", "synonyms": []}


@pytest.mark.kafka
def test_the_committed_file_is_what_kafka_jars_print() -> None:
    from tests.referee.kafka_configs import KAFKA_VERSION, kafka_configs_text

    try:
        text = kafka_configs_text(KAFKA_VERSION)
    except RefereeUnavailable as reason:
        pytest.skip(f"Kafka {KAFKA_VERSION}'s jars, java or javac are not here: {reason}")
    assert KAFKA_CONFIGS_PATH.read_bytes() == text.encode("ascii"), (
        f"records/kafka_configs.json is stale: run {REGENERATE}")
