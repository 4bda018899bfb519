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

# The names Kafka prints for the codes its image records carry (each enum's ``id()``/``code()`` → its name, read
# from kafka-clients 4.4.0); a code Kafka does not know reads UNKNOWN, as the enums' ``forId``/``fromCode`` give.
UNKNOWN = "UNKNOWN"
CONFIG_RESOURCE_TYPES = {2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS",
                         32: "GROUP"}  # ConfigResource.Type (0 is UNKNOWN)
CONFIG_RESOURCE_TOPIC, CONFIG_RESOURCE_BROKER = 2, 4  # ConfigResource.Type.TOPIC, BROKER ("" = cluster default)
ACL_RESOURCE_TYPES = {1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "CLUSTER", 5: "TRANSACTIONAL_ID", 6: "DELEGATION_TOKEN",
                      7: "USER"}  # org.apache.kafka.common.resource.ResourceType
PATTERN_TYPES = {1: "ANY", 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"}  # PatternType
ACL_OPERATIONS = {1: "ANY", 2: "ALL", 3: "READ", 4: "WRITE", 5: "CREATE", 6: "DELETE", 7: "ALTER", 8: "DESCRIBE",
                  9: "CLUSTER_ACTION", 10: "DESCRIBE_CONFIGS", 11: "ALTER_CONFIGS", 12: "IDEMPOTENT_WRITE",
                  13: "CREATE_TOKENS", 14: "DESCRIBE_TOKENS", 15: "TWO_PHASE_COMMIT"}  # AclOperation
ACL_PERMISSION_TYPES = {1: "ANY", 2: "DENY", 3: "ALLOW"}  # AclPermissionType
SCRAM_MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}  # ScramMechanism.mechanismName() by type()
USER_PRINCIPAL_TYPE = "User"  # KafkaPrincipal.USER_TYPE: an ACL's principal is "User:alice"
QUOTA_USER, QUOTA_CLIENT_ID, QUOTA_IP = "user", "client-id", "ip"  # ClientQuotaEntity.USER, CLIENT_ID, IP
