"""A ``config_history`` table (issue 19's contract, ``lakehouse.tables.IMAGE_SCHEMAS``) for the tests of the
audit's configs, folded here from a simulated log: ConfigRecord sets a key (a null value deletes it),
RemoveTopicRecord deletes every config of the topic's name (``ConfigurationsDelta``). Only for logs without metadata
transactions around their configs (every offset is then its own visible offset). Until the replay writes the table
itself (engineer B's fold), the tests write this one beside the replayed tables."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema

from lakehouse.lake import Lake
from lakehouse.tables import CONFIG_HISTORY, IMAGE_SCHEMAS
from records.kafka_constants import CONFIG_RESOURCE_TOPIC
from records.model import LogEntry, MetadataRecord

Key = tuple[int, str, str]


def config_rows(entries: list[LogEntry], cluster_id: str) -> list[dict[str, Any]]:
    """The versions of every config key of ``entries``, in the contract's columns."""
    rows: list[dict[str, Any]] = []
    live: dict[Key, dict[str, Any]] = {}
    names: dict[str, str] = {}

    def close(key: Key, entry: LogEntry) -> None:
        version = live.pop(key, None)
        if version is not None:
            version.update(valid_to_offset=entry.offset, valid_to_time_ms=entry.append_time_ms)

    for entry in entries:
        record = entry.record
        if not isinstance(record, MetadataRecord):
            continue
        if record.type_name == "TopicRecord":
            names[str(record["topicId"])] = record["name"]
        elif record.type_name == "RemoveTopicRecord":
            name = names.get(str(record["topicId"]))
            for key in [k for k in live if k[0] == CONFIG_RESOURCE_TOPIC and k[1] == name]:
                close(key, entry)
        elif record.type_name == "ConfigRecord":
            key = (record["resourceType"], record["resourceName"], record["name"])
            close(key, entry)
            if record["value"] is not None:
                live[key] = {"cluster_id": cluster_id, "resource_type": key[0], "resource_name": key[1],
                             "name": key[2], "value": record["value"], "value_fingerprint": None,
                             "valid_from_offset": entry.offset, "valid_to_offset": None,
                             "valid_from_time_ms": entry.append_time_ms, "valid_to_time_ms": None,
                             "cause_offset": entry.offset, "cause_type": "ConfigRecord"}
                rows.append(live[key])
    return rows


def config_frame(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    schema = from_arrow_schema(IMAGE_SCHEMAS[CONFIG_HISTORY])
    return spark.createDataFrame([tuple(row[f.name] for f in schema.fields) for row in rows], schema)


def write_config_history(spark: SparkSession, lake: Lake, logs: dict[str, list[LogEntry]]) -> DataFrame:
    """Write the ``config_history`` of each cluster's log into ``lake`` (overwriting it) and return it."""
    rows = [row for cluster, entries in logs.items() for row in config_rows(entries, cluster)]
    frame = config_frame(spark, rows)
    lake.write(frame, CONFIG_HISTORY, "overwrite")
    return lake.read(spark, CONFIG_HISTORY)
