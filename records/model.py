"""The record model: one Kafka record body, and the envelope that places it in the log.

A record keeps Kafka's own field names (camelCase, as Kafka's JSON converters print them) and
Kafka's own values, "no change" markers included (leader ``-2``, ``None`` arrays, recovery state
``-1``): replay semantics depend on them, so nothing here normalises them away.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeVar

from records.definitions import MessageDef, by_api_key, by_control_type, definitions

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

UUIDS_CACHED = 1 << 16  # topic and directory ids a decoding process keeps the text of


@functools.lru_cache(maxsize=UUIDS_CACHED)
def uuid_to_str(raw: bytes) -> str:
    """Kafka's ``Uuid.toString()``: URL-safe base64 without padding (22 characters). Cached: a log names its few
    topic and directory ids in nearly every record."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def uuid_from_str(text: str) -> bytes:
    """Kafka's ``Uuid.fromString``; raises ValueError unless it is 16 bytes of base64url."""
    if not isinstance(text, str) or len(text) != 22:
        raise ValueError(f"expected a 22-character base64url Kafka Uuid, got {text!r}")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (ValueError, TypeError):
        raise ValueError(f"expected a base64url Kafka Uuid, got {text!r}") from None
    if len(raw) != 16:
        raise ValueError(f"expected a Kafka Uuid of 16 bytes, got {len(raw)} from {text!r}")
    return raw


_T = TypeVar("_T", bound="DataclassInstance")


def unfrozen_twin(cls: type[_T]) -> type[_T]:
    """A mutable slots dataclass with the same fields (and so the same layout) as frozen ``cls``.

    A frozen dataclass's ``__init__`` stores each field with ``object.__setattr__``, which costs about
    a microsecond for ten fields; decoders build millions of these. Build the twin (a plain slots
    ``__init__``) and then set ``obj.__class__ = cls``: the result is an ordinary, still frozen ``cls``
    instance, equal to one built by ``cls(...)``, at about a third of the cost.
    """
    twin = dataclasses.make_dataclass(
        f"_{cls.__name__}Twin",
        [(f.name, f.type, field(default=f.default) if f.default is not dataclasses.MISSING
          else field(default_factory=f.default_factory) if f.default_factory is not dataclasses.MISSING
          else field()) for f in dataclasses.fields(cls)],
        slots=True, eq=False, repr=False)
    probe = twin(*(None for f in dataclasses.fields(cls)
                   if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING))
    probe.__class__ = cls  # raises TypeError now, not in a decoder, if the layouts ever differ
    return twin


class ReadMode(StrEnum):
    """How faithfully a record's bytes were understood."""

    EXACT = "exact"  # a version the definitions know, every byte consumed
    BEST_EFFORT = "best-effort"  # a newer version read with the newest known layout
    RAW = "raw"  # not understood: kept as raw bytes, never dropped


@dataclass(frozen=True, slots=True)
class MetadataRecord:
    """A decoded record body: its Kafka type, the record version as written in the log (also when it is newer than
    the definitions) and the fields of its layout version."""

    type_name: str
    version: int
    data: dict[str, Any]

    @property
    def definition(self) -> MessageDef:
        return definitions()[self.type_name]

    @property
    def layout_version(self) -> int:
        """The version whose fields ``data`` holds (``version`` itself unless it is newer than the definitions)."""
        return self.definition.layout_version(self.version)

    @property
    def api_key(self) -> int | None:
        return self.definition.api_key

    @property
    def is_control(self) -> bool:
        return self.definition.is_control

    def __getitem__(self, json_name: str) -> Any:
        return self.data[json_name]

    def get(self, json_name: str, default: Any = None) -> Any:
        return self.data.get(json_name, default)


@dataclass(frozen=True, slots=True)
class RawRecord:
    """A record the definitions cannot read (unknown type, or a version whose bytes do not fit)."""

    api_key: int | None
    control_type: int | None
    version: int
    value: bytes
    reason: str

    @property
    def type_name(self) -> str:
        if self.control_type is not None:
            known = by_control_type().get(self.control_type)
            return known.name if known else f"UnknownControlRecord{self.control_type}"
        known = by_api_key().get(self.api_key) if self.api_key is not None else None
        return known.name if known else f"UnknownRecord{self.api_key}"

    @property
    def is_control(self) -> bool:
        return self.control_type is not None


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One record at its place in the metadata log: the envelope of the Avro model."""

    offset: int
    record: MetadataRecord | RawRecord
    batch_base_offset: int | None = None
    raft_leader_epoch: int | None = None
    append_time_ms: int | None = None
    cluster_id: str | None = None
    read_mode: ReadMode = ReadMode.EXACT
    source: str | None = None
    position: int | None = None
    notes: tuple[str, ...] = field(default=())
    # Kafka's tools never print a secret (RecordRedactor): where the record held one, it is redacted and this is
    # its keyed fingerprint (HMAC-SHA256, hex) so a change stays visible (records.redaction)
    secret_fingerprint: str | None = None

    @property
    def is_control(self) -> bool:
        return self.record.is_control

    @property
    def type_name(self) -> str:
        return self.record.type_name

    @property
    def version(self) -> int:
        return self.record.version


# Fast constructors for the decoders' hot path: ``obj = _Twin(...); obj.__class__ = Cls``.
MetadataRecordTwin = unfrozen_twin(MetadataRecord)
LogEntryTwin = unfrozen_twin(LogEntry)
