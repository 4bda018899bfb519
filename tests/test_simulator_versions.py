"""Metadata versions (simulator.versions): the level a name gives, and the records and record versions a level
selects, at Kafka's thresholds."""

from __future__ import annotations

import pytest

from simulator.versions import LEVEL_NAMES, RELEASES, SUPPORTED, MetadataVersion


def test_a_release_name_means_its_newest_internal_version() -> None:
    assert RELEASES["3.3"] == 7 and RELEASES["3.7"] == 19 and RELEASES["3.9"] == 21 and RELEASES["4.0"] == 25
    assert SUPPORTED == ("3.0", "3.1", "3.2", "3.3", "3.4", "3.5", "3.6", "3.7", "3.8", "3.9", "4.0")
    assert LEVEL_NAMES[17] == "3.7-IV2"


def test_parse_a_release_an_iv_name_or_a_feature_level() -> None:
    assert MetadataVersion.parse("3.7") == MetadataVersion(19)
    assert MetadataVersion.parse(" 3.7-IV2 ") == MetadataVersion(17)
    assert MetadataVersion.parse("17") == MetadataVersion(17)
    assert MetadataVersion.parse("4.0").name == "4.0-IV3"
    for text in ("2.8", "26", "3.7-IV9", ""):
        with pytest.raises(ValueError, match="unknown metadata version"):
            MetadataVersion.parse(text)


@pytest.mark.parametrize(("capability", "first_level"), [
    ("leader_recovery", 3), ("writes_metadata_version", 4), ("noop_records", 5), ("registration_change_record", 6),
    ("controlled_shutdown_state", 7), ("migration", 8), ("transactions", 13), ("controller_registration", 15),
    ("directories", 17), ("elr_supported", 23)])
def test_a_capability_starts_at_its_kafka_level(capability: str, first_level: int) -> None:
    assert getattr(MetadataVersion(first_level - 1), capability) is False
    assert getattr(MetadataVersion(first_level), capability) is True
    assert getattr(MetadataVersion(25), capability) is True


def test_epoch_bump_on_isr_shrink_ends_at_3_6() -> None:
    assert MetadataVersion(11).epoch_bump_on_isr_shrink is True
    assert MetadataVersion(12).epoch_bump_on_isr_shrink is False


def test_zk_migration_state_at_bootstrap_from_3_6_iv1_until_4_0() -> None:
    assert [level for level in LEVEL_NAMES if MetadataVersion(level).zk_migration_state_at_bootstrap] == list(
        range(13, 22))


def test_record_versions_of_a_level() -> None:
    assert [MetadataVersion.parse(name).register_broker_version for name in ("3.0", "3.3", "3.4", "3.6", "3.7")] == [
        0, 1, 2, 2, 3]
    assert MetadataVersion(6).register_broker_version == 0  # 3.3-IV2: before controlled shutdown state
    assert [MetadataVersion.parse(name).partition_record_version(elr=False) for name in ("3.6", "3.7", "4.0")] == [
        0, 1, 1]
    assert MetadataVersion.parse("4.0").partition_record_version(elr=True) == 2


def test_scram_from_3_5_iv2_and_delegation_tokens_from_3_6_iv2() -> None:
    """MetadataVersion.isScramSupported / isDelegationTokenSupported (checked against Kafka 4.4's jar)."""
    assert next(level for level in LEVEL_NAMES if MetadataVersion(level).scram_supported) == 11
    assert MetadataVersion(11).name == "3.5-IV2"
    assert next(level for level in LEVEL_NAMES if MetadataVersion(level).delegation_tokens) == 14
    assert MetadataVersion(14).name == "3.6-IV2"
