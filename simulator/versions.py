"""Metadata versions: which records and record versions a KRaft controller writes at each level.

Levels and capability thresholds follow Kafka's ``MetadataVersion`` enum (feature level of
``metadata.version``); a release name ("3.7") means its newest internal version, as in Kafka.
"""

from __future__ import annotations

from dataclasses import dataclass

# feature level -> Kafka's IBP name, for the levels a KRaft log can carry.
LEVEL_NAMES: dict[int, str] = {
    1: "3.0-IV1", 2: "3.1-IV0", 3: "3.2-IV0", 4: "3.3-IV0", 5: "3.3-IV1", 6: "3.3-IV2", 7: "3.3-IV3",
    8: "3.4-IV0", 9: "3.5-IV0", 10: "3.5-IV1", 11: "3.5-IV2", 12: "3.6-IV0", 13: "3.6-IV1",
    14: "3.6-IV2", 15: "3.7-IV0", 16: "3.7-IV1", 17: "3.7-IV2", 18: "3.7-IV3", 19: "3.7-IV4",
    20: "3.8-IV0", 21: "3.9-IV0", 22: "4.0-IV0", 23: "4.0-IV1", 24: "4.0-IV2", 25: "4.0-IV3",
}
RELEASES: dict[str, int] = {}
for _level, _name in LEVEL_NAMES.items():
    RELEASES[_name.split("-")[0]] = _level  # the newest IV of a release wins, as in Kafka
SUPPORTED = tuple(RELEASES)


@dataclass(frozen=True)
class MetadataVersion:
    """One ``metadata.version`` level and the controller behaviour it selects."""

    level: int

    @classmethod
    def parse(cls, text: str) -> MetadataVersion:
        """"3.7", "3.7-IV2" or a bare feature level ("17")."""
        text = text.strip()
        if text in RELEASES:
            return cls(RELEASES[text])
        for level, name in LEVEL_NAMES.items():
            if name == text:
                return cls(level)
        if text.isdigit() and int(text) in LEVEL_NAMES:
            return cls(int(text))
        raise ValueError(f"unknown metadata version {text!r} (expected one of {', '.join(SUPPORTED)}, "
                         "an IV name such as 3.7-IV2, or a feature level 1..25)")

    @property
    def name(self) -> str:
        return LEVEL_NAMES[self.level]

    # Thresholds: Kafka's MetadataVersion.is*Supported().
    @property
    def writes_metadata_version(self) -> bool:
        return self.level >= 4  # MINIMUM_BOOTSTRAP_VERSION 3.3-IV0: MV stored in the log

    @property
    def leader_recovery(self) -> bool:
        return self.level >= 3  # 3.2-IV0, KIP-704

    @property
    def noop_records(self) -> bool:
        return self.level >= 5  # 3.3-IV1, KIP-835

    @property
    def registration_change_record(self) -> bool:
        return self.level >= 6  # 3.3-IV2: BrokerRegistrationChangeRecord replaces Fence/Unfence

    @property
    def controlled_shutdown_state(self) -> bool:
        return self.level >= 7  # 3.3-IV3, KIP-841

    @property
    def migration(self) -> bool:
        return self.level >= 8  # 3.4-IV0

    @property
    def epoch_bump_on_isr_shrink(self) -> bool:
        return self.level < 12  # removed in 3.6-IV0 (KAFKA-15021)

    @property
    def scram_supported(self) -> bool:
        return self.level >= 11  # 3.5-IV2: MetadataVersion.isScramSupported

    @property
    def delegation_tokens(self) -> bool:
        return self.level >= 14  # 3.6-IV2: MetadataVersion.isDelegationTokenSupported

    @property
    def transactions(self) -> bool:
        return self.level >= 13  # 3.6-IV1, KIP-868

    @property
    def controller_registration(self) -> bool:
        return self.level >= 15  # 3.7-IV0, KIP-919

    @property
    def directories(self) -> bool:
        return self.level >= 17  # 3.7-IV2, JBOD (KIP-858)

    @property
    def elr_supported(self) -> bool:
        return self.level >= 23  # 4.0-IV1, KIP-966

    @property
    def zk_migration_state_at_bootstrap(self) -> bool:
        # 3.9's ActivationRecordsGenerator writes ZkMigrationStateRecord(NONE) with the bootstrap
        # transaction; 4.0 removed ZooKeeper migration.
        return self.transactions and self.level < 22

    @property
    def register_broker_version(self) -> int:
        if self.directories:
            return 3
        if self.migration:
            return 2
        return 1 if self.controlled_shutdown_state else 0

    def partition_record_version(self, elr: bool) -> int:
        if elr:
            return 2
        return 1 if self.directories else 0
