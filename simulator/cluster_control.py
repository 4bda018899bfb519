"""Kafka's ``ClusterControlManager`` side of the simulated controller: broker registration, fencing after a
missed heartbeat, unfencing, controlled shutdown and unregistration, each with the partition changes it causes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from records.kafka_constants import FENCE, IN_CONTROLLED_SHUTDOWN, NO_LEADER, NONE, UNFENCE
from records.model import MetadataRecord, uuid_to_str
from simulator.facts import BrokerFenced, BrokerRegistered, BrokerUnfenced, BrokerUnregistered, ControlledShutdown
from simulator.model import Broker, SimulationError, record

if TYPE_CHECKING:
    import random
    from collections.abc import Iterable

    from simulator.facts import ScenarioFacts
    from simulator.model import SimConfig
    from simulator.versions import MetadataVersion


class ClusterControlManager:
    """Mixin of :class:`~simulator.controller.ControllerSimulator`: the brokers' lifecycle."""

    if TYPE_CHECKING:  # what it uses of the controller it is mixed into (for type checkers only)
        active: set[int]
        brokers: dict[int, Broker]
        config: SimConfig
        controller_incarnations: dict[int, bytes]
        facts: ScenarioFacts
        isr_index: dict[int, set[int]]
        leaderless: set[int]
        mv: MetadataVersion
        next_offset: int
        rng: random.Random

        def _commit(self, records: list[MetadataRecord], marks: dict[int, str] | None = None) -> int: ...
        def _generate_leader_and_isr_updates(self, broker_to_remove: int, broker_to_add: int, keys: Iterable[int],
                                             records: list[MetadataRecord], marks: dict[int, str]) -> None: ...
        def _latency(self) -> None: ...
        def _set_broker_state(self, broker_id: int, fenced: bool | None,
                              in_controlled_shutdown: bool | None) -> None: ...
        def _uuid(self) -> bytes: ...
        def catch_up(self, broker_id: int, limit: int | None = None) -> int: ...
        def preferred_election(self, brokers: Iterable[int] | None = None) -> int: ...
        def tick(self, ms: int) -> None: ...

    def _broker(self, broker_id: int) -> Broker:
        """The registered broker, or the refusal Kafka gives for an unknown broker id."""
        broker = self.brokers.get(broker_id)
        if broker is None:
            raise SimulationError(f"broker {broker_id} is not registered")
        return broker

    def register_broker(self, broker_id: int, rack: str | None = None, *, host: str | None = None) -> int:
        """A broker (re)starts with a new incarnation: RegisterBrokerRecord, fenced; returns its epoch.

        The broker epoch is the offset of the record (the controller's next write offset).
        """
        old = self.brokers.get(broker_id)
        if old is not None and not old.fenced:
            raise SimulationError(f"broker {broker_id} still has a live session; fence it first")
        self._latency()
        epoch = self.next_offset
        incarnation = self._uuid()
        log_dir = old.log_dir if old is not None else self._uuid()  # directory ids persist
        if rack is None and old is not None:
            rack = old.rack
        features = [{"name": "metadata.version", "minSupportedVersion": 1,
                     "maxSupportedVersion": self.mv.level}]
        rec = record("RegisterBrokerRecord", self.mv.register_broker_version, brokerId=broker_id,
                     isMigratingZkBroker=False, incarnationId=incarnation, brokerEpoch=epoch,
                     endPoints=[{"name": "PLAINTEXT", "host": host or f"broker-{broker_id}",
                                 "port": 9092, "securityProtocol": 0}],
                     features=features, rack=rack, fenced=True, inControlledShutdown=False,
                     logDirs=[log_dir])
        self._commit([rec])
        self.facts.registered.append(BrokerRegistered(epoch, broker_id, epoch, uuid_to_str(incarnation)))
        return epoch

    def _fence_record(self, broker: Broker) -> MetadataRecord:
        """BrokerRegistrationChangeRecord(FENCE) since 3.3-IV3, FenceBrokerRecord before."""
        if self.mv.registration_change_record:
            return record("BrokerRegistrationChangeRecord", 0, brokerId=broker.broker_id,
                          brokerEpoch=broker.epoch, fenced=FENCE)
        return record("FenceBrokerRecord", 0, id=broker.broker_id, epoch=broker.epoch)

    def unfence(self, broker_id: int) -> int:
        """The broker caught up: unfence record, then elections for leaderless partitions (one batch)."""
        broker = self._broker(broker_id)
        if not broker.fenced:
            raise SimulationError(f"broker {broker_id} is not fenced")
        self._latency()
        if self.mv.registration_change_record:
            first = record("BrokerRegistrationChangeRecord", 0, brokerId=broker_id, brokerEpoch=broker.epoch,
                           fenced=UNFENCE)
        else:
            first = record("UnfenceBrokerRecord", 0, id=broker_id, epoch=broker.epoch)
        records = [first]
        marks: dict[int, str] = {}
        self._generate_leader_and_isr_updates(NO_LEADER, broker_id, self.leaderless, records, marks)
        base = self._commit(records, marks)
        self.facts.unfenced.append(BrokerUnfenced(base, broker_id, broker.epoch))
        return base

    def fence(self, broker_id: int, *, reason: str = "heartbeat-timeout") -> int:
        """Fence now: partition changes removing the broker from ISRs and re-electing, then the fence
        record, in one batch. Returns the fence record's offset."""
        broker = self._broker(broker_id)
        if broker.fenced:
            raise SimulationError(f"broker {broker_id} is already fenced")
        self._latency()
        records: list[MetadataRecord] = []
        marks: dict[int, str] = {}
        self._generate_leader_and_isr_updates(broker_id, NO_LEADER, self.isr_index.get(broker_id, ()), records, marks)
        records.append(self._fence_record(broker))
        base = self._commit(records, marks)
        offset = base + len(records) - 1
        self.facts.fenced.append(BrokerFenced(offset, broker_id, broker.epoch, reason))
        return offset

    def crash(self, broker_id: int) -> int:
        """The broker stops heartbeating: fenced when broker.session.timeout.ms has passed."""
        self._broker(broker_id)
        self.tick(self.config.session_timeout_ms)
        return self.fence(broker_id)

    def controlled_shutdown(self, broker_id: int, *, complete: bool = True) -> int:
        """BrokerRegistrationChangeRecord(inControlledShutdown=1) (3.3-IV3+), then the changes moving
        leadership away and shrinking ISRs, one batch; with ``complete`` the broker is then fenced
        (the controller's SHUTDOWN_NOW). Returns the first offset of the shutdown batch."""
        broker = self._broker(broker_id)
        if broker.fenced:
            raise SimulationError(f"broker {broker_id} is fenced")
        self._latency()
        records: list[MetadataRecord] = []
        if self.mv.controlled_shutdown_state and not broker.in_controlled_shutdown:
            records.append(record("BrokerRegistrationChangeRecord", 1, brokerId=broker_id,
                                  brokerEpoch=broker.epoch, fenced=NONE,
                                  inControlledShutdown=IN_CONTROLLED_SHUTDOWN))
        else:
            self._set_broker_state(broker_id, None, True)  # older MVs: the heartbeat manager's state
        marks: dict[int, str] = {}
        self._generate_leader_and_isr_updates(broker_id, NO_LEADER, self.isr_index.get(broker_id, ()), records, marks)
        base = self._commit(records, marks)
        if base < 0:
            base = self.next_offset
        self.facts.controlled_shutdowns.append(ControlledShutdown(base, broker_id, broker.epoch))
        if complete:
            self.tick(self.rng.randint(200, 1500))
            self.fence(broker_id, reason="controlled-shutdown")
        return base

    def unregister_broker(self, broker_id: int) -> int:
        """Decommission: leave every ISR, then UnregisterBrokerRecord (one batch)."""
        broker = self._broker(broker_id)
        self._latency()
        records: list[MetadataRecord] = []
        marks: dict[int, str] = {}
        self._generate_leader_and_isr_updates(broker_id, NO_LEADER, self.isr_index.get(broker_id, ()), records, marks)
        records.append(record("UnregisterBrokerRecord", 0, brokerId=broker_id, brokerEpoch=broker.epoch))
        base = self._commit(records, marks)
        offset = base + len(records) - 1
        self.facts.unregistered.append(BrokerUnregistered(offset, broker_id, broker.epoch))
        return offset

    def restart_broker(self, broker_id: int, *, controlled: bool = True, down_ms: int = 10_000,
                       rebalance: bool = True) -> int:
        """Stop (controlled shutdown or crash), register a new incarnation, unfence, catch up and
        (optionally) move preferred leadership back. Returns the new broker epoch."""
        broker = self._broker(broker_id)
        if not broker.fenced:
            if controlled:
                self.controlled_shutdown(broker_id)
            else:
                self.crash(broker_id)
        self.tick(down_ms)
        epoch = self.register_broker(broker_id)
        self.tick(self.rng.randint(500, 2000))
        self.unfence(broker_id)
        self.catch_up(broker_id)
        if rebalance:
            self.preferred_election([broker_id])
        return epoch

    def _register_controller(self, controller_id: int) -> None:
        """``ClusterControlManager.registerController``: a RegisterControllerRecord with a new incarnation."""
        incarnation = self._uuid()
        self.controller_incarnations[controller_id] = incarnation
        features = [{"name": "metadata.version", "minSupportedVersion": 1,
                     "maxSupportedVersion": self.mv.level}]
        if self.mv.level >= 21:
            features.append({"name": "kraft.version", "minSupportedVersion": 0, "maxSupportedVersion": 1})
        self._commit([record("RegisterControllerRecord", 0, controllerId=controller_id,
                             incarnationId=incarnation, zkMigrationReady=False,
                             endPoints=[{"name": "CONTROLLER", "host": f"controller-{controller_id}",
                                         "port": 9093, "securityProtocol": 0}],
                             features=features)])

    def is_active(self, broker_id: int) -> bool:
        """``ClusterControlManager.isActive``: registered, unfenced and not in controlled shutdown."""
        return broker_id in self.active
