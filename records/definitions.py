"""Kafka's own message definitions (the ``*.json`` files of Kafka's source tree), parsed.

Every other part of kraft-replay is driven by these definitions: the binary codec, the Avro
schemas, the JSON form and validation. Keeping one source of truth means a new Kafka field is
picked up by copying one file, not by editing code in four places.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

# The Kafka release whose definitions ``schemas/kafka`` holds (its README says from which jars).
KAFKA_DEFINITIONS_VERSION = "4.4.0"

PRIMITIVE_TYPES = frozenset(
    {"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "string",
     "bytes", "uuid", "records"}
)
INT_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}

# Kafka's ControlRecordType keys for the raft control records kept in the metadata log.
CONTROL_TYPES: dict[str, int] = {
    "LeaderChangeMessage": 2,
    "SnapshotHeaderRecord": 3,
    "SnapshotFooterRecord": 4,
    "KRaftVersionRecord": 5,
    "VotersRecord": 6,
}
# The names Kafka's ControlRecordType enum (and kafka-dump-log) uses for them.
CONTROL_TYPE_NAMES: dict[str, str] = {
    "LeaderChangeMessage": "LEADER_CHANGE",
    "SnapshotHeaderRecord": "SNAPSHOT_HEADER",
    "SnapshotFooterRecord": "SNAPSHOT_FOOTER",
    "KRaftVersionRecord": "KRAFT_VERSION",
    "VotersRecord": "KRAFT_VOTERS",
}


@dataclass(frozen=True, slots=True)
class Versions:
    """A Kafka version range such as ``0+``, ``1-2``, ``3`` or ``none``."""

    low: int
    high: int | None  # None: open-ended ("0+")

    @classmethod
    def parse(cls, text: str | None) -> Versions:
        if text is None or text == "none":
            return NO_VERSIONS
        text = str(text).strip()
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        if "-" in text:
            low, high = text.split("-", 1)
            return cls(int(low), int(high))
        return cls(int(text), int(text))

    def __contains__(self, version: object) -> bool:
        if not isinstance(version, int) or self.low < 0:
            return False
        return version >= self.low and (self.high is None or version <= self.high)

    def __str__(self) -> str:
        if self.low < 0:
            return "none"
        if self.high is None:
            return f"{self.low}+"
        return str(self.low) if self.low == self.high else f"{self.low}-{self.high}"


NO_VERSIONS = Versions(-1, -1)


def camel_case(name: str) -> str:
    """Kafka's JSON field name: ``LeaderRecoveryState`` → ``leaderRecoveryState``."""
    return name[:1].lower() + name[1:]


def upper_snake_case(name: str) -> str:
    """Kafka's MetadataRecordType name: ``PartitionChangeRecord`` → ``PARTITION_CHANGE_RECORD``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


@dataclass(frozen=True, slots=True)
class FieldDef:
    """One field of a message or struct, as Kafka's definition states it."""

    name: str
    type: str
    versions: Versions
    nullable_versions: Versions = NO_VERSIONS
    tagged_versions: Versions = NO_VERSIONS
    tag: int | None = None
    raw_default: str | None = None
    entity_type: str | None = None
    about: str = ""
    struct: StructDef | None = None
    json_name: str = field(init=False, default="")  # Kafka's JSON name, computed once (hot path)

    def __post_init__(self) -> None:
        object.__setattr__(self, "json_name", camel_case(self.name))

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.struct is not None

    def nullable_in(self, version: int) -> bool:
        return version in self.nullable_versions

    def tagged_in(self, version: int) -> bool:
        return version in self.tagged_versions

    @property
    def default(self) -> Any:
        """Kafka's default value of the field (what a reader gets when the field is absent)."""
        if self.raw_default == "null":
            return None
        if self.is_array:
            return []
        if self.is_struct:
            assert self.struct is not None
            return self.struct.default_value()
        kind = self.type
        raw = self.raw_default
        if kind in INT_RANGES:
            if raw is None or raw == "":
                return 0
            return int(raw, 16) if raw.lower().startswith("0x") else int(raw)
        if kind == "bool":
            return raw is not None and raw.lower() == "true"
        if kind == "float64":
            return float(raw) if raw else 0.0
        if kind == "string":
            return raw if raw is not None else ""
        if kind in ("bytes", "records"):
            return b""
        if kind == "uuid":
            return ZERO_UUID
        raise ValueError(f"field {self.name}: no default for type {kind}")


ZERO_UUID = b"\x00" * 16


@dataclass(frozen=True, slots=True)
class StructDef:
    """A struct: the message body itself, a nested array-of-struct element or a common struct."""

    name: str
    fields: tuple[FieldDef, ...]
    versions: Versions = field(default_factory=lambda: Versions(0, None))

    def fields_in(self, version: int) -> Iterator[FieldDef]:
        return (candidate for candidate in self.fields if version in candidate.versions)

    def default_value(self) -> dict[str, Any]:
        return {candidate.json_name: candidate.default for candidate in self.fields}

    def field_named(self, json_name: str) -> FieldDef | None:
        for candidate in self.fields:
            if candidate.json_name == json_name:
                return candidate
        return None


@dataclass(frozen=True, slots=True)
class MessageDef:
    """A whole record type: a KRaft metadata record or a raft control record."""

    name: str
    api_key: int | None
    kind: str  # "metadata" or "data" (raft control records)
    valid_versions: Versions
    flexible_versions: Versions
    body: StructDef
    source_file: str

    @property
    def is_control(self) -> bool:
        return self.api_key is None

    @property
    def control_type(self) -> int | None:
        return CONTROL_TYPES.get(self.name)

    @property
    def json_type_name(self) -> str:
        """The ``type`` Kafka prints for it: PARTITION_CHANGE_RECORD, or LEADER_CHANGE for control."""
        if self.is_control:
            return CONTROL_TYPE_NAMES[self.name]
        return upper_snake_case(self.name)

    @property
    def versions(self) -> range:
        assert self.valid_versions.high is not None
        return range(self.valid_versions.low, self.valid_versions.high + 1)

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible_versions

    def layout_version(self, version: int) -> int:
        """The version whose layout reads and writes a record of ``version``: its own when the definitions know
        it, else the newest they know. Kafka evolves a record type through tagged fields, so a newer version
        is read best-effort with the newest layout, while the record keeps reporting its true version."""
        return version if version in self.valid_versions else self.versions[-1]


def strip_comments(text: str) -> str:
    """Kafka's definitions are JSON with ``//`` comment lines."""
    return "\n".join(line for line in text.splitlines() if not line.strip().startswith("//"))


def _parse_field(raw: dict[str, Any], common: dict[str, dict[str, Any]]) -> FieldDef:
    type_name: str = raw["type"]
    element = type_name[2:] if type_name.startswith("[]") else type_name
    struct: StructDef | None = None
    if element not in PRIMITIVE_TYPES:
        struct_raw = raw if "fields" in raw else common.get(element)
        if struct_raw is None:
            raise ValueError(f"field {raw['name']}: unknown struct type {element}")
        struct = StructDef(
            name=element,
            fields=tuple(_parse_field(candidate, common) for candidate in struct_raw["fields"]),
            versions=Versions.parse(struct_raw.get("versions", "0+")),
        )
    tag = raw.get("tag")
    return FieldDef(
        name=raw["name"],
        type=type_name,
        versions=Versions.parse(raw.get("versions")),
        nullable_versions=Versions.parse(raw.get("nullableVersions")),
        tagged_versions=Versions.parse(raw.get("taggedVersions")),
        tag=int(tag) if tag is not None else None,
        raw_default=None if raw.get("default") is None else str(raw["default"]),
        entity_type=raw.get("entityType"),
        about=raw.get("about", ""),
        struct=struct,
    )


def parse_definition(text: str, source_file: str = "<text>") -> MessageDef:
    raw = json.loads(strip_comments(text))
    common = {c["name"]: c for c in raw.get("commonStructs", [])}
    body = StructDef(
        name=raw["name"],
        fields=tuple(_parse_field(candidate, common) for candidate in raw["fields"]),
        versions=Versions.parse(raw["validVersions"]),
    )
    return MessageDef(
        name=raw["name"],
        api_key=raw.get("apiKey"),
        kind=raw["type"],
        valid_versions=Versions.parse(raw["validVersions"]),
        flexible_versions=Versions.parse(raw["flexibleVersions"]),
        body=body,
        source_file=source_file,
    )


def load_definitions(directory: Path | None = None) -> dict[str, MessageDef]:
    """Every record definition under ``directory`` (default: the copy shipped in ``schemas/kafka``).

    QuorumStateData is the format of the ``quorum-state`` file, not a log record, so it is left
    out of the record types.
    """
    if directory is None:
        return dict(_bundled_definitions())
    found: dict[str, MessageDef] = {}
    for path in sorted(directory.rglob("*.json")):
        message = parse_definition(path.read_text(encoding="utf-8"), str(path))
        if message.name != "QuorumStateData":
            found[message.name] = message
    return found


@cache
def _bundled_definitions() -> tuple[tuple[str, MessageDef], ...]:
    root = resources.files("schemas").joinpath("kafka")
    found: list[tuple[str, MessageDef]] = []
    for sub in ("metadata", "raft-control"):
        for entry in sorted(root.joinpath(sub).iterdir(), key=lambda e: e.name):
            if entry.name.endswith(".json"):
                message = parse_definition(entry.read_text(encoding="utf-8"), entry.name)
                if message.name != "QuorumStateData":
                    found.append((message.name, message))
    return tuple(found)


@cache
def definitions() -> dict[str, MessageDef]:
    """All record types by Kafka class name (e.g. ``PartitionChangeRecord``)."""
    return dict(_bundled_definitions())


@cache
def by_api_key() -> dict[int, MessageDef]:
    return {m.api_key: m for m in definitions().values() if m.api_key is not None}


@cache
def by_control_type() -> dict[int, MessageDef]:
    return {m.control_type: m for m in definitions().values() if m.control_type is not None}


@cache
def by_json_type_name() -> dict[str, MessageDef]:
    return {m.json_type_name: m for m in definitions().values()}
