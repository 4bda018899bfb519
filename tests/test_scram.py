"""replay/fold/scram.py: SCRAM credentials as Kafka's ScramDelta replays them, on the hand-built log ``scram`` of
tests/image_parts_support.py (session fixture ``image_parts``)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.image_parts_support import refusals, versions

pytestmark = pytest.mark.spark


def test_credentials_are_put_and_removed_by_mechanism_and_user(image_parts: dict[str, Any]) -> None:
    """alice's SCRAM-SHA-256 credential gets a new password at 2 (same iterations, a new fingerprint: a new
    version); her SCRAM-SHA-512 one is removed at 3; removing bob's, which is not there (4), changes nothing and is
    no error; mechanisms Kafka does not know (7 at 5, 9 at 6) are both UNKNOWN (0), so 6 removes what 5 put."""
    assert versions(image_parts["scram_history"], "scram", "name", "mechanism", "iterations",
                    "credential_fingerprint") == sorted([
        ("alice", 1, 4096, "s1", 0, 2, 0), ("alice", 1, 4096, "s3", 2, None, 2),
        ("alice", 2, 8192, "s2", 1, 3, 1), ("alice", 0, 1, "s4", 5, 6, 5)], key=repr)
    assert refusals(image_parts, "scram") == []


def test_no_secret_column_reaches_the_table(image_parts: dict[str, Any]) -> None:
    row = image_parts["scram_history"][0]
    assert not {"salt", "stored_key", "server_key"} & set(row)
