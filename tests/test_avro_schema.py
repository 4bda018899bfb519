"""records.avro_schema: the merged Avro schema of a record (Kafka's defaults) and the committed .avsc files."""

from __future__ import annotations

import io
import json
from pathlib import Path

import fastavro
import pytest

from records.avro_schema import main as regenerate_schemas
from records.avro_schema import record_schema
from records.definitions import definitions
from records.model import uuid_from_str
from tests.avro_support import avro_shape as _avro_shape

REPO = Path(__file__).resolve().parents[1]


def test_v0_partition_record_read_with_merged_schema_gets_kafka_defaults() -> None:
    message = definitions()["PartitionRecord"]
    topic = uuid_from_str("_3Hx0m1zQ4mBbPw_6E4vVw")
    v0 = {"partitionId": 7, "topicId": topic, "replicas": [1, 2, 3], "isr": [1, 2],
          "removingReplicas": [], "addingReplicas": [], "leader": 2, "leaderRecoveryState": 0,
          "leaderEpoch": 4, "partitionEpoch": 9}
    writer = record_schema(message, 0)
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(writer), _avro_shape(v0))
    merged = fastavro.schemaless_reader(io.BytesIO(buf.getvalue()), fastavro.parse_schema(writer),
                                        fastavro.parse_schema(record_schema(message)))
    assert merged["leader"] == 2 and merged["isr"] == [1, 2]
    assert merged["directories"] == []  # v1+ field: Kafka's default (empty array)
    assert merged["eligibleLeaderReplicas"] is None  # v2+ nullable field: Kafka's default null
    assert merged["lastKnownElr"] is None


def test_committed_avsc_files_are_generated() -> None:
    assert regenerate_schemas(["--check"]) == 0, "run: python -m records.avro_schema"


@pytest.mark.parametrize("name", ["PartitionChangeRecord", "RegisterBrokerRecord"])
def test_no_change_defaults_in_avsc(name: str) -> None:
    schema = json.loads((REPO / "schemas" / f"{name}.avsc").read_text())
    fields = {f["name"]: f for f in schema["fields"]}
    if name == "PartitionChangeRecord":
        assert fields["leader"]["default"] == -2
        assert fields["isr"]["default"] is None and fields["isr"]["type"][0] == "null"
        assert fields["leaderRecoveryState"]["default"] == -1
        assert fields["eligibleLeaderReplicas"]["kafkaVersions"] == "2+"
    else:
        assert fields["fenced"]["default"] is True
        assert fields["inControlledShutdown"]["default"] is False
        assert fields["logDirs"]["kafkaTag"] == 0
        assert fields["rack"]["type"] == ["string", "null"] and fields["rack"]["default"] == ""
        assert fields["cordonedLogDirs"]["default"] is None and fields["cordonedLogDirs"]["kafkaTag"] == 1
        assert fields["cordonedLogDirs"]["kafkaVersions"] == "4+" and fields["cordonedLogDirs"]["type"][0] == "null"
