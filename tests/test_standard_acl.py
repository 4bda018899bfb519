"""Kafka's ``StandardAcl`` (``records/standard_acl.py``): ``fromRecord`` keeps the codes Kafka's enums know and
makes any other UNKNOWN; the simulated controller's state and the reference fold's image hold the same value."""

from __future__ import annotations

from records.kafka_constants import ACL_UNKNOWN, OPERATION_WRITE, PATTERN_LITERAL, PERMISSION_ALLOW, RESOURCE_TYPE_TOPIC
from records.model import LogEntry, uuid_to_str
from records.standard_acl import StandardAcl
from replay.reference.fold import image_at
from tests.reference_fold_support import ACL1, acl

ALICE_WRITES = StandardAcl(RESOURCE_TYPE_TOPIC, "orders", PATTERN_LITERAL, "User:alice", "*", OPERATION_WRITE,
                           PERMISSION_ALLOW)


def test_from_record_keeps_known_codes_and_makes_others_unknown() -> None:
    assert StandardAcl.from_record(acl(ACL1)) == ALICE_WRITES
    unknown = StandardAcl.from_record(acl(ACL1, resource_type=12, pattern=9, operation=42, permission=7))
    assert (unknown.resource_type, unknown.pattern_type, unknown.operation, unknown.permission_type) == (
        ACL_UNKNOWN,) * 4
    assert (unknown.resource_name, unknown.principal, unknown.host) == ("orders", "User:alice", "*")


def test_the_reference_image_keeps_it_by_id() -> None:
    assert image_at([LogEntry(offset=0, record=acl(ACL1))], 0).acls == {uuid_to_str(ACL1): ALICE_WRITES}
