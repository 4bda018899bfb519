"""Kafka's topic-config defaults and broker synonyms for the keys the election audit reads, asked of Kafka's jars
(``KafkaTopicConfigs.java``, run by ``java`` in source-file mode: one file, no build). ``python -m
tests.referee.kafka_topic_configs`` rewrites ``records/kafka_topic_configs.json`` from Kafka 4.4.0;
tests/test_kafka_topic_configs.py checks the committed file against Kafka 4.4.0 and 3.9.2."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from records.kafka_topic_configs import AUDITED_KEYS, GENERATED
from tests.referee import RefereeUnavailable, kafka_classpath

SOURCE = Path(__file__).with_name("KafkaTopicConfigs.java")


def kafka_answer(version: str) -> dict[str, Any]:
    """Kafka ``version``'s JSON answer for ``AUDITED_KEYS`` (RefereeUnavailable without its jars or java)."""
    jars = kafka_classpath(version)
    if shutil.which("java") is None:
        raise RefereeUnavailable("java not found (a JDK 17+ runs tests/referee/KafkaTopicConfigs.java)")
    result = subprocess.run(["java", "-cp", jars.classpath, str(SOURCE), *AUDITED_KEYS], capture_output=True,
                            text=True, timeout=300, check=False)
    if result.returncode != 0:
        raise AssertionError(f"KafkaTopicConfigs.java failed against Kafka {version}:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    answer = kafka_answer("4.4.0")
    document = {"comment": "Generated from Kafka's own jars: do not edit. For each topic config key the election "
                           "audit reads: the TOPIC ConfigDef default of kafka.server.KafkaRaftServer.configSchema() "
                           "(KafkaConfigSchema.getDefault) and the broker config names resolveEffectiveTopicConfig "
                           "reads before it (ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS), in order.",
                "regenerate": "python -m tests.referee.kafka_topic_configs", **answer}
    GENERATED.write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    main()
