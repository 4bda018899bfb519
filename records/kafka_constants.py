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

# ConfigResource.Type's ids (Kafka 4.4; 3.9 lacks GROUP): ``ConfigResource.Type.forId`` maps any other id to UNKNOWN
CONFIG_RESOURCE_UNKNOWN = 0  # ConfigResource.Type.UNKNOWN
CONFIG_RESOURCE_TOPIC, CONFIG_RESOURCE_BROKER = 2, 4  # ConfigResource.Type.TOPIC, BROKER (an empty name: the default)
CONFIG_RESOURCE_TYPES = (2, 4, 8, 16, 32)  # TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP

# The ACL enums' codes (Kafka 4.4; 3.9 lacks AclOperation.TWO_PHASE_COMMIT): each ``fromCode`` maps any other code
# to its UNKNOWN, code 0, which is what the image keeps (``StandardAcl.fromRecord``)
ACL_UNKNOWN = 0  # ResourceType, PatternType, AclOperation and AclPermissionType UNKNOWN
ACL_RESOURCE_TYPES = tuple(range(8))  # ResourceType: UNKNOWN, ANY, TOPIC, GROUP, CLUSTER, ... DELEGATION_TOKEN, USER
ACL_PATTERN_TYPES = tuple(range(5))  # PatternType: UNKNOWN, ANY, MATCH, LITERAL, PREFIXED
ACL_OPERATIONS = tuple(range(16))  # AclOperation: UNKNOWN, ANY, ALL, READ, ... DESCRIBE_TOKENS, TWO_PHASE_COMMIT
ACL_PERMISSION_TYPES = tuple(range(4))  # AclPermissionType: UNKNOWN, ANY, DENY, ALLOW

# ScramMechanism's types: ``ScramMechanism.fromType`` maps any other type to UNKNOWN (0)
SCRAM_UNKNOWN = 0  # ScramMechanism.UNKNOWN
SCRAM_MECHANISMS = (1, 2)  # SCRAM_SHA_256, SCRAM_SHA_512

# ProducerIdsImage.EMPTY: the next producer id before any ProducerIdsRecord
NO_PRODUCER_ID = -1

# ZkMigrationState's values (Kafka 3.9, ``ZkMigrationState.of`` refuses any other): NONE is the empty image's
ZK_MIGRATION_NONE = 0  # ZkMigrationState.NONE
ZK_MIGRATION_STATES = (0, 1, 2, 3, 4)  # NONE, MIGRATION, PRE_MIGRATION, POST_MIGRATION, ZK
# FeaturesImage's field for it: the feature_history row that holds it (no finalized feature has this name)
ZK_MIGRATION_STATE_FEATURE = "zkMigrationState"

# SecurityUtils.parseKafkaPrincipal refuses a principal that is empty or has no ':'
PRINCIPAL_FORMAT = "expected a string in format principalType:principalName but got "
