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

# The codes of the enums the image parts carry, and the names Kafka prints for them (each enum's ``id()``/``code()``
# → its name, read from kafka-clients 4.4.0; tests/test_kafka_constants.py asks the jar). A code not listed is what
# the enum's ``forId``/``fromCode``/``fromType`` call UNKNOWN, code 0: what the image keeps (``StandardAcl.fromRecord``)
UNKNOWN = "UNKNOWN"
# ConfigResource.Type (Kafka 4.4; 3.9 lacks GROUP)
CONFIG_RESOURCE_UNKNOWN = 0  # ConfigResource.Type.UNKNOWN
CONFIG_RESOURCE_TYPES = {2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS", 32: "GROUP"}
CONFIG_RESOURCE_TOPIC, CONFIG_RESOURCE_BROKER = 2, 4  # ConfigResource.Type.TOPIC, BROKER (an empty name: the default)
# The ACL enums (Kafka 4.4; 3.9 lacks AclOperation.TWO_PHASE_COMMIT)
ACL_UNKNOWN = 0  # ResourceType, PatternType, AclOperation and AclPermissionType UNKNOWN
ACL_RESOURCE_TYPES = {1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "CLUSTER", 5: "TRANSACTIONAL_ID", 6: "DELEGATION_TOKEN",
                      7: "USER"}  # org.apache.kafka.common.resource.ResourceType
PATTERN_TYPES = {1: "ANY", 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"}  # PatternType
ACL_OPERATIONS = {1: "ANY", 2: "ALL", 3: "READ", 4: "WRITE", 5: "CREATE", 6: "DELETE", 7: "ALTER", 8: "DESCRIBE",
                  9: "CLUSTER_ACTION", 10: "DESCRIBE_CONFIGS", 11: "ALTER_CONFIGS", 12: "IDEMPOTENT_WRITE",
                  13: "CREATE_TOKENS", 14: "DESCRIBE_TOKENS", 15: "TWO_PHASE_COMMIT"}  # AclOperation
ACL_PERMISSION_TYPES = {1: "ANY", 2: "DENY", 3: "ALLOW"}  # AclPermissionType
# ScramMechanism: mechanismName() by type()
SCRAM_UNKNOWN = 0  # ScramMechanism.UNKNOWN
SCRAM_MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
USER_PRINCIPAL_TYPE = "User"  # KafkaPrincipal.USER_TYPE: an ACL's principal is "User:alice"

# ProducerIdsImage.EMPTY: the next producer id before any ProducerIdsRecord
NO_PRODUCER_ID = -1

# ZkMigrationState's values (Kafka 3.9, ``ZkMigrationState.of`` refuses any other): NONE is the empty image's
ZK_MIGRATION_NONE = 0  # ZkMigrationState.NONE
ZK_MIGRATION_STATES = (0, 1, 2, 3, 4)  # NONE, MIGRATION, PRE_MIGRATION, POST_MIGRATION, ZK
# FeaturesImage's field for it: the feature_history row that holds it (no finalized feature has this name)
ZK_MIGRATION_STATE_FEATURE = "zkMigrationState"

# SecurityUtils.parseKafkaPrincipal refuses a principal that is empty or has no ':'
PRINCIPAL_FORMAT = "expected a string in format principalType:principalName but got "

# The codes the simulator writes, named (the tables above list every code Kafka knows)
CLIENT_QUOTA_USER, CLIENT_QUOTA_CLIENT_ID, CLIENT_QUOTA_IP = "user", "client-id", "ip"  # ClientQuotaEntity's types
# ResourceType.code()
RESOURCE_TYPE_TOPIC, RESOURCE_TYPE_GROUP, RESOURCE_TYPE_CLUSTER, RESOURCE_TYPE_TRANSACTIONAL_ID = 2, 3, 4, 5
PATTERN_LITERAL, PATTERN_PREFIXED = 3, 4  # PatternType.code()
OPERATION_READ, OPERATION_WRITE, OPERATION_DESCRIBE = 3, 4, 8  # AclOperation.code()
PERMISSION_DENY, PERMISSION_ALLOW = 2, 3  # AclPermissionType.code()
SCRAM_SHA_256, SCRAM_SHA_512 = 1, 2  # ScramMechanism.type()
PRODUCER_ID_BLOCK_SIZE = 1000  # ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE

# FeatureControlManager.isElrFeatureEnabled: this feature's finalized level at least ELRV_1 (KIP-966)
ELIGIBLE_LEADER_REPLICAS_VERSION = "eligible.leader.replicas.version"  # EligibleLeaderReplicasVersion.FEATURE_NAME
ELRV_1 = 1  # EligibleLeaderReplicasVersion.ELRV_1.featureLevel()
