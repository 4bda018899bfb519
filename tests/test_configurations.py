"""replay/fold/configurations.py: configs as Kafka's ConfigurationsDelta replays them, on the hand-built log ``configs``
of tests/image_parts_support.py (one Spark replay per run: the session fixture ``image_parts``)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.image_parts_support import REDACTED, refusals, versions
from tests.reference_fold_support import T1S

pytestmark = pytest.mark.spark


def _configs(image_parts: dict[str, Any], resource_type: int, resource: str) -> list[tuple[Any, ...]]:
    rows = [r for r in image_parts["config_history"]
            if (r["resource_type"], r["resource_name"]) == (resource_type, resource)]
    return versions(rows, "configs", "name", "value")


def test_a_key_is_set_overwritten_and_deleted(image_parts: dict[str, Any]) -> None:
    """retention.ms set at 1 and overwritten at 3; cleanup.policy set at 2 and deleted (null value) at 4."""
    orders = _configs(image_parts, 2, "orders")
    assert ("retention.ms", "604800000", 1, 3, 1) in orders
    assert ("retention.ms", "86400000", 3, 9, 3) in orders
    assert ("cleanup.policy", "compact", 2, 4, 2) in orders
    row = next(r for r in image_parts["config_history"] if r["cluster_id"] == "configs" and r["cause_offset"] == 3)
    assert (row["valid_from_time_ms"], row["valid_to_time_ms"], row["cause_type"]) == (1003, 1009, "ConfigRecord")


def test_the_cluster_default_is_broker_with_an_empty_name(image_parts: dict[str, Any]) -> None:
    """BROKER "" min.insync.replicas set at 5; its null value at 13 empties the resource: nothing open."""
    assert _configs(image_parts, 4, "") == [("min.insync.replicas", "2", 5, 13, 5)]


def test_a_removed_topic_loses_its_configs_and_a_recreated_one_starts_with_none(image_parts: dict[str, Any]) -> None:
    """RemoveTopicRecord at 9 closes every config of "orders"; the topic re-created at 10 has only what is set
    after; the refused second removal of the old id (14) deletes nothing."""
    orders = _configs(image_parts, 2, "orders")
    assert [v for v in orders if v[3] == 9] == [("retention.ms", "86400000", 3, 9, 3)]
    assert [v for v in orders if v[2] >= 10] == sorted([
        ("segment.bytes", "1048576", 11, 22, 11),  # 18 sets the value it has: the version goes on
        ("segment.bytes", "2097152", 22, None, 20), ("retention.ms", "1000", 22, None, 21)], key=repr)
    assert refusals(image_parts, "configs") == [
        (14, "RemoveTopicRecord", "refused", f"RemoveTopicRecord of unknown topic id {T1S}")]


def test_transactions_make_configs_visible_at_their_end_and_aborted_ones_never(image_parts: dict[str, Any]) -> None:
    orders = _configs(image_parts, 2, "orders")
    assert not [v for v in orders if v[0] == "max.message.bytes"]  # 16, aborted at 17
    visible = [r for r in image_parts["config_history"] if r["cluster_id"] == "configs"
               and r["valid_from_offset"] == 22]
    assert sorted((r["name"], r["cause_offset"], r["valid_from_time_ms"]) for r in visible) == [
        ("retention.ms", 21, 1022), ("segment.bytes", 20, 1022)]


def test_a_redacted_secret_keeps_its_fingerprint(image_parts: dict[str, Any]) -> None:
    """The same secret again (7) changes nothing; a new one (8) is a new version with the same redacted value."""
    rows = [r for r in image_parts["config_history"] if r["cluster_id"] == "configs" and r["resource_name"] == "1"]
    assert versions(rows, "configs", "name", "value", "value_fingerprint") == [
        ("ssl.keystore.password", REDACTED, "fp-a", 6, 8, 6), ("ssl.keystore.password", REDACTED, "fp-b", 8, None, 8)]
    plain = [r for r in image_parts["config_history"] if r["cluster_id"] == "configs" and r["resource_name"] != "1"]
    assert {r["value_fingerprint"] for r in plain} == {None}


def test_a_resource_type_kafka_does_not_know_is_unknown(image_parts: dict[str, Any]) -> None:
    """ConfigResource.Type.forId(99) is UNKNOWN (0); Kafka has no ConfigDef for it, so every value of it is
    sensitive (``KafkaConfigSchema.isSensitive``) and the lake keeps it redacted."""
    assert _configs(image_parts, 0, "x") == [("a", REDACTED, 12, None, 12)]
    assert not [r for r in image_parts["config_history"] if r["resource_type"] == 99]
