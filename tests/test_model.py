"""records.model: the record model's helpers."""

from __future__ import annotations

from records.model import uuid_from_str, uuid_to_str


def test_uuid_text_form_matches_kafka() -> None:
    raw = bytes(range(16))
    assert uuid_to_str(raw) == "AAECAwQFBgcICQoLDA0ODw"
    assert uuid_from_str("AAECAwQFBgcICQoLDA0ODw") == raw
