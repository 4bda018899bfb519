"""records.generated_readers: the generated fast readers agree with the checked reader
(records.message_encoding), byte for byte and error for error."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from records.definitions import definitions
from records.generated_readers import _fast_struct_reader
from records.kafka_codec import encode_body
from records.message_encoding import _struct_reader
from tests.decoder_support import mutations as _mutations
from tests.decoder_support import outcome as _outcome
from tests.strategies import all_type_versions, record_data

TYPE_VERSIONS = all_type_versions()
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize(("type_name", "version"), TYPE_VERSIONS)
@FAST
@given(data=st.data())
def test_generated_reader_agrees_with_checked_reader(type_name: str, version: int,
                                                     data: st.DataObject) -> None:
    message = definitions()[type_name]
    flexible = message.is_flexible(version)
    fast = _fast_struct_reader(message.body, version, flexible)
    checked = _struct_reader(message.body, version, flexible)
    raw = encode_body(message, version, data.draw(record_data(message, version)))
    prefix = data.draw(st.binary(max_size=3))
    for body in _mutations(raw, data):
        buf = prefix + body
        assert _outcome(fast, buf, len(prefix)) == _outcome(checked, buf, len(prefix))
        assert _outcome(fast, memoryview(buf), len(prefix)) == _outcome(checked, memoryview(buf), len(prefix))
