"""Kafka's ``ClientQuotaControlManager`` and ``ProducerIdControlManager`` sides of the simulated controller: the
records AlterClientQuotas and AllocateProducerIds write. Like the other managers they write and replay; the state
changes in :mod:`simulator.replay`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from records.kafka_constants import CLIENT_QUOTA_CLIENT_ID, CLIENT_QUOTA_USER, PRODUCER_ID_BLOCK_SIZE
from simulator.facts import ImageChange
from simulator.model import SimulationError, record

if TYPE_CHECKING:
    from records.model import MetadataRecord
    from simulator.facts import ScenarioFacts
    from simulator.model import Broker

# ClientQuotaControlManager builds the record's entity list from a HashMap(3) of entity types: Java iterates it in
# bucket order, "client-id" (bucket 0) before "user" (bucket 1)
ENTITY_ORDER = (CLIENT_QUOTA_CLIENT_ID, CLIENT_QUOTA_USER)
# QuotaConfigs.userConfigs() / clientConfigs(): the keys a user or client-id entity may carry
QUOTA_KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate")

QuotaEntity = tuple[tuple[str, str | None], ...]  # ((entityType, entityName), ...) in the record's order


def quota_entity(user: str | None = None, client_id: str | None = None, *, default_user: bool = False,
                 default_client_id: bool = False) -> QuotaEntity:
    """The entity as the record lists it; a default entity has a null name (``--entity-default``)."""
    names = {CLIENT_QUOTA_USER: (user, default_user), CLIENT_QUOTA_CLIENT_ID: (client_id, default_client_id)}
    entity = tuple((entity_type, names[entity_type][0]) for entity_type in ENTITY_ORDER
                   if names[entity_type][0] is not None or names[entity_type][1])
    if not entity:
        raise SimulationError("Invalid empty client quota entity")
    if any(name == "" for _, name in entity):
        raise SimulationError("Empty entity name not supported")
    return entity


class ClientControlManagers:
    """Mixin of :class:`~simulator.controller.ControllerSimulator`: client quotas and producer-id blocks."""

    if TYPE_CHECKING:  # what it uses of the controller it is mixed into (for type checkers only)
        client_quotas: dict[QuotaEntity, dict[str, float]]
        facts: ScenarioFacts
        next_producer_id: int

        def _broker(self, broker_id: int) -> Broker: ...
        def _commit(self, records: list[MetadataRecord], marks: dict[int, str] | None = None) -> int: ...
        def _latency(self) -> None: ...

    def alter_client_quota(self, entity: QuotaEntity, key: str, value: float | None) -> int:
        """AlterClientQuotas for one key of one entity: a ClientQuotaRecord when the value changes, ``remove`` when
        ``value`` is None and the key is set; nothing otherwise. Returns its offset, -1 when nothing was written."""
        if key not in QUOTA_KEYS:
            raise SimulationError(f"Invalid configuration key {key}")
        current = self.client_quotas.get(entity, {})
        if (value is None and key not in current) or (value is not None and current.get(key) == value):
            return -1
        self._latency()
        entity_data = [{"entityType": entity_type, "entityName": name} for entity_type, name in entity]
        if value is None:
            quota = record("ClientQuotaRecord", 0, entity=entity_data, key=key, remove=True)
        else:
            quota = record("ClientQuotaRecord", 0, entity=entity_data, key=key, value=float(value))
        offset = self._commit([quota])
        self.facts.image_changes.append(ImageChange(offset, "client-quota", "removed" if value is None else "set",
                                                    (entity, key), value))
        return offset

    def allocate_producer_ids(self, broker_id: int) -> int:
        """AllocateProducerIds from a broker (its transaction coordinator ran out): the next block of
        ``PRODUCER_ID_BLOCK_SIZE`` ids; the record names the broker, its epoch and the first id after the block."""
        broker = self._broker(broker_id)  # checkBrokerEpoch: a registered broker's current epoch
        self._latency()
        next_producer_id = self.next_producer_id + PRODUCER_ID_BLOCK_SIZE
        offset = self._commit([record("ProducerIdsRecord", 0, brokerId=broker_id, brokerEpoch=broker.epoch,
                                      nextProducerId=next_producer_id)])
        self.facts.image_changes.append(ImageChange(offset, "producer-ids", "allocated", broker_id, next_producer_id))
        return offset
