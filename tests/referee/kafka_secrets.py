"""Kafka's own secrets rules (``KafkaSecrets.java`` against Kafka's jars): the config key types
``records/kafka_config_types.json`` is generated from, and ``RecordRedactor``'s verdict on a log's records.

Regenerate the committed table (after a Kafka upgrade) with ``python -m tests.referee.kafka_secrets``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from records.redaction import CONFIG_TYPES_PATH
from tests.referee import compiled, kafka_classpath

SOURCE = Path(__file__).with_name("KafkaSecrets.java")
KAFKA_VERSION = "4.4.0"  # the Kafka whose definitions schemas/kafka/ holds
REGENERATE = "python -m tests.referee.kafka_secrets"


def _run(*args: str) -> str:
    classes = compiled(KAFKA_VERSION, SOURCE)
    classpath = os.pathsep.join([str(classes), kafka_classpath(KAFKA_VERSION).classpath])
    result = subprocess.run(["java", "-cp", classpath, "KafkaSecrets", *args], capture_output=True, text=True,
                            timeout=600, check=False)
    if result.returncode != 0:
        raise AssertionError(f"KafkaSecrets {args[0]} failed under Kafka {KAFKA_VERSION}:\n{result.stderr[-3000:]}")
    return result.stdout


def config_types_text() -> str:
    """The generated file's text, as Kafka's jars say it now (what is committed must equal it)."""
    generated = json.loads(_run("schema"))
    document: dict[str, Any] = {
        "comment": "Generated from Kafka's own ConfigDefs: do not edit. The KafkaConfigSchema of "
                   "kafka.server.KafkaRaftServer.configSchema() (its controller's, which RecordRedactor redacts "
                   "with): each ConfigResource.Type, whether it has a ConfigDef there, and each key's "
                   "ConfigDef.Type. KafkaConfigSchema.isSensitive consults no synonyms.",
        "regenerate": REGENERATE,
        **generated,
    }
    return json.dumps(document, indent=1, sort_keys=False) + "\n"


def kafka_redactions(files: list[Path]) -> dict[tuple[str, int], dict[str, Any]]:
    """(file, offset) → {type, loggable}: Kafka's RecordRedactor's loggable string of every record of ``files``."""
    lines = _run("redact", *(str(path) for path in files)).splitlines()
    out = {}
    for line in lines:
        item = json.loads(line)
        out[(item.pop("file"), item.pop("offset"))] = item
    return out


def main() -> int:
    text = config_types_text()
    CONFIG_TYPES_PATH.write_text(text)
    print(f"wrote {CONFIG_TYPES_PATH} (Kafka {json.loads(text)['kafkaVersion']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
