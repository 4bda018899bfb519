"""replay/fold/producer_ids.py: the next producer id as Kafka's ProducerIdsDelta replays it, on the hand-built log
``producer-ids`` of tests/image_parts_support.py (session fixture ``image_parts``)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.image_parts_support import versions

pytestmark = pytest.mark.spark


def test_the_last_block_is_the_next_producer_id(image_parts: dict[str, Any]) -> None:
    """Each record sets the next id; the same block again (2) changes nothing; an aborted one (4) is never seen."""
    assert versions(image_parts["producer_id_history"], "producer-ids", "next_producer_id", "broker_id",
                    "broker_epoch") == [(1000, 1, 5, 0, 1, 0), (2000, 2, 7, 1, None, 1)]
