"""records.kafka_json: records built from Kafka's JSON form, values checked."""

from __future__ import annotations

import pytest

from records.errors import RecordValidationError
from records.kafka_json import make_record


def test_make_record_checks_values() -> None:
    with pytest.raises(RecordValidationError) as info:
        make_record("FenceBrokerRecord", 0, id=2**40, epoch=1)
    assert str(info.value) == ("FenceBrokerRecord v0: field id: expected int32 in "
                               "-2147483648..2147483647, got 1099511627776")
