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

CONFIG_RESOURCE_TOPIC, CONFIG_RESOURCE_BROKER = 2, 4  # ConfigResource.Type.TOPIC, BROKER ("" = cluster default)
# FeatureControlManager.isElrFeatureEnabled: this feature's finalized level at least ELRV_1 (KIP-966)
ELIGIBLE_LEADER_REPLICAS_VERSION = "eligible.leader.replicas.version"  # EligibleLeaderReplicasVersion.FEATURE_NAME
ELRV_1 = 1  # EligibleLeaderReplicasVersion.ELRV_1.featureLevel()
