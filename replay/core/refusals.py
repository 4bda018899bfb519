"""Why a record was refused or flagged: the ``reason`` of every ``replay_anomalies`` row, written once.

The Spark fold (``replay.fold``) and the reference fold (``replay.reference``) report the same anomalies, so they
say why in the same words: each reason is a template here, which the Spark fold renders into a column
(``replay.core.refusal_columns.reason_column``) and the reference fold fills in with ``str.format``. The words are
the ones the lake's ``replay_anomalies`` table has always shown; where they quote Kafka (``LeaderRecoveryState.of``,
``ZkMigrationState.of``, ``AclsDelta``, ``SecurityUtils.parseKafkaPrincipal``, the registration's constructor) they
are Kafka's own. A list is written as its elements joined by ``LIST_SEPARATOR`` (Spark: ``F.array_join``).

No pyspark here: the reference fold imports this module and stays free of it.
"""

from __future__ import annotations

from collections.abc import Iterable

from records.kafka_constants import LENGTHS, PRINCIPAL_FORMAT

LIST_SEPARATOR = ", "

# --- Topics and partitions (TopicsDelta, PartitionRegistration) ------------------------------------------------
UNKNOWN_TOPIC_REMOVAL = "RemoveTopicRecord of unknown topic id {topic_id}"
UNKNOWN_TOPIC_ELR_CLEAR = "ClearElrRecord of unknown topic {topic_name}"
UNKNOWN_TOPIC_PARTITION = "PartitionRecord of unknown topic id {topic_id} (partition {partition_id})"
UNKNOWN_PARTITION_CHANGE = "PartitionChangeRecord of unknown partition {topic_id}-{partition_id}"
# checkDirectories, or the registration's constructor (Kafka's words: LENGTHS)
PARTITION_DIRECTORIES_MISMATCH = "PartitionRecord of {topic_id}-{partition_id}: " + LENGTHS
PARTITION_CHANGE_DIRECTORIES_MISMATCH = "PartitionChangeRecord of {topic_id}-{partition_id}: " + LENGTHS
INVALID_LEADER_RECOVERY_STATE = "Value {state} is not a valid leader recovery state"  # LeaderRecoveryState.of
# invariants of an applied partition: its replicas, ISR as joined lists
LEADER_NOT_IN_REPLICAS = "partition {topic_id}-{partition_id}: leader {leader} not in replicas [{replicas}]"
ISR_NOT_WITHIN_REPLICAS = "partition {topic_id}-{partition_id}: ISR [{isr}] not within replicas [{replicas}]"

# --- Brokers and features (ClusterDelta, FeaturesDelta) --------------------------------------------------------
UNKNOWN_BROKER = "unknown broker {broker_id}"
STALE_BROKER_EPOCH = "stale broker epoch {epoch} for broker {broker_id} (current epoch {current_epoch})"
UNKNOWN_FENCING_CHANGE = "unknown value for fenced: {code}"
UNKNOWN_IN_CONTROLLED_SHUTDOWN_CHANGE = "unknown value for inControlledShutdown: {code}"
BROKER_EPOCH_BACKWARDS = "broker {broker_id} epoch went backwards: {previous_epoch} -> {epoch}"  # an invariant
INVALID_ZK_MIGRATION_STATE = "Value {state} is not a valid Zk migration state"  # ZkMigrationState.of

# --- The image's other parts (AclsDelta, DelegationTokenDelta) --------------------------------------------------
UNKNOWN_ACL_REMOVAL = "Failed to find existing ACL with ID {acl_id} in either image or changes"
INVALID_PRINCIPAL = PRINCIPAL_FORMAT + "{principal}"  # a null principal is written "null"

# --- Transaction markers (KIP-868, MetadataBatchLoader) ---------------------------------------------------------
BEGIN_INSIDE_TRANSACTION = "BeginTransactionRecord inside an open transaction"
MARKER_WITHOUT_TRANSACTION = "{record_type} without an open transaction"


def joined(values: Iterable[object]) -> str:
    """A list as the reasons write it: ``[1, 2]`` -> ``1, 2`` (the template has the brackets)."""
    return LIST_SEPARATOR.join(str(value) for value in values)


__all__ = [
    "BEGIN_INSIDE_TRANSACTION", "BROKER_EPOCH_BACKWARDS", "INVALID_LEADER_RECOVERY_STATE", "INVALID_PRINCIPAL",
    "INVALID_ZK_MIGRATION_STATE", "ISR_NOT_WITHIN_REPLICAS", "LEADER_NOT_IN_REPLICAS", "LIST_SEPARATOR",
    "MARKER_WITHOUT_TRANSACTION", "PARTITION_CHANGE_DIRECTORIES_MISMATCH", "PARTITION_DIRECTORIES_MISMATCH",
    "STALE_BROKER_EPOCH", "UNKNOWN_ACL_REMOVAL", "UNKNOWN_BROKER", "UNKNOWN_FENCING_CHANGE",
    "UNKNOWN_IN_CONTROLLED_SHUTDOWN_CHANGE", "UNKNOWN_PARTITION_CHANGE", "UNKNOWN_TOPIC_ELR_CLEAR",
    "UNKNOWN_TOPIC_PARTITION", "UNKNOWN_TOPIC_REMOVAL", "joined",
]
