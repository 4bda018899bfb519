"""Kafka's metadata constants, each written once and named as Kafka names it, in the form the records carry them:
leader ids and recovery states as ints, directory ids as Kafka prints a ``Uuid`` (URL-safe base64, no padding)."""

from __future__ import annotations

NO_LEADER = -1  # LeaderConstants.NO_LEADER
NO_LEADER_CHANGE = -2  # LeaderConstants.NO_LEADER_CHANGE: a PartitionChangeRecord that leaves the leader as it is
NO_RECOVERY_STATE_CHANGE = -1  # LeaderRecoveryState.NO_CHANGE
RECOVERY_STATES = (0, 1)  # LeaderRecoveryState.RECOVERED, RECOVERING

# DirectoryId's reserved ids (since apache/kafka#14858, released in 3.7.0)
MIGRATING_DIR = "AAAAAAAAAAAAAAAAAAAAAA"  # DirectoryId.MIGRATING = Uuid(0, 0)
UNASSIGNED_DIR = "AAAAAAAAAAAAAAAAAAAAAQ"  # DirectoryId.UNASSIGNED = Uuid(0, 1)
LOST_DIR = "AAAAAAAAAAAAAAAAAAAAAg"  # DirectoryId.LOST = Uuid(0, 2)

# KIP-868 metadata transaction markers
BEGIN, END, ABORT = "BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord"

# PartitionRegistration's constructor refuses a registration whose directories do not match its replicas
LENGTHS = "the lengths for replicas and directories do not match"

# BrokerRegistrationChangeRecord's codes: BrokerRegistrationFencingChange and
# BrokerRegistrationInControlledShutdownChange (their ``value()``); Kafka refuses any other code
FENCE, NONE, UNFENCE = 1, 0, -1  # BrokerRegistrationFencingChange.FENCE, NONE, UNFENCE
IN_CONTROLLED_SHUTDOWN = 1  # BrokerRegistrationInControlledShutdownChange.IN_CONTROLLED_SHUTDOWN (NONE is 0)
# Their ``asBoolean()``: the value a code sets (NONE sets nothing); ``fromValue`` knows only the codes listed
FENCING_AS_BOOLEAN = {FENCE: True, UNFENCE: False}  # BrokerRegistrationFencingChange.asBoolean
FENCING_CODES = (FENCE, NONE, UNFENCE)
IN_CONTROLLED_SHUTDOWN_AS_BOOLEAN = {IN_CONTROLLED_SHUTDOWN: True}  # ...InControlledShutdownChange.asBoolean
IN_CONTROLLED_SHUTDOWN_CODES = (NONE, IN_CONTROLLED_SHUTDOWN)

# ConfigResource.Type (kafka-clients) ids; ``Type.forId`` maps any other id to UNKNOWN, so a ConfigRecord of an unknown
# resource type lands on the (UNKNOWN, name) resource
CONFIG_RESOURCE_TYPES = {"UNKNOWN": 0, "TOPIC": 2, "BROKER": 4, "BROKER_LOGGER": 8, "CLIENT_METRICS": 16, "GROUP": 32}

# ScramMechanism (kafka-clients) types; ``fromType`` maps any other type to UNKNOWN
SCRAM_MECHANISMS = {"UNKNOWN": 0, "SCRAM_SHA_256": 1, "SCRAM_SHA_512": 2}

# ZkMigrationState (Kafka 3.x kafka-metadata) values; ``of`` refuses any other. Kafka 3.9's FeaturesDelta keeps the
# state in FeaturesImage (field ``zkMigrationState``); Kafka 4.x's MetadataDelta ignores the record.
ZK_MIGRATION_STATES = {"NONE": 0, "MIGRATION": 1, "PRE_MIGRATION": 2, "POST_MIGRATION": 3, "ZK": 4}
ZK_MIGRATION_STATE = "zkMigrationState"  # FeaturesImageNode.ZK_MIGRATION_STATE: the state's name in the image
