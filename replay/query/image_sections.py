"""The parts of Kafka's image beyond brokers, topics and partitions (issue 19), as ``state`` shows them: each
part's section, history table, key, Kafka JSON fields and order (the registry, ``replay.core.image_parts``), and
which versions ``history --config``, ``--acl``, ``--user``… ask for (SQL). Without Spark, so that
``replay.query.image`` (the Spark path) and ``replay.query.light_state`` (the JVM-free path of a fresh ``state`` or
``history``) read one definition.
"""

from __future__ import annotations

from dataclasses import dataclass

from records.kafka_constants import (
    ACL_RESOURCE_TYPES,
    CLIENT_QUOTA_USER,
    CONFIG_RESOURCE_TYPES,
    USER_PRINCIPAL_TYPE,
)
from replay.core.cells import DEFAULT_ENTITY
from replay.core.image_parts import IMAGE_PARTS, SECTIONS, ImagePart
from replay.query.rules import NamedRow, QueryError, kafka_fields, sql_text

NO_PRODUCER_ID = -1  # ProducerIdsImage.EMPTY: nextProducerId before any ProducerIdsRecord
Part = ImagePart  # one part of the image: its section, entity, table, key, Kafka fields and order
PARTS: dict[str, Part] = IMAGE_PARTS  # by section, in state's order
INTERVAL_FIELDS = kafka_fields("valid_from_offset", "valid_to_offset", "valid_from_time_ms", "valid_to_time_ms",
                               "cause_offset", "cause_type")


# --- the versions `history` asks for -------------------------------------------------------------


def _code(names: dict[int, str], text: str, what: str) -> int:
    wanted = text.strip().upper()
    for code, name in names.items():
        if name == wanted:
            return code
    raise QueryError(f"unknown {what} {text!r}: one of {', '.join(names.values())}")


def parse_resource(text: str, names: dict[int, str] = CONFIG_RESOURCE_TYPES, what: str = "config resource type"
                   ) -> tuple[int, str]:
    """``TOPIC:orders`` → (2, "orders"); ``BROKER:1``; ``BROKER:`` is the cluster default (an empty name).
    The type is Kafka's name of it (``ConfigResource.Type``; for ACLs ``ResourceType``)."""
    kind, colon, name = text.partition(":")
    if not colon:
        raise QueryError(f"{text!r} is not TYPE:NAME (e.g. TOPIC:orders, BROKER:1, BROKER: for the cluster "
                         "default)")
    return _code(names, kind, what), name


def user_principal(user: str) -> str:
    """An ACL's principal for a user name: ``User:alice`` (``KafkaPrincipal.USER_TYPE``)."""
    return f"{USER_PRINCIPAL_TYPE}:{user}"


def _resource_sql(text: str, names: dict[int, str] = CONFIG_RESOURCE_TYPES, what: str = "config resource type"
                  ) -> str:
    """The rows of one resource ``parse_resource`` reads from ``text``, as SQL."""
    resource_type, resource_name = parse_resource(text, names, what)
    return f"resource_type = {resource_type} AND resource_name = {sql_text(resource_name)}"


def config_sql(resource: str) -> str:
    """The config versions of one resource (``TOPIC:orders``, ``BROKER:1``, ``BROKER:``), as SQL."""
    return _resource_sql(resource)


def acl_sql(principal: str | None = None, resource: str | None = None) -> str | None:
    """The ACL versions of a principal (``User:alice``) and/or exactly one resource pattern (``TOPIC:payments``, by
    Kafka's ``ResourceType`` name), as SQL (None: every ACL)."""
    terms = [] if principal is None else [f"principal = {sql_text(principal)}"]
    if resource is not None:
        terms.append(_resource_sql(resource, ACL_RESOURCE_TYPES, "ACL resource type"))
    return " AND ".join(terms) or None


def quota_user_sql(user: str) -> str:
    """The client-quota versions whose entity names ``user`` (a ``user`` entity element), as SQL. The strings are
    cast so that DataFusion compares them as the table's own (``lakehouse.light_reader``)."""
    element = (f"named_struct('entity_type', CAST({sql_text(CLIENT_QUOTA_USER)} AS STRING), "
               f"'entity_name', CAST({sql_text(user)} AS STRING))")
    return f"array_contains(entity, {element})"


def user_sql(user: str) -> dict[str, str]:
    """What the log says of one user, by section: its SCRAM credentials, the client quotas naming it and the ACLs
    of ``User:<user>``."""
    return {"scramCredentials": f"name = {sql_text(user)}", "clientQuotas": quota_user_sql(user),
            "acls": f"principal = {sql_text(user_principal(user))}"}


@dataclass(frozen=True)
class PartQuestion:
    """One part's versions ``history`` shows: under ``title``, those matching ``where`` (SQL; None: all)."""

    section: str
    title: str
    where: str | None


def part_questions(config: str | None = None, acl: bool = False, principal: str | None = None,
                   resource: str | None = None, user: str | None = None, quota: bool = False, token: bool = False,
                   producer_ids: bool = False) -> list[PartQuestion]:
    """``history``'s question about the image (exactly one of them asked), in output order."""
    if config is not None:
        return [PartQuestion("configs", f"configs of {config}", config_sql(config))]
    if acl:
        narrowed = " ".join(text for text in (principal, resource) if text)
        return [PartQuestion("acls", f"ACLs{' of ' + narrowed if narrowed else ''}", acl_sql(principal, resource))]
    if user is not None:
        return [PartQuestion(section, f"{section} of user {user}", where) for section, where in user_sql(user).items()]
    section = "clientQuotas" if quota else "delegationTokens" if token else "producerIds"
    assert quota or token or producer_ids
    return [PartQuestion(section, section, None)]


def part_history_order(section: str) -> tuple[str, ...]:
    """A part's versions as ``history`` lists them: oldest first, then by the part's order."""
    return ("valid_from_offset", *PARTS[section].order)


def part_history_fields(section: str) -> tuple[tuple[str, str], ...]:
    """A part's version in JSON: ``part`` (its section), its Kafka fields (a secret's fingerprint too), the
    interval."""
    return (("part", "part"), *compared_fields(PARTS[section]), *INTERVAL_FIELDS)


def compared_fields(part: Part) -> tuple[tuple[str, str], ...]:
    """A part's Kafka fields and, where it keeps one, its secret's fingerprint: what a diff compares (a new secret
    is a change)."""
    return part.fields + (kafka_fields(part.fingerprint) if part.fingerprint else ())


def next_producer_id_of(row: NamedRow | None) -> int:
    """The image's ``nextProducerId``: the producer ids' one row's, or -1 before any ProducerIdsRecord."""
    return NO_PRODUCER_ID if row is None or row["next_producer_id"] is None else int(row["next_producer_id"])


__all__ = ["DEFAULT_ENTITY", "INTERVAL_FIELDS", "NO_PRODUCER_ID", "PARTS", "SECTIONS", "Part", "PartQuestion",
           "acl_sql", "compared_fields", "config_sql", "next_producer_id_of", "parse_resource", "part_history_fields",
           "part_history_order", "part_questions", "quota_user_sql", "user_principal", "user_sql"]
