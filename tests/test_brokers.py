"""replay/fold/brokers.py: the ZK migration state as Kafka 3.9's FeaturesDelta keeps it, on the hand-built log
``zk-migration`` of tests/image_parts_support.py (session fixture ``image_parts``). (Brokers, controllers and
finalized features: tests/test_replay_vs_reference.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from tests.image_parts_support import refusals, versions

pytestmark = pytest.mark.spark


def test_the_zk_migration_state_is_the_feature_row_zk_migration_state(image_parts: dict[str, Any]) -> None:
    """PRE_MIGRATION (2) at 0 and again at 1 (no change), MIGRATION (1) at 2, NONE at 5 (the empty image's state:
    the row ends, as level 0 ends a feature); 9 is no ZkMigrationState: refused."""
    assert versions(image_parts["feature_history"], "zk-migration", "feature", "level") == [
        ("metadata.version", 21, 4, None, 4), ("zkMigrationState", 1, 2, 5, 2), ("zkMigrationState", 2, 0, 2, 0)]
    assert refusals(image_parts, "zk-migration") == [
        (3, "ZkMigrationStateRecord", "refused", "Value 9 is not a valid Zk migration state")]
