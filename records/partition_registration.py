"""Kafka's ``PartitionRegistration``: one partition's registration, built from a PartitionRecord and merged with a
PartitionChangeRecord. The one statement of Kafka's rule, here because ``records`` is the layer both of its users may
import: the reference fold (``replay.reference.metadata_delta``, an immutable image) and the simulated controller's
replay (``simulator.replay``, mutable state) each adapt it to their own holder; the Spark fold
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
from functools import cache
from typing import Any, Generic, Self, TypeVar

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


def default_to_migrating(directories: tuple[DirId, ...], replicas: Sequence[int],
                         migrating: DirId) -> tuple[DirId, ...]:
    """``PartitionRegistration.defaultToMigrating``: directories that are all MIGRATING (or none) say nothing, so
    every replica of the new assignment is MIGRATING, whatever its count; any other list is kept as it is, and the
    registration's constructor refuses it unless it has one entry per replica."""
    if directories.count(migrating) == len(directories):  # all of them (or none)
        return (migrating,) * len(replicas)
    if len(directories) != len(replicas):
        raise DirectoriesMismatch()
    return directories


@cache
def _defaults(record_type: str) -> dict[str, Any]:
    return {field.kafka_name: field.default for field in fields()[record_type]}


def _values(record: MetadataRecord) -> dict[str, Any]:
    """The record's fields, Kafka's default for those it lacks (a tagged field left out, a field of a later
    version)."""
    return {**_defaults(record.type_name), **record.data}


def _ints(values: Iterable[int] | None) -> tuple[int, ...]:
    """A list of the record; a null one (a record before the field) is empty, as the constructor makes it."""
    return tuple(values) if values is not None else ()


def _or_old(value: Iterable[int] | None, old: tuple[int, ...]) -> tuple[int, ...]:
    """A list of a PartitionChangeRecord: null keeps the old one."""
    return old if value is None else tuple(value)


_OWN_FIELDS: dict[type, tuple[str, ...]] = {}


def _own_fields(holder: type) -> tuple[str, ...]:
    """The fields a holder adds to Kafka's, which a merge keeps as they are (``dataclasses.replace`` would find
    them too, at twice the cost of the fold's most frequent step)."""
    own = _OWN_FIELDS.get(holder)
    if own is None:
        kafka = {field.name for field in dataclass_fields(PartitionRegistration)}
        own = _OWN_FIELDS[holder] = tuple(field.name for field in dataclass_fields(holder) if field.name not in kafka)
    return own


@dataclass(frozen=True, slots=True)
class PartitionRegistration(Generic[DirId]):
    """Kafka's ``PartitionRegistration``, its fields named as the records' columns are. A holder may extend it with
    fields of its own (the reference fold's topic and partition ids): :meth:`merge` keeps them."""

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
        """``PartitionRegistration(PartitionRecord)``; ``own``: the holder's fields beside Kafka's."""
        values = _values(record)
        replicas = _ints(values["replicas"])
        directories = tuple(ids.of(directory) for directory in values["directories"] or ())
        if directories and len(directories) != len(replicas):  # checkDirectories
            raise DirectoriesMismatch()
        recovery = leader_recovery_state_of(values["leaderRecoveryState"])
        return cls(replicas=replicas, isr=_ints(values["isr"]), removing_replicas=_ints(values["removingReplicas"]),
                   adding_replicas=_ints(values["addingReplicas"]), leader=values["leader"],
                   leader_recovery_state=recovery, leader_epoch=values["leaderEpoch"],
                   partition_epoch=values["partitionEpoch"],
                   directories=default_to_migrating(directories, replicas, ids.migrating),
                   eligible_leader_replicas=_ints(values["eligibleLeaderReplicas"]),
                   last_known_elr=_ints(values["lastKnownElr"]), **own)

    def merge(self, record: MetadataRecord, ids: DirectoryIds[DirId]) -> Self:
        """``PartitionRegistration.merge(PartitionChangeRecord)``: a null field keeps the old value."""
        values = _values(record)
        new_replicas, record_dirs = values["replicas"], values["directories"]
        if record_dirs is not None:
            record_dirs = tuple(ids.of(directory) for directory in record_dirs)
        if new_replicas is not None and record_dirs and len(new_replicas) != len(record_dirs):  # checkDirectories
            raise DirectoriesMismatch()
        replicas = self.replicas if new_replicas is None else tuple(new_replicas)
        recovery = values["leaderRecoveryState"]  # LeaderRecoveryState.changeTo, before the constructor
        recovery = self.leader_recovery_state if recovery == NO_RECOVERY_STATE_CHANGE else leader_recovery_state_of(
            recovery)
        # null directories (every record before v1, and later ones that leave them) keep the old list as it is,
        # position by position: Kafka does not map them onto the new replicas
        directories = default_to_migrating(self.directories if record_dirs is None else record_dirs, replicas,
                                           ids.migrating)
        leader, leader_epoch = self.leader, self.leader_epoch
        if values["leader"] != NO_LEADER_CHANGE:
            leader, leader_epoch = values["leader"], self.leader_epoch + 1
        holder = type(self)
        return holder(replicas=replicas, isr=_or_old(values["isr"], self.isr),
                      removing_replicas=_or_old(values["removingReplicas"], self.removing_replicas),
                      adding_replicas=_or_old(values["addingReplicas"], self.adding_replicas),
                      leader=leader, leader_recovery_state=recovery, leader_epoch=leader_epoch,
                      partition_epoch=self.partition_epoch + 1, directories=directories,
                      eligible_leader_replicas=_or_old(values["eligibleLeaderReplicas"], self.eligible_leader_replicas),
                      last_known_elr=_or_old(values["lastKnownElr"], self.last_known_elr),
                      **{name: getattr(self, name) for name in _own_fields(holder)})

    @property
    def has_elr(self) -> bool:
        """An ELR or a last known ELR: what a ClearElrRecord clears."""
        return bool(self.eligible_leader_replicas or self.last_known_elr)

    def elr_cleared(self, ids: DirectoryIds[DirId]) -> Self:
        """A ClearElrRecord's effect on a partition with an ELR (``TopicsDelta`` and ``ReplicationControlManager``
        replay it so): the merge of a PartitionChangeRecord that empties both lists, so the partition epoch moves
        on."""
        return self.merge(ELR_CLEARED, ids)


ELR_CLEARED = MetadataRecord("PartitionChangeRecord", 2, {"eligibleLeaderReplicas": [], "lastKnownElr": []})

__all__ = [
    "ELR_CLEARED",
    "PRINTED_DIRECTORY_IDS",
    "RECORDED_DIRECTORY_IDS",
    "DirectoriesMismatch",
    "DirectoryIds",
    "InvalidLeaderRecoveryState",
    "InvalidRegistration",
    "PartitionRegistration",
    "default_to_migrating",
    "leader_recovery_state_of",
]
