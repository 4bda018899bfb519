"""Kafka's config definitions asked of its jars (``KafkaConfigDefs.java``, compiled here against them): the text
of ``records/kafka_configs.json``, and ``RecordRedactor``'s verdict on a log's records.

Regenerate the committed file (after a Kafka upgrade) with ``python -m tests.referee.kafka_configs``: it writes,
byte for byte, what the program prints from Kafka 4.4.0's jars.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from records.definitions import KAFKA_DEFINITIONS_VERSION
from records.kafka_configs import KAFKA_CONFIGS_PATH
from tests.referee import compiled, kafka_classpath

SOURCE = Path(__file__).with_name("KafkaConfigDefs.java")
KAFKA_VERSION = KAFKA_DEFINITIONS_VERSION  # the Kafka whose definitions schemas/kafka/ holds


def _run(version: str, *args: str) -> str:
    """What ``KafkaConfigDefs`` prints, run against Kafka ``version``'s jars (RefereeUnavailable without them)."""
    classes = compiled(version, SOURCE)
    classpath = os.pathsep.join([str(classes), kafka_classpath(version).classpath])
    result = subprocess.run(["java", "-cp", classpath, SOURCE.stem, *args], capture_output=True, text=True,
                            encoding="ascii", timeout=600, check=False)
    if result.returncode != 0:
        raise AssertionError(f"{SOURCE.stem} {args[0]} failed under Kafka {version}:\n{result.stderr[-3000:]}")
    return result.stdout


def kafka_configs_text(version: str = KAFKA_VERSION) -> str:
    """The generated file's text as Kafka ``version``'s jars give it (for 4.4.0, what is committed must equal)."""
    return _run(version, "configs")


def kafka_redactions(files: list[Path]) -> dict[tuple[str, int], dict[str, Any]]:
    """(file, offset) → {type, loggable}: Kafka's RecordRedactor's loggable string of every record of ``files``."""
    out = {}
    for line in _run(KAFKA_VERSION, "redact", *(str(path) for path in files)).splitlines():
        item = json.loads(line)
        out[(item.pop("file"), item.pop("offset"))] = item
    return out


def main() -> int:
    text = kafka_configs_text()
    KAFKA_CONFIGS_PATH.write_text(text, encoding="ascii")
    print(f"wrote {KAFKA_CONFIGS_PATH} (Kafka {json.loads(text)['kafkaVersion']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
