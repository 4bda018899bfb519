"""One ACL as Kafka holds it (``StandardAcl``): the one definition that the simulated controller (``simulator``, as
``AclControlManager`` keeps them by id) and the reference fold (``replay.reference.image_parts_delta``, as
``AclsImage`` keeps them by id) both keep their ACLs in, here because ``records`` is the layer both may import."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from records.kafka_constants import ACL_OPERATIONS, ACL_PERMISSION_TYPES, ACL_RESOURCE_TYPES, ACL_UNKNOWN, PATTERN_TYPES
from records.model import MetadataRecord


def _from_code(code: int, known: Mapping[int, str]) -> int:
    """An ACL enum's ``fromCode``: a code it does not know is its UNKNOWN."""
    return code if code in known else ACL_UNKNOWN


@dataclass(frozen=True, slots=True)
class StandardAcl:
    """``StandardAcl``: what one AccessControlEntryRecord grants or denies (its id aside), each code as Kafka's enum
    keeps it."""

    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int

    @classmethod
    def from_record(cls, record: MetadataRecord) -> StandardAcl:
        """``StandardAcl.fromRecord``: every code through its enum's ``fromCode``."""
        data = record.data
        return cls(resource_type=_from_code(data["resourceType"], ACL_RESOURCE_TYPES),
                   resource_name=data["resourceName"], pattern_type=_from_code(data["patternType"], PATTERN_TYPES),
                   principal=data["principal"], host=data["host"],
                   operation=_from_code(data["operation"], ACL_OPERATIONS),
                   permission_type=_from_code(data["permissionType"], ACL_PERMISSION_TYPES))


__all__ = ["StandardAcl"]
