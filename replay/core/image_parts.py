"""The registry of the image's parts beyond brokers, topics and partitions (Kafka: one ``XImage``/``XDelta`` per
concern): features, controllers, configs, client quotas, ACLs, SCRAM credentials, delegation tokens and producer
ids. One :class:`ImagePart` per part holds everything that is data about it: the records it is folded from, its
history table (whose key ``lakehouse.tables`` declares), value columns, section and entity names, Kafka JSON fields
and order, the secret's fingerprint, the increment's seed, the diff's label and sort, the change log's source and
the columns a table for people prints.

The full replay (``replay.fold.engine``), the increment (``replay.fold.incremental``), the reference fold
(``replay.reference.fold``), the questions (``replay.query.image_sections``, ``image``, ``changes``) and the CLI
(``kraft_replay.image_commands``) loop over ``IMAGE_PARTS``; what stays code per part is its fold, Spark
(``replay.fold.engine.PART_FOLDS``) and reference (``replay.reference.parts.REFERENCE_PARTS``), keyed by section
(``tests/test_image_parts.py`` fails when an entry has none). Without pyspark: the JVM-free path reads it too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lakehouse.tables import (
    ACL_HISTORY,
    CLIENT_QUOTA_HISTORY,
    CONFIG_HISTORY,
    CONTROLLER_HISTORY,
    DELEGATION_TOKEN_HISTORY,
    FEATURE_HISTORY,
    HISTORY_KEYS,
    PRODUCER_ID_HISTORY,
    SCRAM_HISTORY,
)
from records.kafka_constants import (
    ACL_OPERATIONS,
    ACL_PERMISSION_TYPES,
    ACL_RESOURCE_TYPES,
    CONFIG_RESOURCE_TYPES,
    PATTERN_TYPES,
    SCRAM_MECHANISMS,
)
from records.vocabulary import fields, kafka_name
from replay.core.cells import config_resource, fingerprint_head, iso_ms, named, quota_entity


@dataclass(frozen=True)
class Term:
    """A text or number the diff or the change log computes from a part's row, declared here and made a Spark
    column in one place (``replay.query.image_terms.term_column``): ``kind`` names the formatter, ``columns`` the
    row's columns it reads, ``text`` its literal, prefix or separator, ``codes`` Kafka's enum names, ``terms`` the
    terms it joins."""

    kind: str
    columns: tuple[str, ...] = ()
    text: str = ""
    codes: Mapping[int, str] | None = None
    terms: tuple[Term, ...] = ()


def column(name: str) -> Term:
    return Term("column", (name,))


def text(name: str) -> Term:
    """The column as a string, empty when null."""
    return Term("text", (name,))


def string(name: str) -> Term:
    """The column cast to a string (null stays null)."""
    return Term("string", (name,))


def number(name: str) -> Term:
    """The column as a long (a sort key)."""
    return Term("number", (name,))


def literal(value: str) -> Term:
    return Term("literal", text=value)


ZERO = Term("zero")  # a sort key that does not decide
NOTHING = literal("")


def code(name: str, codes: Mapping[int, str]) -> Term:
    """Kafka's name of the column's enum code (UNKNOWN for one Kafka does not know)."""
    return Term("code", (name,), codes=codes)


def resource(type_column: str, name_column: str, codes: Mapping[int, str] = CONFIG_RESOURCE_TYPES) -> Term:
    """``TOPIC:orders``, ``BROKER:`` (the cluster default): the form ``history --config`` takes."""
    return Term("resource", (type_column, name_column), codes=codes)


def quota_label(name: str) -> Term:
    """``user=alice,client-id=<default>``: a client-quota entity's pairs, in the stored order."""
    return Term("quota_entity", (name,))


def pairs(*names: str) -> Term:
    """``kafkaName=value …`` for the columns (lists comma-joined, booleans true/false)."""
    return Term("pairs", names)


def concat(*terms: Term) -> Term:
    return Term("concat", terms=terms)


def joined(*terms: Term) -> Term:
    """The terms joined by spaces, a null one left out."""
    return Term("joined", text=" ", terms=terms)


def formatted(pattern: str, *terms: Term) -> Term:
    """``pattern`` (``%s`` per term) filled with the terms."""
    return Term("format", text=pattern, terms=terms)


# ``topic orders``, ``broker (cluster default)``: a config's resource as the change log names it
CONFIG_ENTITY = Term("config_entity", ("resource_type", "resource_name"))


@dataclass(frozen=True)
class Diff:
    """A part's entry in ``diff``: its label and its three sort columns (string, number, string)."""

    label: Term
    sort: tuple[Term, Term, Term]


@dataclass(frozen=True)
class Change:
    """A part's entries in the change log: how one is named (``entity``, ``item``) and valued; ``secret_only``: a
    secret kept only as a fingerprint (SCRAM), so the value says nothing of it and a new one is appended as
    changed."""

    entity: Term
    item: Term
    value: Term
    secret_only: bool = False


@dataclass(frozen=True)
class ImagePart:
    """One part of the image.

    ``section``: its name in ``state --format json`` (Kafka's image name); ``entity``: what one entry is called
    (``diff``, ``changes --part``); ``table``: its history table; ``folded_from``: the record types it is folded
    from, the first the one that puts an entry (the increment rewrites the table when one of them came);
    ``values``: the columns whose change makes a new version; ``shown``: the columns ``state`` shows, in Kafka's
    names; ``order``: a list's order; ``fingerprint``: the column of a redacted secret's fingerprint, which the
    diff compares too; ``seed``: the Kafka fields of the record that rebuilds an open version in the increment
    (None: the part is folded with the cluster, ``replay.fold.brokers``, and seeded entity by entity,
    ``replay.fold.incremental.seeds``); ``headers``/``cells``: its table for people (``state`` adds SINCE and
    CAUSE, ``history`` FROM, TO, TIME and the record before them)."""

    section: str
    entity: str
    table: str
    folded_from: tuple[str, ...]
    values: tuple[str, ...]
    shown: tuple[str, ...]
    order: tuple[str, ...]
    diff: Diff
    change: Change
    headers: tuple[str, ...]
    cells: Callable[[Any], list[Any]]
    fingerprint: str | None = None
    seed: tuple[str, ...] | None = None

    @property
    def keyed(self) -> tuple[str, ...]:
        """The key of one entry in the lake (``cluster_id`` first), as ``lakehouse.tables`` declares it."""
        return HISTORY_KEYS[self.table]

    @property
    def key(self) -> tuple[str, ...]:
        """The key of one entry within a cluster."""
        return tuple(name for name in self.keyed if name != "cluster_id")

    @property
    def puts(self) -> str:
        """The record type that puts an entry: the increment's seed."""
        return self.folded_from[0]

    @property
    def fields(self) -> tuple[tuple[str, str], ...]:
        """The shown columns with their Kafka JSON names: the names of the record that puts an entry
        (``feature`` is FeatureLevelRecord's ``name``), else the vocabulary's."""
        names = {definition.column: definition.kafka_name for definition in fields()[self.puts]}
        return tuple((name, names.get(name, kafka_name(name))) for name in self.shown)

    @property
    def seeded_whole(self) -> bool:
        """Folded on its own and seeded whole by the increment (every open version), not with the cluster."""
        return self.seed is not None


def _endpoints(endpoints: list[Any] | None) -> list[str]:
    return [f"{e['name']}://{e['host']}:{e['port']}" for e in endpoints or []]


_NAME = text("name")
_ACL_FIELDS = ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission_type")
_TOKEN_FIELDS = ("owner", "requester", "renewers", "issue_timestamp", "max_timestamp", "expiration_timestamp")

IMAGE_PARTS: dict[str, ImagePart] = {part.section: part for part in (
    ImagePart(
        "features", "feature", FEATURE_HISTORY, ("FeatureLevelRecord", "ZkMigrationStateRecord"), ("level",),
        ("feature", "level"), ("feature",),
        Diff(column("feature"), (column("feature"), ZERO, NOTHING)),
        Change(literal("feature"), column("feature"), text("level")),
        ("FEATURE", "LEVEL"), lambda r: [r["feature"], r["level"]]),
    ImagePart(
        "controllers", "controller", CONTROLLER_HISTORY, ("RegisterControllerRecord", "UnregisterControllerRecord"),
        ("incarnation_id", "zk_migration_ready", "endpoints", "features"),
        ("controller_id", "incarnation_id", "zk_migration_ready", "endpoints", "features"), ("controller_id",),
        Diff(string("controller_id"), (NOTHING, number("controller_id"), NOTHING)),
        Change(concat(literal("controller "), string("controller_id")), NOTHING, pairs("incarnation_id")),
        ("CONTROLLER", "INCARNATION", "ENDPOINTS"),
        lambda r: [r["controller_id"], r["incarnation_id"], _endpoints(r["endpoints"])]),
    # A RemoveTopicRecord deletes its topic's configs.
    ImagePart(
        "configs", "config", CONFIG_HISTORY, ("ConfigRecord", "RemoveTopicRecord"), ("value", "value_fingerprint"),
        ("resource_type", "resource_name", "name", "value"), ("resource_type", "resource_name", "name"),
        Diff(joined(resource("resource_type", "resource_name"), _NAME),
             (text("resource_name"), number("resource_type"), _NAME)),
        Change(CONFIG_ENTITY, column("name"), column("value")),
        ("RESOURCE", "NAME", "VALUE", "FINGERPRINT"), lambda r: [
            config_resource(r["resource_type"], r["resource_name"]), r["name"], r["value"],
            fingerprint_head(r["value_fingerprint"])],
        fingerprint="value_fingerprint", seed=("resourceType", "resourceName", "name", "value")),
    # No ``remove`` in the seed: Kafka's default, false.
    ImagePart(
        "clientQuotas", "clientQuota", CLIENT_QUOTA_HISTORY, ("ClientQuotaRecord",), ("value",),
        ("entity", "key", "value"), ("entity", "key"),
        Diff(joined(quota_label("entity"), column("key")), (quota_label("entity"), ZERO, column("key"))),
        Change(concat(literal("quota "), quota_label("entity")), column("key"), text("value")),
        ("ENTITY", "KEY", "VALUE"), lambda r: [quota_entity(r["entity"]), r["key"], r["value"]],
        seed=("entity", "key", "value")),
    ImagePart(
        "acls", "acl", ACL_HISTORY, ("AccessControlEntryRecord", "RemoveAccessControlEntryRecord"), _ACL_FIELDS,
        ("id", *_ACL_FIELDS), (*_ACL_FIELDS, "id"),
        Diff(column("id"), (column("id"), ZERO, NOTHING)),
        # ``User:alice ALLOW WRITE on TOPIC:payments (LITERAL) from host *``, in Kafka's enum names
        Change(concat(literal("acl "), column("id")), NOTHING, formatted(
            "%s %s %s on %s:%s (%s) from host %s", column("principal"),
            code("permission_type", ACL_PERMISSION_TYPES), code("operation", ACL_OPERATIONS),
            code("resource_type", ACL_RESOURCE_TYPES), column("resource_name"), code("pattern_type", PATTERN_TYPES),
            column("host"))),
        ("PRINCIPAL", "PERMISSION", "OPERATION", "RESOURCE", "PATTERN", "HOST", "ID"), lambda r: [
            r["principal"], named(ACL_PERMISSION_TYPES, r["permission_type"]), named(ACL_OPERATIONS, r["operation"]),
            f"{named(ACL_RESOURCE_TYPES, r['resource_type'])}:{r['resource_name']}",
            named(PATTERN_TYPES, r["pattern_type"]), r["host"], r["id"]],
        seed=("id", "resourceType", "resourceName", "patternType", "principal", "host", "operation",
              "permissionType")),
    ImagePart(
        "scramCredentials", "scramCredential", SCRAM_HISTORY,
        ("UserScramCredentialRecord", "RemoveUserScramCredentialRecord"), ("iterations", "credential_fingerprint"),
        ("name", "mechanism", "iterations"), ("name", "mechanism"),
        Diff(joined(_NAME, code("mechanism", SCRAM_MECHANISMS)), (_NAME, number("mechanism"), NOTHING)),
        Change(concat(literal("user "), column("name")), code("mechanism", SCRAM_MECHANISMS), pairs("iterations"),
               secret_only=True),
        ("USER", "MECHANISM", "ITERATIONS", "FINGERPRINT"), lambda r: [
            r["name"], named(SCRAM_MECHANISMS, r["mechanism"]), r["iterations"],
            fingerprint_head(r["credential_fingerprint"])],
        fingerprint="credential_fingerprint", seed=("name", "mechanism", "iterations")),
    ImagePart(
        "delegationTokens", "delegationToken", DELEGATION_TOKEN_HISTORY,
        ("DelegationTokenRecord", "RemoveDelegationTokenRecord"), _TOKEN_FIELDS, ("token_id", *_TOKEN_FIELDS),
        ("token_id",),
        Diff(column("token_id"), (column("token_id"), ZERO, NOTHING)),
        Change(concat(literal("token "), column("token_id")), NOTHING,
               pairs("owner", "requester", "renewers", "max_timestamp", "expiration_timestamp")),
        ("TOKEN ID", "OWNER", "REQUESTER", "RENEWERS", "ISSUED", "MAX", "EXPIRES"), lambda r: [
            r["token_id"], r["owner"], r["requester"], r["renewers"], iso_ms(r["issue_timestamp"]),
            iso_ms(r["max_timestamp"]), iso_ms(r["expiration_timestamp"])],
        seed=("tokenId", "owner", "requester", "renewers", "issueTimestamp", "maxTimestamp", "expirationTimestamp")),
    ImagePart(
        "producerIds", "producerIds", PRODUCER_ID_HISTORY, ("ProducerIdsRecord",),
        ("next_producer_id", "broker_id", "broker_epoch"), ("next_producer_id",), (),
        Diff(literal(kafka_name("next_producer_id")), (NOTHING, ZERO, NOTHING)),
        Change(literal("producer ids"), literal(kafka_name("next_producer_id")), text("next_producer_id")),
        ("NEXT PRODUCER ID", "BROKER", "BROKER EPOCH"),
        lambda r: [r["next_producer_id"], r["broker_id"], r["broker_epoch"]],
        seed=("nextProducerId", "brokerId", "brokerEpoch")),
)}
SECTIONS = tuple(IMAGE_PARTS)  # state's order of the parts
WHOLE_PARTS = tuple(part for part in IMAGE_PARTS.values() if part.seeded_whole)
# The change log's order: the parts folded on their own, then those folded with the cluster.
CHANGE_ORDER = (*WHOLE_PARTS, *(part for part in IMAGE_PARTS.values() if not part.seeded_whole))
FOLDED_FROM = {part.table: part.folded_from for part in IMAGE_PARTS.values()}
# The change log's parts (``changes --part``): the image's, then the topics, brokers and partitions of the cluster
# (``replay.query.changes``).
CHANGE_PARTS = (*(part.entity for part in CHANGE_ORDER), "topic", "broker", "partition")

__all__ = ["CHANGE_ORDER", "CHANGE_PARTS", "FOLDED_FROM", "IMAGE_PARTS", "SECTIONS", "WHOLE_PARTS", "Change", "Diff",
           "ImagePart", "Term"]
