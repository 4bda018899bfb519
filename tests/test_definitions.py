"""records.definitions: Kafka's record definitions, every type and version of the bundled release."""

from __future__ import annotations

from records.definitions import definitions
from tests.strategies import all_type_versions

TYPE_VERSIONS = all_type_versions()


def test_every_type_and_version_is_covered() -> None:
    # 27 metadata record types + 5 raft control records (Kafka 4.4.0), each with all of Kafka's versions.
    assert len(definitions()) == 32
    assert ("PartitionChangeRecord", 2) in TYPE_VERSIONS
    assert ("RegisterBrokerRecord", 4) in TYPE_VERSIONS and ("BrokerRegistrationChangeRecord", 3) in TYPE_VERSIONS
    assert ("ClearElrRecord", 0) in TYPE_VERSIONS and ("UnregisterControllerRecord", 0) in TYPE_VERSIONS
    assert ("LeaderChangeMessage", 1) in TYPE_VERSIONS
    assert len(TYPE_VERSIONS) == 44  # 38 metadata (type, version) pairs + 6 control
