"""Kafka's ``MetadataDelta.replay`` of one record, applied at once to an in-memory image: the rules of the
reference fold (``replay.reference.fold``), written once and named as Kafka names them.

A record Kafka's replay throws on is :class:`Refused` (Kafka's ``MetadataBatchLoader`` hands the exception to its
fault handler and goes on with the next record): it changes nothing and becomes a "refused" anomaly. Kafka's
constants come from ``records.kafka_constants``, a field's default (a tagged field absent from the record) from
Kafka's definitions through ``records.vocabulary``, a partition's registration and its merge from
``records.partition_registration`` (the simulated controller applies the same rule). The image's other parts
(configs, client quotas, ACLs, SCRAM, delegation tokens, producer ids) and their Deltas' rules are
``replay.reference.image_parts_delta``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from records.kafka_constants import (
    FENCING_AS_BOOLEAN,
    FENCING_CODES,
    IN_CONTROLLED_SHUTDOWN_AS_BOOLEAN,
    IN_CONTROLLED_SHUTDOWN_CODES,
    ZK_MIGRATION_STATE_FEATURE,
)
from records.model import LogEntry, MetadataRecord, RawRecord, uuid_to_str
from records.partition_registration import (
    PRINTED_DIRECTORY_IDS,
    DirectoriesMismatch,
    InvalidLeaderRecoveryState,
    has_elr,
)
from records.vocabulary import default
from replay.core.refusals import (
    BROKER_EPOCH_BACKWARDS,
    INVALID_LEADER_RECOVERY_STATE,
    PARTITION_CHANGE_DIRECTORIES_MISMATCH,
    PARTITION_DIRECTORIES_MISMATCH,
    STALE_BROKER_EPOCH,
    UNKNOWN_BROKER,
    UNKNOWN_FENCING_CHANGE,
    UNKNOWN_IN_CONTROLLED_SHUTDOWN_CHANGE,
    UNKNOWN_PARTITION_CHANGE,
    UNKNOWN_TOPIC_ELR_CLEAR,
    UNKNOWN_TOPIC_PARTITION,
    UNKNOWN_TOPIC_REMOVAL,
)
from replay.reference.image import Anomaly, Broker, Changes, Controller, Image, Partition
from replay.reference.image_parts_delta import (
    PART_REPLAYS,
    Cause,
    Refused,
    remove_topic_configs,
    zk_migration_state_of,
)


def _uuids(values: Iterable[bytes] | None) -> tuple[str, ...]:
    return tuple(uuid_to_str(value) for value in values) if values is not None else ()


def _endpoints(values: Iterable[dict[str, Any]] | None) -> tuple[tuple[str, str, int, int], ...]:
    return tuple((e["name"], e["host"], e["port"], e["securityProtocol"]) for e in values or ())


def _features(values: Iterable[dict[str, Any]] | None) -> tuple[tuple[str, int, int], ...]:
    return tuple((f["name"], f["minSupportedVersion"], f["maxSupportedVersion"]) for f in values or ())


def _value(record: MetadataRecord, name: str) -> Any:
    """A field of the record, Kafka's default when the record lacks it (a tagged field left out)."""
    return record.data.get(name, default(record.type_name, name))


@contextmanager
def refused(mismatch: str) -> Iterator[None]:
    """What Kafka's ``PartitionRegistration`` throws on (``records.partition_registration``) as a refusal, worded
    as both folds word it (``replay.core.refusals``): ``mismatch`` for directories that are not one per replica."""
    try:
        yield
    except DirectoriesMismatch:
        raise Refused(mismatch) from None
    except InvalidLeaderRecoveryState as invalid:
        raise Refused(INVALID_LEADER_RECOVERY_STATE.format(state=invalid.state)) from None


def partition_registration(image: Image, record: MetadataRecord) -> Partition:
    """``TopicsDelta.replay(PartitionRecord)``: the new registration (``PartitionRegistration(PartitionRecord)``)
    of a partition of a live topic."""
    topic_id, partition_id = uuid_to_str(record.data["topicId"]), record.data["partitionId"]
    if topic_id not in image.topics:
        raise Refused(UNKNOWN_TOPIC_PARTITION.format(topic_id=topic_id, partition_id=partition_id))
    with refused(PARTITION_DIRECTORIES_MISMATCH.format(topic_id=topic_id, partition_id=partition_id)):
        return Partition.from_record(record, PRINTED_DIRECTORY_IDS, topic_id=topic_id, partition_id=partition_id)


def merge(image: Image, record: MetadataRecord) -> Partition:
    """``TopicsDelta.replay(PartitionChangeRecord)``: ``PartitionRegistration.merge`` of a partition of a live
    topic."""
    topic_id, partition_id = uuid_to_str(record.data["topicId"]), record.data["partitionId"]
    old = image.partitions.get((topic_id, partition_id)) if topic_id in image.topics else None
    if old is None:
        raise Refused(UNKNOWN_PARTITION_CHANGE.format(topic_id=topic_id, partition_id=partition_id))
    with refused(PARTITION_CHANGE_DIRECTORIES_MISMATCH.format(topic_id=topic_id, partition_id=partition_id)):
        return old.merge(record, PRINTED_DIRECTORY_IDS)


def clear_elr(image: Image, topic_name: str) -> list[tuple[str, int]]:
    """``TopicsDelta.replay(ClearElrRecord)``: every partition of the named topic (of every topic when the name
    is empty) that has an ELR or a last known ELR gets both emptied by a ``merge``, so its partition epoch moves
    on; the others are left as they are. Returns the partitions it changed."""
    topic_ids = {topic_id for topic_id, name in image.topics.items() if not topic_name or name == topic_name}
    if topic_name and not topic_ids:
        raise Refused(UNKNOWN_TOPIC_ELR_CLEAR.format(topic_name=topic_name))
    cleared = [key for key, p in image.partitions.items() if key[0] in topic_ids and has_elr(p)]
    for key in cleared:
        image.partitions[key] = image.partitions[key].elr_cleared(PRINTED_DIRECTORY_IDS)
    return cleared


def get_broker_or_throw(image: Image, broker_id: int, epoch: int) -> Broker:
    """``ClusterDelta.getBrokerOrThrow``: the broker's registration, if ``epoch`` is its current one."""
    broker = image.brokers.get(broker_id)
    if broker is None:
        raise Refused(UNKNOWN_BROKER.format(broker_id=broker_id))
    if broker.broker_epoch != epoch:
        raise Refused(STALE_BROKER_EPOCH.format(epoch=epoch, broker_id=broker_id, current_epoch=broker.broker_epoch))
    return broker


class MetadataDelta:
    """Kafka's ``MetadataDelta.replay``, record by record, applied to the image at once; it notes what each record
    touched and the anomalies in the commit's :class:`Changes`."""

    def __init__(self, image: Image | None = None) -> None:
        self.image = image or Image()
        self.registered_epochs: dict[int, int] = {}  # last registered epoch of every broker id ever seen
        self.replays: dict[str, Callable[[MetadataRecord, Cause, Changes], None]] = {
            "TopicRecord": self._topic, "RemoveTopicRecord": self._remove_topic, "PartitionRecord": self._partition,
            "PartitionChangeRecord": self._partition_change, "ClearElrRecord": self._clear_elr,
            "RegisterBrokerRecord": self._register_broker, "FenceBrokerRecord": self._fence_broker,
            "UnfenceBrokerRecord": self._unfence_broker,
            "BrokerRegistrationChangeRecord": self._broker_registration_change,
            "UnregisterBrokerRecord": self._unregister_broker, "RegisterControllerRecord": self._register_controller,
            "UnregisterControllerRecord": self._unregister_controller, "FeatureLevelRecord": self._feature_level,
            "ZkMigrationStateRecord": self._zk_migration_state}

    def replay(self, entry: LogEntry, changes: Changes) -> None:
        """Apply one record; a record Kafka's replay throws on changes nothing and is noted as refused."""
        record = entry.record
        if isinstance(record, RawRecord):  # the fold hands over only records it can read (replay.reference.fold)
            raise TypeError(f"offset {entry.offset}: {record.type_name} could not be read: {record.reason}")
        cause = (entry.offset, record.type_name)
        try:
            replay = self.replays.get(record.type_name)
            if replay is not None:
                replay(record, cause, changes)
            elif record.type_name in PART_REPLAYS:  # the other image parts: replay.reference.image_parts_delta
                PART_REPLAYS[record.type_name](self.image, entry, cause, changes)
            # any other (NoOpRecord, ...) changes nothing of the image
        except Refused as refused:
            changes.anomalies.append(Anomaly(entry.offset, record.type_name, "refused", str(refused)))

    def _remove_partitions(self, topic_id: str, cause: Cause, changes: Changes) -> None:
        for partition_id in self.image.topic_partitions(topic_id):
            del self.image.partitions[(topic_id, partition_id)]
            changes.partitions[(topic_id, partition_id)] = cause

    def _topic(self, record: MetadataRecord, cause: Cause, changes: Changes) -> None:
        # TopicsDelta.replay(TopicRecord) starts the topic afresh: a repeated id loses its partitions.
        topic_id = uuid_to_str(record.data["topicId"])
        self._remove_partitions(topic_id, cause, changes)
        self.image.topics[topic_id] = record.data["name"]
        changes.topics[topic_id] = cause
        changes.registered_topics.add(topic_id)

    def _remove_topic(self, record: MetadataRecord, cause: Cause, changes: Changes) -> None:
        topic_id = uuid_to_str(record.data["topicId"])
        if topic_id not in self.image.topics:
            raise Refused(UNKNOWN_TOPIC_REMOVAL.format(topic_id=topic_id))
        self._remove_partitions(topic_id, cause, changes)
        remove_topic_configs(self.image, self.image.topics.pop(topic_id), cause, changes)
        changes.topics[topic_id] = cause

    def _partition(self, record: MetadataRecord, cause: Cause, changes: Changes) -> None:
        partition = partition_registration(self.image, record)
        self.image.partitions[(partition.topic_id, partition.partition_id)] = partition
        changes.partitions[(partition.topic_id, partition.partition_id)] = cause

    def _partition_change(self, record: MetadataRecord, cause: Cause, changes: Changes) -> None:
        partition = merge(self.image, record)
        self.image.partitions[(partition.topic_id, partition.partition_id)] = partition
        changes.partitions[(partition.topic_id, partition.partition_id)] = cause

    def _clear_elr(self, record: MetadataRecord, cause: Cause, changes: Changes) -> None:
        for key in clear_elr(self.image, _value(record, "topicName")):
            changes.partitions[key] = cause

    def _register_broker(self, record: MetadataRecord, cause: Cause, changes: Changes) -> None:
        broker_id, epoch = record.data["brokerId"], record.data["brokerEpoch"]
        previous = self.registered_epochs.get(broker_id)
        if previous is not None and epoch < previous:
            changes.anomalies.append(Anomaly(cause[0], cause[1], "invariant", BROKER_EPOCH_BACKWARDS.format(
                broker_id=broker_id, previous_epoch=previous, epoch=epoch)))
        self.registered_epochs[broker_id] = epoch
        self.image.brokers[broker_id] = Broker(
            broker_id=broker_id, broker_epoch=epoch, incarnation_id=uuid_to_str(record.data["incarnationId"]),
            fenced=bool(_value(record, "fenced")), in_controlled_shutdown=bool(_value(record, "inControlledShutdown")),
            rack=record.data.get("rack"), endpoints=_endpoints(_value(record, "endPoints")),
            features=_features(_value(record, "features")), log_dirs=_uuids(_value(record, "logDirs")),
            is_migrating_zk_broker=bool(_value(record, "isMigratingZkBroker")))
        changes.brokers[broker_id] = cause
        changes.registered_brokers.add(broker_id)

    def _fence_broker(self, record: MetadataRecord, cause: Cause, changes: Changes) -> None:
        self._fence(record, cause, changes, fenced=True)

    def _unfence_broker(self, record: MetadataRecord, cause: Cause, changes: Changes) -> None:
        self._fence(record, cause, changes, fenced=False)

    def _fence(self, record: MetadataRecord, cause: Cause, changes: Changes, fenced: bool) -> None:
        broker_id = record.data["id"]
        broker = get_broker_or_throw(self.image, broker_id, record.data["epoch"])
        self.image.brokers[broker_id] = replace(broker, fenced=fenced)
        changes.brokers[broker_id] = cause

    def _broker_registration_change(self, record: MetadataRecord, cause: Cause, changes: Changes) -> None:
        broker_id = record.data["brokerId"]
        broker = get_broker_or_throw(self.image, broker_id, record.data["brokerEpoch"])
        fencing, shutdown = _value(record, "fenced"), _value(record, "inControlledShutdown")
        # BrokerRegistrationFencingChange.fromValue / BrokerRegistrationInControlledShutdownChange.fromValue throw
        if fencing not in FENCING_CODES:
            raise Refused(UNKNOWN_FENCING_CHANGE.format(code=fencing))
        if shutdown not in IN_CONTROLLED_SHUTDOWN_CODES:
            raise Refused(UNKNOWN_IN_CONTROLLED_SHUTDOWN_CHANGE.format(code=shutdown))
        log_dirs = _uuids(_value(record, "logDirs")) or broker.log_dirs  # an empty list changes nothing
        self.image.brokers[broker_id] = replace(
            broker, fenced=FENCING_AS_BOOLEAN.get(fencing, broker.fenced),
            in_controlled_shutdown=IN_CONTROLLED_SHUTDOWN_AS_BOOLEAN.get(shutdown, broker.in_controlled_shutdown),
            log_dirs=log_dirs)
        changes.brokers[broker_id] = cause

    def _unregister_broker(self, record: MetadataRecord, cause: Cause, changes: Changes) -> None:
        # Kafka's ClusterDelta removes the broker unconditionally; a mismatch is worth a flag.
        broker_id, epoch = record.data["brokerId"], record.data["brokerEpoch"]
        broker = self.image.brokers.pop(broker_id, None)
        if broker is None:
            changes.anomalies.append(Anomaly(cause[0], cause[1], "invariant",
                                             UNKNOWN_BROKER.format(broker_id=broker_id)))
        elif broker.broker_epoch != epoch:
            changes.anomalies.append(Anomaly(cause[0], cause[1], "invariant", STALE_BROKER_EPOCH.format(
                epoch=epoch, broker_id=broker_id, current_epoch=broker.broker_epoch)))
        changes.brokers[broker_id] = cause

    def _register_controller(self, record: MetadataRecord, cause: Cause, changes: Changes) -> None:
        controller_id = record.data["controllerId"]
        self.image.controllers[controller_id] = Controller(
            controller_id=controller_id, incarnation_id=uuid_to_str(record.data["incarnationId"]),
            zk_migration_ready=bool(_value(record, "zkMigrationReady")),
            endpoints=_endpoints(_value(record, "endPoints")), features=_features(_value(record, "features")))
        changes.controllers[controller_id] = cause

    def _unregister_controller(self, record: MetadataRecord, cause: Cause, changes: Changes) -> None:
        # ClusterDelta removes the registration unconditionally, as it does a broker's.
        self.image.controllers.pop(record.data["controllerId"], None)
        changes.controllers[record.data["controllerId"]] = cause

    def _feature_level(self, record: MetadataRecord, cause: Cause, changes: Changes) -> None:
        name, level = record.data["name"], record.data["featureLevel"]
        if level == 0:
            self.image.features.pop(name, None)
        else:
            self.image.features[name] = level
        changes.features[name] = cause

    def _zk_migration_state(self, record: MetadataRecord, cause: Cause, changes: Changes) -> None:
        # Kafka 3.9's FeaturesDelta keeps it in FeaturesImage (NONE is the empty image's); 4.x ignores the record
        self.image.zk_migration_state = zk_migration_state_of(record.data["zkMigrationState"])
        changes.features[ZK_MIGRATION_STATE_FEATURE] = cause

