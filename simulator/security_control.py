"""Kafka's ``AclControlManager``, ``ScramControlManager`` and ``DelegationTokenControlManager`` sides of the simulated
controller: the records CreateAcls/DeleteAcls, AlterUserScramCredentials and the delegation-token requests write.

Each writes what Kafka 4.4's manager writes for the request, as one atomic batch, and changes nothing itself: the
controller's replay (:mod:`simulator.replay`) applies the records. SCRAM credentials are real ones (RFC 5802 as
Kafka's ``ScramFormatter`` computes them) from a seeded password, so the log holds secrets as a live one does."""

from __future__ import annotations

import hashlib
import hmac
from typing import TYPE_CHECKING

from records.kafka_constants import PATTERN_LITERAL, PATTERN_PREFIXED, SCRAM_SHA_256, SCRAM_SHA_512
from records.model import MetadataRecord, uuid_to_str
from records.standard_acl import StandardAcl
from records.token_information import DelegationToken
from simulator.facts import ImageChange
from simulator.model import SimulationError, record

if TYPE_CHECKING:
    import random

    from simulator.facts import ScenarioFacts
    from simulator.versions import MetadataVersion

# ScramMechanism.type() -> the hash Kafka's ScramFormatter uses, and its minimum iterations (ScramMechanism)
SCRAM_HASHES = {SCRAM_SHA_256: "sha256", SCRAM_SHA_512: "sha512"}
SCRAM_MIN_ITERATIONS = 4096
SCRAM_MAX_ITERATIONS = 16384  # ScramControlManager.MAX_ITERATIONS
DELEGATION_TOKEN_MAX_LIFETIME_MS = 7 * 24 * 3_600_000  # delegation.token.max.lifetime.ms's default
DELEGATION_TOKEN_EXPIRY_TIME_MS = 24 * 3_600_000  # delegation.token.expiry.time.ms's default


def scram_credential(mechanism: int, password: str, salt: bytes, iterations: int) -> tuple[bytes, bytes]:
    """(storedKey, serverKey) as ``ScramFormatter`` derives them from the salted password (RFC 5802)."""
    digest = SCRAM_HASHES[mechanism]
    salted = hashlib.pbkdf2_hmac(digest, password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    return hashlib.new(digest, client_key).digest(), hmac.new(salted, b"Server Key", digest).digest()


def token_record(token: DelegationToken) -> MetadataRecord:
    """``DelegationTokenData.toRecord``."""
    return record("DelegationTokenRecord", 0, owner=token.owner, requester=token.requester,
                  renewers=list(token.renewers), issueTimestamp=token.issue_timestamp,
                  maxTimestamp=token.max_timestamp, expirationTimestamp=token.expiration_timestamp,
                  tokenId=token.token_id)


class SecurityControlManagers:
    """Mixin of :class:`~simulator.controller.ControllerSimulator`: ACLs, SCRAM users, delegation tokens."""

    if TYPE_CHECKING:  # what it uses of the controller it is mixed into (for type checkers only)
        acls: dict[bytes, StandardAcl]
        delegation_tokens: dict[str, DelegationToken]
        facts: ScenarioFacts
        mv: MetadataVersion
        now: int
        rng: random.Random
        scram_credentials: dict[tuple[str, int], int]

        def _commit(self, records: list[MetadataRecord], marks: dict[int, str] | None = None) -> int: ...
        def _latency(self) -> None: ...
        def _uuid(self) -> bytes: ...

    # ------------------------------------------------------------------ ACLs (AclControlManager)

    def create_acl(self, entry: StandardAcl) -> int:
        """CreateAcls for one binding: an AccessControlEntryRecord with a new id, or nothing when the same ACL
        exists (``existingAcls.add`` is false). Returns the record's offset, -1 when none was written."""
        if entry.pattern_type not in (PATTERN_LITERAL, PATTERN_PREFIXED):
            raise SimulationError(f"Invalid patternType {entry.pattern_type}")  # validateNewAcl
        if not entry.resource_name:
            raise SimulationError("Resource name should not be empty")
        if entry in self.acls.values():
            return -1
        self._latency()
        acl_id = self._uuid()
        while acl_id in self.acls:  # newAclId
            acl_id = self._uuid()
        offset = self._commit([record("AccessControlEntryRecord", 0, id=acl_id, resourceType=entry.resource_type,
                                      resourceName=entry.resource_name, patternType=entry.pattern_type,
                                      principal=entry.principal, host=entry.host, operation=entry.operation,
                                      permissionType=entry.permission_type)])
        self.facts.image_changes.append(ImageChange(offset, "acl", "created", uuid_to_str(acl_id), entry))
        return offset

    def delete_acls(self, entry: StandardAcl) -> int:
        """DeleteAcls with a filter matching exactly ``entry``: a RemoveAccessControlEntryRecord per matching id
        (one atomic batch). Returns the first offset, -1 when nothing matched."""
        ids = [acl_id for acl_id, acl in self.acls.items() if acl == entry]
        if not ids:
            return -1
        self._latency()
        offset = self._commit([record("RemoveAccessControlEntryRecord", 0, id=acl_id) for acl_id in ids])
        for position, acl_id in enumerate(ids):
            self.facts.image_changes.append(ImageChange(offset + position, "acl", "removed", uuid_to_str(acl_id),
                                                        entry))
        return offset

    # ------------------------------------------------------------------ SCRAM (ScramControlManager)

    def upsert_scram_credential(self, name: str, mechanism: int, password: str,
                                iterations: int = SCRAM_MIN_ITERATIONS) -> int:
        """AlterUserScramCredentials upserting one credential: the client salts the password (``kafka-configs``
        sends a random salt and the salted password), the controller writes storedKey and serverKey."""
        if not self.mv.scram_supported:
            raise SimulationError(f"The current metadata.version ({self.mv.name}) does not support SCRAM")
        if not name:
            raise SimulationError("Username must not be empty")
        if mechanism not in SCRAM_HASHES:
            raise SimulationError(f"Unknown SCRAM mechanism {mechanism}")
        if not SCRAM_MIN_ITERATIONS <= iterations <= SCRAM_MAX_ITERATIONS:
            raise SimulationError(f"Too {'few' if iterations < SCRAM_MIN_ITERATIONS else 'many'} iterations")
        self._latency()
        # ScramFormatter.secureRandomBytes: a 130-bit number in base 36, as bytes
        salt = _base36(self.rng.getrandbits(130)).encode()
        stored_key, server_key = scram_credential(mechanism, password, salt, iterations)
        offset = self._commit([record("UserScramCredentialRecord", 0, name=name, mechanism=mechanism, salt=salt,
                                      storedKey=stored_key, serverKey=server_key, iterations=iterations)])
        self.facts.image_changes.append(ImageChange(offset, "scram", "upserted", (name, mechanism), iterations))
        return offset

    def delete_scram_credential(self, name: str, mechanism: int) -> int:
        """AlterUserScramCredentials deleting one credential; a missing one is refused (RESOURCE_NOT_FOUND)."""
        if (name, mechanism) not in self.scram_credentials:
            raise SimulationError("Attempt to delete a user credential that does not exist")
        self._latency()
        offset = self._commit([record("RemoveUserScramCredentialRecord", 0, name=name, mechanism=mechanism)])
        self.facts.image_changes.append(ImageChange(offset, "scram", "removed", (name, mechanism), None))
        return offset

    # ------------------------------------------------------------------ delegation tokens

    def create_delegation_token(self, owner: str, renewers: tuple[str, ...] = ()) -> str:
        """CreateDelegationToken by ``owner`` (``User:name``) for itself: issued now, expiring after the default
        renew period, never beyond the maximum lifetime. Returns the token id (``Uuid.randomUuid().toString()``)."""
        self._require_delegation_tokens()
        self._latency()
        now = self.now
        max_timestamp = now + DELEGATION_TOKEN_MAX_LIFETIME_MS
        token = DelegationToken(uuid_to_str(self._uuid()), owner, owner, tuple(renewers), now, max_timestamp,
                                min(max_timestamp, now + DELEGATION_TOKEN_EXPIRY_TIME_MS))
        offset = self._commit([token_record(token)])
        self.facts.image_changes.append(ImageChange(offset, "delegation-token", "created", token.token_id, token))
        return token.token_id

    def renew_delegation_token(self, token_id: str) -> int:
        """RenewDelegationToken: the same record again with a new expiry (an upsert); an expired token is refused."""
        token = self._live_token(token_id)
        self._latency()
        renewed = _with_expiry(token, min(token.max_timestamp, self.now + DELEGATION_TOKEN_EXPIRY_TIME_MS))
        offset = self._commit([token_record(renewed)])
        self.facts.image_changes.append(ImageChange(offset, "delegation-token", "renewed", token_id, renewed))
        return offset

    def expire_delegation_token(self, token_id: str, expiry_time_period_ms: int = -1) -> int:
        """ExpireDelegationToken: a negative period removes it now (RemoveDelegationTokenRecord), else the record
        again with the earlier expiry."""
        token = self._live_token(token_id)
        self._latency()
        if expiry_time_period_ms < 0:
            offset = self._commit([record("RemoveDelegationTokenRecord", 0, tokenId=token_id)])
            self.facts.image_changes.append(ImageChange(offset, "delegation-token", "removed", token_id, None))
            return offset
        expiring = _with_expiry(token, min(token.max_timestamp, self.now + expiry_time_period_ms))
        offset = self._commit([token_record(expiring)])
        self.facts.image_changes.append(ImageChange(offset, "delegation-token", "renewed", token_id, expiring))
        return offset

    def sweep_expired_delegation_tokens(self) -> int:
        """The controller's periodic ``sweepExpiredDelegationTokens``: a RemoveDelegationTokenRecord for every token
        past its expiry or maximum. Returns the first offset, -1 when none had expired."""
        now = self.now
        expired = sorted(token_id for token_id, token in self.delegation_tokens.items()
                         if token.max_timestamp < now or token.expiration_timestamp < now)
        if not expired:
            return -1
        offset = self._commit([record("RemoveDelegationTokenRecord", 0, tokenId=token_id) for token_id in expired])
        for position, token_id in enumerate(expired):
            self.facts.image_changes.append(ImageChange(offset + position, "delegation-token", "removed", token_id,
                                                        None))
        return offset

    def _require_delegation_tokens(self) -> None:
        if not self.mv.delegation_tokens:
            raise SimulationError(f"delegation tokens need metadata version 3.6-IV2, not {self.mv.name}")

    def _live_token(self, token_id: str) -> DelegationToken:
        """The token a renew or expire names: DELEGATION_TOKEN_NOT_FOUND / _EXPIRED as Kafka refuses them."""
        self._require_delegation_tokens()
        token = self.delegation_tokens.get(token_id)
        if token is None:
            raise SimulationError(f"delegation token {token_id} not found")
        if token.max_timestamp < self.now or token.expiration_timestamp < self.now:
            raise SimulationError(f"delegation token {token_id} has expired")
        return token


def _with_expiry(token: DelegationToken, expiration_timestamp: int) -> DelegationToken:
    return DelegationToken(token.token_id, token.owner, token.requester, token.renewers, token.issue_timestamp,
                           token.max_timestamp, expiration_timestamp)


def _base36(number: int) -> str:
    """``BigInteger.toString(Character.MAX_RADIX)``."""
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        number, digit = divmod(number, 36)
        out = digits[digit] + out
        if not number:
            return out
