"""Secrets kept out, as Kafka's ``RecordRedactor`` keeps them out of its log lines and ``kafka-metadata-shell``.

Kafka 4.4's ``RecordRedactor.toLoggableString`` prints a ``ConfigRecord`` whose key is sensitive
(``KafkaConfigSchema.isSensitive``) with ``value='(redacted)'``, and a ``UserScramCredentialRecord`` with its
``salt``, ``storedKey`` and ``serverKey`` as ``(redacted)``. Here the record itself is redacted before it is
stored or printed: the config value becomes ``"(redacted)"``, the SCRAM bytes become empty. What the secret was
is replaced by its keyed fingerprint (HMAC-SHA256, hex; the key is kept beside the lake, never in it:
``lakehouse.fingerprint_key``), so "the keystore password changed at offset N" stays answerable.

Two departures from the loggable string, both because the record is kept, not only printed: a sensitive
``ConfigRecord`` with a null value (a deletion: nothing secret) keeps its null, since null is what deletes the
key in Kafka's ``ConfigurationsDelta``; and a record of a secret-bearing type whose bytes could not be read
(``RawRecord``) keeps none of them.

Which keys are sensitive comes from ``kafka_configs.json`` (``records.kafka_configs``), generated from Kafka's own
ConfigDefs, never typed by hand.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import hmac

from records.definitions import definitions
from records.kafka_configs import kafka_configs
from records.model import LogEntry, MetadataRecord, RawRecord

REDACTED = "(redacted)"  # RecordRedactor's word for a value it leaves out

CONFIG_RECORD = "ConfigRecord"
USER_SCRAM_CREDENTIAL_RECORD = "UserScramCredentialRecord"
# the UserScramCredentialRecord fields RecordRedactor prints as (redacted)
SCRAM_SECRET_FIELDS = ("salt", "storedKey", "serverKey")
SECRET_RECORD_TYPES = frozenset({CONFIG_RECORD, USER_SCRAM_CREDENTIAL_RECORD})
RAW_WITHHELD_NOTE = ("raw bytes withheld: a record of a secret-bearing type that could not be decoded cannot be "
                     "redacted field by field (records.redaction)")


@functools.cache
def _config_defs() -> dict[int, dict[str, str] | None]:
    """ConfigResource.Type id → its ConfigDef's keys and types, or None where the schema has no ConfigDef."""
    return {item["id"]: item["keys"] if item["configDef"] else None for item in kafka_configs()["resourceTypes"]}


@functools.cache
def _sensitive_types() -> frozenset[str]:
    return frozenset(kafka_configs()["sensitiveTypes"])


def is_sensitive(resource_type: int, name: str) -> bool:
    """Kafka 4.4's ``KafkaConfigSchema.isSensitive``: true when the resource type has no ConfigDef in the schema
    (``ConfigResource.Type.forId`` makes an unknown id UNKNOWN, which has none), when the ConfigDef does not know
    the key (Kafka's conservative rule: we do not know it is not a secret), or when its type is sensitive
    (PASSWORD)."""
    keys = _config_defs().get(resource_type)
    if keys is None:
        return True
    key_type = keys.get(name)
    return key_type is None or key_type in _sensitive_types()


def fingerprint(key: bytes, *parts: bytes) -> str:
    """HMAC-SHA256 (hex) of the secret's parts, each length-prefixed so that no two splits of the same bytes
    collide (a SCRAM credential has three)."""
    message = b"".join(len(part).to_bytes(4, "big") + part for part in parts)
    return hmac.new(key, message, hashlib.sha256).hexdigest()


@functools.cache
def _secret_api_keys() -> frozenset[int]:
    return frozenset(definitions()[name].api_key for name in SECRET_RECORD_TYPES)  # type: ignore[misc]


def holds_secret(entry: LogEntry) -> bool:
    """Whether the record, as read, holds a secret (a redacted one no longer does)."""
    record = entry.record
    if isinstance(record, RawRecord):
        return record.control_type is None and record.api_key in _secret_api_keys() and bool(record.value)
    if record.type_name == CONFIG_RECORD:
        value = record.data.get("value")
        return value is not None and value != REDACTED and is_sensitive(record.data["resourceType"],
                                                                        record.data["name"])
    if record.type_name == USER_SCRAM_CREDENTIAL_RECORD:
        return any(record.data.get(name) for name in SCRAM_SECRET_FIELDS)
    return False


def redact(entry: LogEntry, key: bytes | None) -> LogEntry:
    """The entry with its secret redacted and, given a key, the secret's fingerprint in ``secret_fingerprint``;
    the entry itself when it holds none."""
    record = entry.record
    if record.type_name not in SECRET_RECORD_TYPES or not holds_secret(entry):
        return entry
    if isinstance(record, RawRecord):
        secret = record.value
        redacted: MetadataRecord | RawRecord = dataclasses.replace(record, value=b"")
        parts: tuple[bytes, ...] = (secret,)
        notes = (*entry.notes, RAW_WITHHELD_NOTE)
    elif record.type_name == CONFIG_RECORD:
        parts = (record.data["value"].encode("utf-8"),)
        redacted = MetadataRecord(record.type_name, record.version, {**record.data, "value": REDACTED})
        notes = entry.notes
    else:
        parts = tuple(bytes(record.data.get(name) or b"") for name in SCRAM_SECRET_FIELDS)
        redacted = MetadataRecord(record.type_name, record.version,
                                  {**record.data, **dict.fromkeys(SCRAM_SECRET_FIELDS, b"")})
        notes = entry.notes
    return dataclasses.replace(entry, record=redacted, notes=notes,
                               secret_fingerprint=fingerprint(key, *parts) if key is not None else None)


__all__ = ["REDACTED", "SECRET_RECORD_TYPES", "fingerprint", "holds_secret",
           "is_sensitive", "redact"]
