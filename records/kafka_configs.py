"""Kafka's config definitions as its controller holds them (``kafka_configs.json``, generated from Kafka's jars by
tests/referee/KafkaConfigDefs.java: never typed by hand), read once for both of their readers:
``records.redaction`` (which keys are secrets) and ``records.kafka_topic_configs`` (what a topic config is when
nothing in the log sets it)."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

KAFKA_CONFIGS_PATH = Path(__file__).with_name("kafka_configs.json")
REGENERATE = "python -m tests.referee.kafka_configs"  # what the file's "regenerate" says (tests/test_kafka_configs.py)


@functools.cache
def kafka_configs() -> dict[str, Any]:
    """The generated file: Kafka's version, its sensitive ConfigDef types, each ConfigResource.Type's keys and
    types, each topic config's default and broker synonyms."""
    try:
        return json.loads(KAFKA_CONFIGS_PATH.read_text())
    except (OSError, ValueError) as exc:
        raise RuntimeError(f"{KAFKA_CONFIGS_PATH}: cannot read Kafka's config definitions ({exc}); regenerate it "
                           f"with {REGENERATE}") from None


__all__ = ["KAFKA_CONFIGS_PATH", "REGENERATE", "kafka_configs"]
