"""A deterministic model of Kafka's KRaft controller that writes the records the real one would.

The controller decides with Kafka's rules (``PartitionChangeBuilder``, ``ReplicationControlManager``,
``ClusterControlManager``, ``ConfigurationControlManager``, ``ActivationRecordsGenerator``), each in its own
module, and then *replays its own records* to change its state (:mod:`simulator.replay`), as Kafka's
controller does, so the state can never drift from the log it wrote. Records are produced as
:class:`LogEntry` objects in a buffer that callers drain (:meth:`drain`), so a long run streams: only
cluster state is kept, never the records. This module is the controller loop: batches, time, start-up
and failover.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator

from records.kafka_constants import ABORT, BEGIN, END
from records.model import LogEntry, MetadataRecord, uuid_to_str
from records.standard_acl import StandardAcl
from records.token_information import DelegationToken
from simulator.client_control import ClientControlManagers
from simulator.cluster_control import ClusterControlManager
from simulator.configuration_control import MIN_ISR_KEY, UNCLEAN_KEY, ConfigurationControlManager
from simulator.facts import ControllerFailover, ScenarioFacts, Transaction
from simulator.model import Broker, Election, Partition, SimConfig, SimulationError, Topic, record
from simulator.partition_change_builder import PartitionChangeBuilder
from simulator.replay import ControllerReplay
from simulator.replication_control import ReplicationControlManager
from simulator.security_control import SecurityControlManagers
from simulator.versions import MetadataVersion

__all__ = ["MIN_ISR_KEY", "UNCLEAN_KEY", "ControllerSimulator", "Election", "SimConfig", "SimulationError"]


class ControllerSimulator(ClusterControlManager, ReplicationControlManager, ConfigurationControlManager,
                          ClientControlManagers, SecurityControlManagers, PartitionChangeBuilder, ControllerReplay):
    """The active controller of a KRaft quorum, driven by calls; records accumulate until drained.

    Each public operation writes what Kafka's controller writes for it, in Kafka's batches.
    ``entries()``/``drain()`` hand the written entries over and forget them.
    """

    def __init__(self, config: SimConfig | None = None, *, facts: ScenarioFacts | None = None) -> None:
        self.config = cfg = config or SimConfig()
        self.mv = MetadataVersion.parse(cfg.metadata_version)
        if cfg.elr and not self.mv.elr_supported:
            raise SimulationError(f"eligible leader replicas need metadata version 4.0 (4.0-IV1), "
                                  f"not {self.mv.name}")
        if not cfg.controller_ids:
            raise SimulationError("at least one controller id is needed")
        self.rng = random.Random(cfg.seed)
        self.facts = facts if facts is not None else ScenarioFacts(seed=cfg.seed)
        self.facts.metadata_version = self.mv.name
        self.elr = cfg.elr
        self.cluster_id = cfg.cluster_id or uuid_to_str(self._uuid())
        self.now = cfg.start_time_ms
        self.next_offset = 0
        self.raft_epoch = 0
        self.active_controller = cfg.controller_ids[0]
        self.next_noop_at = 0
        self.brokers: dict[int, Broker] = {}
        self.active: set[int] = set()  # registered, unfenced, not in controlled shutdown
        self.topics: dict[str, Topic] = {}
        self.partitions: dict[int, Partition] = {}
        self.next_partition_key = 0
        self.isr_index: dict[int, set[int]] = {}  # broker -> partitions with it in the ISR
        self.replica_index: dict[int, set[int]] = {}  # broker -> partitions with it as a replica
        self.leaderless: set[int] = set()
        self.imbalanced: set[int] = set()  # leader is not the preferred (first) replica
        self.recovering: set[int] = set()  # leaderRecoveryState RECOVERING
        self.reassigning: set[int] = set()
        self.cluster_configs: dict[str, str] = {}
        self.broker_configs: dict[str, dict[str, str]] = {}  # broker id (as ConfigRecord names it) -> configs
        self.client_quotas: dict[tuple[tuple[str, str | None], ...], dict[str, float]] = {}
        self.acls: dict[bytes, StandardAcl] = {}
        self.scram_credentials: dict[tuple[str, int], int] = {}  # (name, mechanism) -> iterations
        self.delegation_tokens: dict[str, DelegationToken] = {}
        self.next_producer_id = 0  # ProducerIdControlManager.lastProducerId
        self.controller_incarnations: dict[int, bytes] = {}
        self._by_id: dict[bytes, Topic] = {}
        self._buffer: list[LogEntry] = []
        self._open_txn: tuple[str, int] | None = None
        self._partition_change_version = self.mv.partition_record_version(self.elr)
        self._start()

    # ------------------------------------------------------------------ plumbing

    def _uuid(self) -> bytes:
        """A random Kafka Uuid, never a reserved one nor one printing with a leading '-'."""
        while True:
            raw = self.rng.getrandbits(128).to_bytes(16, "big")
            if raw[:8] != bytes(8) and not uuid_to_str(raw).startswith("-"):
                return raw

    def drain(self) -> list[LogEntry]:
        """The entries written since the last drain, in offset order; the simulator forgets them."""
        out, self._buffer = self._buffer, []
        return out

    def entries(self) -> list[LogEntry]:
        """Alias of :meth:`drain` for scripted stories."""
        return self.drain()

    def _write_batch(self, records: list[MetadataRecord]) -> int:
        """One record batch at the current time and raft epoch; returns its base offset."""
        base = self.next_offset
        epoch, now, buffer = self.raft_epoch, self.now, self._buffer
        for position, metadata_record in enumerate(records):
            buffer.append(LogEntry(base + position, metadata_record, base, epoch, now))
        self.next_offset = base + len(records)
        return base

    def _commit(self, records: list[MetadataRecord], marks: dict[int, str] | None = None) -> int:
        """Write records as one atomic batch and replay them; returns the base offset."""
        if not records:
            return -1
        base = self._write_batch(records)
        for position, metadata_record in enumerate(records):
            self._replay(metadata_record, base + position, marks.get(position) if marks else None)
        return base

    def _commit_non_atomic(self, records: list[MetadataRecord], marks: dict[int, str] | None = None) -> None:
        """A non-atomic result: as many batches as QuorumController's batch limit needs."""
        step = self.config.max_records_per_batch
        for start in range(0, len(records), step):
            chunk = records[start:start + step]
            sub = {i - start: m for i, m in (marks or {}).items() if start <= i < start + step}
            self._commit(chunk, sub)

    def _commit_large(self, name: str, records: list[MetadataRecord], *,
                      abort_after_batches: int | None = None) -> int:
        """Records that may not fit one batch: a metadata transaction when the MV has them (KIP-868)."""
        step = self.config.max_records_per_batch
        if len(records) <= step and abort_after_batches is None:
            return self._commit(records)
        if not self.mv.transactions:
            if abort_after_batches is not None:
                raise SimulationError(f"metadata version {self.mv.name} has no metadata transactions")
            return self._commit(records)  # simplification: one oversized atomic batch
        body = [record(BEGIN, 0, name=name), *records]
        chunks = [body[i:i + step] for i in range(0, len(body), step)]
        written: list[tuple[int, MetadataRecord]] = []
        begin = -1
        for index, chunk in enumerate(chunks):
            if abort_after_batches is not None and index >= abort_after_batches:
                break
            base = self._write_batch(chunk)
            begin = base if begin < 0 else begin
            written.extend((base + i, rec) for i, rec in enumerate(chunk))
        if abort_after_batches is not None:
            self._open_txn = (name, begin)
            return begin
        end = self._write_batch([record(END, 0)])
        for offset, rec in written:
            self._replay(rec, offset, None)
        self.facts.transactions.append(Transaction(name, begin, end, False))
        return begin

    def tick(self, ms: int) -> None:
        """Let ``ms`` pass; the controller writes a NoOpRecord every metadata.max.idle.interval.ms."""
        target = self.now + ms
        if self.mv.noop_records:
            interval = self.config.noop_interval_ms
            noop = [record("NoOpRecord", 0)]
            while self.next_noop_at <= target:
                self.now = self.next_noop_at
                self._write_batch(noop)
                self.next_noop_at += interval
        self.now = target

    def _latency(self) -> None:
        """A few milliseconds between requests, so append times advance like a live controller's."""
        self.tick(self.rng.randint(1, 5))

    # ------------------------------------------------------------------ start and failover

    def _leader_change(self) -> int:
        ids = self.config.controller_ids
        majority = len(ids) // 2 + 1
        leader = self.active_controller
        granting = [leader, *[c for c in ids if c != leader]][:majority]
        msg = record("LeaderChangeMessage", 0, version=0, leaderId=leader,
                     voters=[{"voterId": c} for c in ids],
                     grantingVoters=[{"voterId": c} for c in sorted(granting)])
        self.raft_epoch += 1
        return self._write_batch([msg])

    def _start(self) -> None:
        """Raft election, then the bootstrap records (ActivationRecordsGenerator for an empty log)."""
        self._leader_change()
        self.next_noop_at = self.now + self.config.noop_interval_ms
        boot: list[MetadataRecord] = []
        if self.mv.writes_metadata_version:
            boot.append(record("FeatureLevelRecord", 0, name="metadata.version", featureLevel=self.mv.level))
        if self.elr:
            boot.append(record("FeatureLevelRecord", 0, name="eligible.leader.replicas.version",
                               featureLevel=1))
        if self.mv.zk_migration_state_at_bootstrap:
            boot.append(record("ZkMigrationStateRecord", 0, zkMigrationState=0))  # NONE
        self._latency()
        if self.mv.transactions:
            name = "Bootstrap records"
            base = self._write_batch([record(BEGIN, 0, name=name), *boot,
                                      record(END, 0)])
            self.facts.transactions.append(Transaction(name, base, self.next_offset - 1, False))
        elif boot:
            self._commit(boot)
        if self.config.unclean:
            self._latency()
            self.set_cluster_config(UNCLEAN_KEY, "true")
        if self.config.min_insync_replicas != 1:
            self._latency()
            self.set_cluster_config(MIN_ISR_KEY, str(self.config.min_insync_replicas))
        if self.mv.controller_registration:
            for controller_id in self.config.controller_ids:
                self._latency()
                self._register_controller(controller_id)

    def controller_failover(self, election_ms: int = 2000) -> int:
        """The active controller dies; the next voter wins the election (raft epoch + 1).

        The new leader's LeaderChangeMessage comes first; a metadata transaction left open by the
        old leader is then aborted (AbortTransactionRecord "Controller failover"), and the restarted
        controller registers again with a new incarnation (3.7+). Returns the LeaderChangeMessage offset.
        """
        ids = self.config.controller_ids
        old = self.active_controller
        self.active_controller = ids[(ids.index(old) + 1) % len(ids)]
        self.now += election_ms  # no NoOps while there is no leader
        offset = self._leader_change()
        self.facts.failovers.append(ControllerFailover(offset, self.raft_epoch, self.active_controller))
        self.next_noop_at = self.now + self.config.noop_interval_ms
        if self._open_txn is not None:
            name, begin = self._open_txn
            self._latency()
            end = self._commit([record(ABORT, 0, reason="Controller failover")])
            self.facts.transactions.append(Transaction(name, begin, end, True))
            self._open_txn = None
        if self.mv.controller_registration and len(ids) > 1:
            self.tick(self.rng.randint(3000, 6000))  # the old controller restarts
            self._register_controller(old)
        return offset

    def stream(self, actions: Iterable[Callable[[ControllerSimulator], object]]) -> Iterator[LogEntry]:
        """Run actions one by one, yielding the entries each wrote (memory stays flat)."""
        yield from self.drain()
        for action in actions:
            action(self)
            yield from self.drain()
