"""Kafka's ``PartitionRegistration``: one partition's registration, built from a PartitionRecord and merged with a
PartitionChangeRecord. The one statement of Kafka's rule, here because ``records`` is the layer both of its users may
import. It is written over field values (:func:`values_from_record`, :func:`merged_values`: what a registration
holds after the record, in the order of :data:`REGISTRATION_FIELDS`), so each user keeps the registration in its own
holder: the reference fold (``replay.reference.metadata_delta``, an immutable image) in :class:`PartitionRegistration`,
its lists tuples; the simulated controller's replay (``simulator.replay``, mutable state, many millions of changes)
in its own partitions, its lists lists, with no registration built in between. The Spark fold
(``replay.fold.partitions``) is its set-based form.

The rule as released in Kafka 3.9 and 4.x (tests/test_kafka_referee.py folds with both): a null field of a
PartitionChangeRecord (Kafka's default, or a tagged field the record leaves out) keeps the old value; a leader other
than ``NO_LEADER_CHANGE`` is a new leader and bumps the leader epoch; every merge bumps the partition epoch. What
Kafka throws on is :class:`InvalidRegistration`; its holder words it (``replay.core.refusals``) or treats it as a bug.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from typing import Any, Generic, Protocol, Self, TypeVar

from records.kafka_constants import (
    LENGTHS,
    MIGRATING_DIR,
    NO_LEADER_CHANGE,
    NO_RECOVERY_STATE_CHANGE,
    RECOVERY_STATES,
)
from records.model import MetadataRecord, uuid_from_str, uuid_to_str
from records.vocabulary import fields

DirId = TypeVar("DirId")  # a directory id in the form its holder keeps it
DirId_co = TypeVar("DirId_co", covariant=True)


class InvalidRegistration(ValueError):
    """A registration Kafka refuses to build: its ``PartitionRegistration`` throws."""


class DirectoriesMismatch(InvalidRegistration):
    """``checkDirectories``' ``InvalidReplicaDirectoriesException``, or the constructor's own check: the record's
    (or the registration's) directories are not one per replica."""

    def __init__(self) -> None:
        super().__init__(LENGTHS)


class InvalidLeaderRecoveryState(InvalidRegistration):
    """``LeaderRecoveryState.of`` of a value that is neither RECOVERED nor RECOVERING (``state``)."""

    def __init__(self, state: int) -> None:
        super().__init__(state)
        self.state = state


@dataclass(frozen=True, slots=True)
class DirectoryIds(Generic[DirId]):
    """The form a holder keeps directory ids in: ``of`` turns a record's 16 bytes into it, ``migrating`` is
    ``DirectoryId.MIGRATING`` in it."""

    of: Callable[[bytes], DirId]
    migrating: DirId


PRINTED_DIRECTORY_IDS = DirectoryIds(uuid_to_str, MIGRATING_DIR)  # as Kafka prints a Uuid (the reference fold)
RECORDED_DIRECTORY_IDS = DirectoryIds(bytes, uuid_from_str(MIGRATING_DIR))  # as the records carry them (simulator)


def leader_recovery_state_of(value: int) -> int:
    """``LeaderRecoveryState.of``: RECOVERED or RECOVERING, else Kafka throws."""
    if value not in RECOVERY_STATES:
        raise InvalidLeaderRecoveryState(value)
    return value


def default_to_migrating(directories: Sequence[DirId], replicas: Sequence[int],
                         migrating: DirId) -> Sequence[DirId]:
    """``PartitionRegistration.defaultToMigrating``: directories that are all MIGRATING (or none) say nothing, so
    every replica of the new assignment is MIGRATING, whatever its count (a new tuple); any other list is kept as it
    is (the same object), and the registration's constructor refuses it unless it has one entry per replica."""
    if directories.count(migrating) == len(directories):  # all of them (or none)
        return (migrating,) * len(replicas)
    if len(directories) != len(replicas):
        raise DirectoriesMismatch()
    return directories


_DEFAULTS: dict[str, dict[str, Any]] = {}  # by record type: Kafka's default of each field


def _values(record: MetadataRecord) -> dict[str, Any]:
    """The record's fields, Kafka's default for those it lacks (a tagged field left out, a field of a later
    version)."""
    defaults = _DEFAULTS.get(record.type_name)
    if defaults is None:
        defaults = _DEFAULTS[record.type_name] = {field.kafka_name: field.default
                                                  for field in fields()[record.type_name]}
    return defaults | record.data


class Registered(Protocol[DirId_co]):
    """A registration as its holder keeps it, what the rule reads of it: Kafka's fields, lists as tuples or lists."""

    @property
    def replicas(self) -> Sequence[int]: ...

    @property
    def isr(self) -> Sequence[int]: ...

    @property
    def removing_replicas(self) -> Sequence[int]: ...

    @property
    def adding_replicas(self) -> Sequence[int]: ...

    @property
    def leader(self) -> int: ...

    @property
    def leader_recovery_state(self) -> int: ...

    @property
    def leader_epoch(self) -> int: ...

    @property
    def partition_epoch(self) -> int: ...

    @property
    def directories(self) -> Sequence[DirId_co]: ...

    @property
    def eligible_leader_replicas(self) -> Sequence[int]: ...

    @property
    def last_known_elr(self) -> Sequence[int]: ...


# How a holder keeps a registration's lists: tuple (immutable) or list (mutable, a new one for each new value)
SequenceOf = Callable[[Iterable[Any]], Sequence[Any]]


def values_from_record(record: MetadataRecord, ids: DirectoryIds[DirId], sequence: SequenceOf) -> tuple[Any, ...]:
    """``PartitionRegistration(PartitionRecord)`` over field values: the registration's, in the order of
    :data:`REGISTRATION_FIELDS`, its lists made by ``sequence`` (a null one, from a record before the field, is
    empty, as the constructor makes it), its directory ids by ``ids``."""
    values = _values(record)
    replicas = sequence(values["replicas"] or ())
    # a list comprehension, not map: a list made from map keeps room for 8 ids, ~5 MB over 100k partitions
    directories = sequence([ids.of(directory) for directory in values["directories"] or ()])
    if directories and len(directories) != len(replicas):  # checkDirectories
        raise DirectoriesMismatch()
    recovery = leader_recovery_state_of(values["leaderRecoveryState"])
    migrated = default_to_migrating(directories, replicas, ids.migrating)
    return (replicas, sequence(values["isr"] or ()), sequence(values["removingReplicas"] or ()),
            sequence(values["addingReplicas"] or ()), values["leader"], recovery, values["leaderEpoch"],
            values["partitionEpoch"], directories if migrated is directories else sequence(migrated),
            sequence(values["eligibleLeaderReplicas"] or ()), sequence(values["lastKnownElr"] or ()))


def merged_values(old: Registered[DirId], record: MetadataRecord, ids: DirectoryIds[DirId],
                  sequence: SequenceOf) -> tuple[Any, ...]:
    """``PartitionRegistration.merge(PartitionChangeRecord)`` over field values: the merged registration's, in the
    order of :data:`REGISTRATION_FIELDS`. A null field of the record keeps the old value (the same object); a new
    list is made by ``sequence``, a directory id by ``ids``."""
    values = _values(record)
    new_replicas, record_dirs = values["replicas"], values["directories"]
    if record_dirs is not None:
        record_dirs = sequence([ids.of(directory) for directory in record_dirs])
    if new_replicas is not None and record_dirs and len(new_replicas) != len(record_dirs):  # checkDirectories
        raise DirectoriesMismatch()
    replicas = old.replicas if new_replicas is None else sequence(new_replicas)
    recovery = values["leaderRecoveryState"]  # LeaderRecoveryState.changeTo, before the constructor
    recovery = old.leader_recovery_state if recovery == NO_RECOVERY_STATE_CHANGE else leader_recovery_state_of(
        recovery)
    # null directories (every record before v1, and later ones that leave them) keep the old list as it is,
    # position by position: Kafka does not map them onto the new replicas
    given = old.directories if record_dirs is None else record_dirs
    directories = default_to_migrating(given, replicas, ids.migrating)
    leader, leader_epoch = old.leader, old.leader_epoch
    if values["leader"] != NO_LEADER_CHANGE:
        leader, leader_epoch = values["leader"], old.leader_epoch + 1
    isr, removing, adding = values["isr"], values["removingReplicas"], values["addingReplicas"]
    elr, last_known_elr = values["eligibleLeaderReplicas"], values["lastKnownElr"]
    return (replicas, old.isr if isr is None else sequence(isr),
            old.removing_replicas if removing is None else sequence(removing),
            old.adding_replicas if adding is None else sequence(adding), leader, recovery, leader_epoch,
            old.partition_epoch + 1, given if directories is given else sequence(directories),
            old.eligible_leader_replicas if elr is None else sequence(elr),
            old.last_known_elr if last_known_elr is None else sequence(last_known_elr))


def has_elr(registration: Registered[Any]) -> bool:
    """An ELR or a last known ELR: what a ClearElrRecord clears."""
    return bool(registration.eligible_leader_replicas or registration.last_known_elr)


_OWN_FIELDS: dict[type, tuple[str, ...]] = {}


def _own_fields(holder: type) -> tuple[str, ...]:
    """The fields a holder adds to Kafka's, which a merge keeps as they are (``dataclasses.replace`` would find
    them too, at twice the cost of the fold's most frequent step)."""
    own = _OWN_FIELDS.get(holder)
    if own is None:
        own = _OWN_FIELDS[holder] = tuple(field.name for field in dataclass_fields(holder)
                                          if field.name not in REGISTRATION_FIELDS)
    return own


@dataclass(frozen=True, slots=True)
class PartitionRegistration(Generic[DirId]):
    """Kafka's ``PartitionRegistration``, immutable, its fields named as the records' columns are. A holder may
    extend it with fields of its own (the reference fold's topic and partition ids): :meth:`merge` keeps them."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    leader: int
    leader_recovery_state: int
    leader_epoch: int
    partition_epoch: int
    directories: tuple[DirId, ...]
    eligible_leader_replicas: tuple[int, ...]
    last_known_elr: tuple[int, ...]

    @classmethod
    def from_record(cls, record: MetadataRecord, ids: DirectoryIds[DirId], **own: Any) -> Self:
        """``PartitionRegistration(PartitionRecord)`` (:func:`values_from_record`); ``own``: the holder's fields
        beside Kafka's."""
        return cls(*values_from_record(record, ids, tuple), **own)

    def merge(self, record: MetadataRecord, ids: DirectoryIds[DirId]) -> Self:
        """``PartitionRegistration.merge(PartitionChangeRecord)`` (:func:`merged_values`): a null field keeps the
        old value."""
        holder = type(self)
        return holder(*merged_values(self, record, ids, tuple),
                      **{name: getattr(self, name) for name in _own_fields(holder)})

    def elr_cleared(self, ids: DirectoryIds[DirId]) -> Self:
        """A ClearElrRecord's effect on a partition with an ELR (``TopicsDelta`` and ``ReplicationControlManager``
        replay it so): the merge of :data:`ELR_CLEARED`, so the partition epoch moves on."""
        return self.merge(ELR_CLEARED, ids)


# The order of the rule's values (:func:`values_from_record`, :func:`merged_values`): Kafka's fields
REGISTRATION_FIELDS = tuple(field.name for field in dataclass_fields(PartitionRegistration))

# A PartitionChangeRecord that empties both ELR lists: what a ClearElrRecord does to a partition with an ELR
ELR_CLEARED = MetadataRecord("PartitionChangeRecord", 2, {"eligibleLeaderReplicas": [], "lastKnownElr": []})

__all__ = [
    "ELR_CLEARED",
    "PRINTED_DIRECTORY_IDS",
    "RECORDED_DIRECTORY_IDS",
    "REGISTRATION_FIELDS",
    "DirectoriesMismatch",
    "DirectoryIds",
    "InvalidLeaderRecoveryState",
    "InvalidRegistration",
    "PartitionRegistration",
    "Registered",
    "SequenceOf",
    "default_to_migrating",
    "has_elr",
    "leader_recovery_state_of",
    "merged_values",
    "values_from_record",
]
