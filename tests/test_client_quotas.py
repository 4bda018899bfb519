"""replay/fold/client_quotas.py: client quotas as Kafka's ClientQuotasDelta replays them, on the hand-built log
``quotas`` of tests/image_parts_support.py (session fixture ``image_parts``)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.image_parts_support import refusals, versions

pytestmark = pytest.mark.spark


def _entity(*pairs: tuple[str, str | None]) -> list[dict[str, str | None]]:
    return [{"entity_type": entity_type, "entity_name": name} for entity_type, name in pairs]


def test_quotas_are_set_and_removed_per_entity_and_key(image_parts: dict[str, Any]) -> None:
    """A one-part and a two-part entity (the same entity whatever the order of its parts), the default user
    (null name), a removal (the entity disappears), a value set again unchanged, a type named twice (its last
    name), a removal of a key that is not set (nothing)."""
    alice, app_alice = _entity(("user", "alice")), _entity(("client-id", "app"), ("user", "alice"))
    assert versions(image_parts["client_quota_history"], "quotas", "entity", "key", "value") == sorted([
        (alice, "producer_byte_rate", 1024.0, 0, 4, 0),
        (app_alice, "consumer_byte_rate", 2048.0, 1, 2, 1),
        (app_alice, "consumer_byte_rate", 4096.0, 2, 7, 2),
        (_entity(("user", None)), "request_percentage", 50.0, 3, None, 3),
        (_entity(("user", "carol")), "x", 1.0, 6, None, 6)], key=repr)
    assert refusals(image_parts, "quotas") == []


def test_the_open_quotas_at_the_end_are_kafkas_image(image_parts: dict[str, Any]) -> None:
    live = [(r["entity"], r["key"], r["value"]) for r in image_parts["client_quota_history"]
            if r["cluster_id"] == "quotas" and r["valid_to_offset"] is None]
    assert sorted(live, key=repr) == sorted([(_entity(("user", None)), "request_percentage", 50.0),
                                             (_entity(("user", "carol")), "x", 1.0)], key=repr)
