"""replay/fold/acls.py: ACLs as Kafka's AclsDelta replays them, on the hand-built log ``acls`` of
tests/image_parts_support.py (session fixture ``image_parts``)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.image_parts_support import A1S, A2S, A3S, A4S, A5S, refusals, versions

pytestmark = pytest.mark.spark


def test_acls_are_put_by_id_and_removed(image_parts: dict[str, Any]) -> None:
    """A1 put at 0, put again unchanged at 2 (the version goes on), replaced at 3; A2 put at 1, removed at 4; A3
    put and removed inside one transaction (never seen); A4's transaction aborted; A5's codes Kafka does not know
    (operation 42, resource type 12) are UNKNOWN (0), as StandardAcl.fromRecord keeps them."""
    assert versions(image_parts["acl_history"], "acls", "id", "host", "resource_type", "operation") == sorted([
        (A1S, "*", 2, 4, 0, 3, 0), (A1S, "10.0.0.1", 2, 4, 3, None, 3), (A2S, "*", 2, 3, 1, 4, 1),
        (A5S, "*", 0, 0, 15, None, 15)], key=repr)
    row = next(r for r in image_parts["acl_history"] if r["cluster_id"] == "acls" and r["cause_offset"] == 3)
    assert {k: row[k] for k in ("resource_type", "resource_name", "pattern_type", "principal", "permission_type")} \
        == {"resource_type": 2, "resource_name": "orders", "pattern_type": 3, "principal": "User:alice",
            "permission_type": 3}


def test_removing_an_acl_that_is_not_there_is_refused_with_kafkas_message(image_parts: dict[str, Any]) -> None:
    """A2 again after its removal (5), A3 before it exists (6), A4 whose creation was aborted (14)."""
    message = "Failed to find existing ACL with ID {} in either image or changes"
    assert refusals(image_parts, "acls") == [
        (5, "RemoveAccessControlEntryRecord", "refused", message.format(A2S)),
        (6, "RemoveAccessControlEntryRecord", "refused", message.format(A3S)),
        (14, "RemoveAccessControlEntryRecord", "refused", message.format(A4S))]
