"""replay/fold/delegation_tokens.py: delegation tokens as Kafka's DelegationTokenDelta replays them, on the hand-built
log ``tokens`` of tests/image_parts_support.py (session fixture ``image_parts``)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.image_parts_support import refusals, versions

pytestmark = pytest.mark.spark


def test_tokens_are_put_and_removed_by_id(image_parts: dict[str, Any]) -> None:
    """tok1 issued at 0, renewed at 1, removed at 4; removing tok9, which is not there (5), changes nothing; tok3
    (refused at 3) is put at 6 with no renewers."""
    assert versions(image_parts["delegation_token_history"], "tokens", "token_id", "owner", "requester",
                    "renewers", "expiration_timestamp") == sorted([
        ("tok1", "User:alice", "User:alice", ["User:bob"], 1500, 0, 1, 0),
        ("tok1", "User:alice", "User:alice", ["User:bob"], 1800, 1, 4, 1),
        ("tok3", "User:dave", "User:dave", [], 1600, 6, None, 6)], key=repr)
    row = next(r for r in image_parts["delegation_token_history"] if r["cluster_id"] == "tokens")
    assert (row["issue_timestamp"], row["max_timestamp"]) == (1000, 9000)


def test_a_principal_kafka_cannot_parse_refuses_the_token(image_parts: dict[str, Any]) -> None:
    """DelegationTokenData.fromRecord parses the renewers, the owner, the requester: "alice" (2) and the renewer
    "carol" (3) have no principal type."""
    prefix = "expected a string in format principalType:principalName but got "
    assert refusals(image_parts, "tokens") == [(2, "DelegationTokenRecord", "refused", prefix + "alice"),
                                                (3, "DelegationTokenRecord", "refused", prefix + "carol")]
