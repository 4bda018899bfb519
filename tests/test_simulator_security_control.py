"""The simulated controller's ACLs, SCRAM users and delegation tokens (simulator.security_control): the records each
request writes, what Kafka refuses, and the state the controller's replay of them keeps."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from records.kafka_constants import (
    OPERATION_READ,
    OPERATION_WRITE,
    PATTERN_LITERAL,
    PATTERN_PREFIXED,
    PERMISSION_ALLOW,
    RESOURCE_TYPE_TOPIC,
    SCRAM_SHA_256,
    SCRAM_SHA_512,
)
from records.model import uuid_to_str
from records.standard_acl import StandardAcl
from simulator.controller import ControllerSimulator
from simulator.model import SimConfig, SimulationError
from simulator.security_control import (
    DELEGATION_TOKEN_EXPIRY_TIME_MS,
    DELEGATION_TOKEN_MAX_LIFETIME_MS,
    scram_credential,
)
from tests.simulator_fold import scripted

ALICE_WRITES = StandardAcl(RESOURCE_TYPE_TOPIC, "orders", PATTERN_LITERAL, "User:alice", "*", OPERATION_WRITE,
                                  PERMISSION_ALLOW)
DAY = 86_400_000


def written(sim: ControllerSimulator) -> list[tuple[int, str, dict[str, object]]]:
    return [(entry.offset, entry.type_name, dict(entry.record.data)) for entry in sim.entries()
            if entry.type_name not in ("NoOpRecord",)]


def test_an_acl_is_created_once_and_removed_by_its_id() -> None:
    sim = scripted()
    sim.entries()
    offset = sim.create_acl(ALICE_WRITES)
    [(at, kind, data)] = written(sim)
    assert (at, kind) == (offset, "AccessControlEntryRecord")
    acl_id = data.pop("id")
    assert data == {"resourceType": 2, "resourceName": "orders", "patternType": 3, "principal": "User:alice",
                    "host": "*", "operation": 4, "permissionType": 3}
    assert sim.acls == {acl_id: ALICE_WRITES}
    assert sim.create_acl(ALICE_WRITES) == -1 and written(sim) == []  # existingAcls: the same ACL writes nothing
    prefixed = StandardAcl(RESOURCE_TYPE_TOPIC, "orders-", PATTERN_PREFIXED, "User:alice", "*",
                                  OPERATION_READ, PERMISSION_ALLOW)
    sim.create_acl(prefixed)
    assert [data["patternType"] for _, _, data in written(sim)] == [4]
    removed = sim.delete_acls(ALICE_WRITES)
    assert written(sim) == [(removed, "RemoveAccessControlEntryRecord", {"id": acl_id})]
    assert list(sim.acls.values()) == [prefixed]
    assert sim.delete_acls(ALICE_WRITES) == -1  # nothing matches: nothing written
    assert [(c.kind, c.key) for c in sim.facts.changes_of("acl")] == [
        ("created", uuid_to_str(acl_id)), ("created", sim.facts.changes_of("acl")[1].key),
        ("removed", uuid_to_str(acl_id))]


def test_acls_kafka_refuses() -> None:
    sim = scripted()
    with pytest.raises(SimulationError, match="patternType"):
        sim.create_acl(StandardAcl(RESOURCE_TYPE_TOPIC, "orders", 2, "User:alice", "*", 3, 3))  # MATCH
    with pytest.raises(SimulationError, match="empty"):
        sim.create_acl(StandardAcl(RESOURCE_TYPE_TOPIC, "", PATTERN_LITERAL, "User:alice", "*", 3, 3))


def test_scram_credentials_are_rfc_5802_keys() -> None:
    """RFC 7677's example (user "user", password "pencil"): the client proof and the server signature it gives
    check out against the keys ScramFormatter's derivation makes."""
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    stored_key, server_key = scram_credential(SCRAM_SHA_256, "pencil", salt, 4096)
    auth = (b"n=user,r=rOprNGfwEbeRWgbNEkqO,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
            b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    assert base64.b64encode(hmac.new(server_key, auth, "sha256").digest()) == (
        b"6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
    proof = base64.b64decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    client_signature = hmac.new(stored_key, auth, "sha256").digest()
    client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
    assert hashlib.sha256(client_key).digest() == stored_key


def test_a_scram_user_created_changed_and_removed() -> None:
    sim = scripted()
    sim.entries()
    created = sim.upsert_scram_credential("alice", SCRAM_SHA_512, "pw-1", 8192)
    [(at, kind, data)] = written(sim)
    assert (at, kind) == (created, "UserScramCredentialRecord")
    assert (data["name"], data["mechanism"], data["iterations"]) == ("alice", 2, 8192)
    salt = data["salt"]
    assert isinstance(salt, bytes) and salt.isalnum() and len(salt) >= 20  # a 130-bit number in base 36
    assert (data["storedKey"], data["serverKey"]) == scram_credential(SCRAM_SHA_512, "pw-1", salt, 8192)
    assert len(data["storedKey"]) == len(data["serverKey"]) == 64  # SHA-512
    sim.upsert_scram_credential("alice", SCRAM_SHA_512, "pw-2", 8192)
    changed = written(sim)[0][2]
    assert changed["salt"] != salt and changed["storedKey"] != data["storedKey"]
    sim.upsert_scram_credential("alice", SCRAM_SHA_256, "pw-3")
    assert sim.scram_credentials == {("alice", SCRAM_SHA_512): 8192, ("alice", SCRAM_SHA_256): 4096}
    removed = sim.delete_scram_credential("alice", SCRAM_SHA_512)
    assert written(sim)[-1] == (removed, "RemoveUserScramCredentialRecord", {"name": "alice", "mechanism": 2})
    assert sim.scram_credentials == {("alice", SCRAM_SHA_256): 4096}


def test_scram_requests_kafka_refuses() -> None:
    sim = scripted()
    with pytest.raises(SimulationError, match="does not exist"):
        sim.delete_scram_credential("bob", SCRAM_SHA_256)
    with pytest.raises(SimulationError, match="Too few iterations"):
        sim.upsert_scram_credential("bob", SCRAM_SHA_256, "pw", 1000)
    with pytest.raises(SimulationError, match="Too many iterations"):
        sim.upsert_scram_credential("bob", SCRAM_SHA_256, "pw", 20000)
    with pytest.raises(SimulationError, match="Unknown SCRAM mechanism"):
        sim.upsert_scram_credential("bob", 3, "pw")
    with pytest.raises(SimulationError, match="does not support SCRAM"):
        scripted("3.4").upsert_scram_credential("bob", SCRAM_SHA_256, "pw")


def test_a_delegation_token_created_renewed_and_expired() -> None:
    sim = scripted()
    sim.entries()
    token_id = sim.create_delegation_token("User:alice", ("User:bob",))
    [(created, kind, data)] = written(sim)
    issued = data["issueTimestamp"]
    assert kind == "DelegationTokenRecord" and data == {
        "owner": "User:alice", "requester": "User:alice", "renewers": ["User:bob"], "issueTimestamp": issued,
        "maxTimestamp": issued + DELEGATION_TOKEN_MAX_LIFETIME_MS,
        "expirationTimestamp": issued + DELEGATION_TOKEN_EXPIRY_TIME_MS, "tokenId": token_id}
    sim.tick(DAY // 2)
    renewed = sim.renew_delegation_token(token_id)
    [(at, kind, data)] = written(sim)
    assert (at, kind, data["tokenId"], data["issueTimestamp"]) == (renewed, "DelegationTokenRecord", token_id, issued)
    assert data["expirationTimestamp"] == sim.now + DELEGATION_TOKEN_EXPIRY_TIME_MS  # at most the maximum lifetime
    sim.expire_delegation_token(token_id, 60_000)  # expire in a minute: the record again, with that expiry
    assert written(sim)[0][2]["expirationTimestamp"] == sim.now + 60_000
    removed = sim.expire_delegation_token(token_id)  # expire now
    assert written(sim) == [(removed, "RemoveDelegationTokenRecord", {"tokenId": token_id})]
    assert sim.delegation_tokens == {} and created < renewed < removed


def test_expired_tokens_are_swept_and_refused() -> None:
    sim = scripted()
    first = sim.create_delegation_token("User:alice")
    sim.tick(DAY // 2)
    second = sim.create_delegation_token("User:bob")
    assert sim.sweep_expired_delegation_tokens() == -1
    sim.tick(DAY // 2 + 1)
    with pytest.raises(SimulationError, match="expired"):
        sim.renew_delegation_token(first)
    sim.entries()
    swept = sim.sweep_expired_delegation_tokens()
    assert written(sim) == [(swept, "RemoveDelegationTokenRecord", {"tokenId": first})]
    assert list(sim.delegation_tokens) == [second]
    with pytest.raises(SimulationError, match="not found"):
        sim.renew_delegation_token(first)
    with pytest.raises(SimulationError, match=r"3\.6-IV2"):
        ControllerSimulator(SimConfig(metadata_version="3.5")).create_delegation_token("User:alice")
