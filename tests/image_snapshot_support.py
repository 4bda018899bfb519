"""The records of a snapshot of an image, as a controller writes one (Kafka's ``MetadataImage.write``: one record
per entity, every part), for tests that lay out a log Kafka trimmed behind snapshots or hand Kafka's loader one."""

from __future__ import annotations

from typing import Any

from records.kafka_json import make_record
from records.model import MetadataRecord, uuid_from_str
from replay.reference.image import Image


def image_snapshot_records(image: Image) -> list[MetadataRecord]:
    """The records of a snapshot of ``image``, as a controller writes one (one record per entity)."""
    def endpoints(items: tuple[tuple[str, str, int, int], ...]) -> list[dict[str, Any]]:
        return [{"name": n, "host": h, "port": p, "securityProtocol": s} for n, h, p, s in items]

    def features(items: tuple[tuple[str, int, int], ...]) -> list[dict[str, Any]]:
        return [{"name": n, "minSupportedVersion": lo, "maxSupportedVersion": hi} for n, lo, hi in items]

    records = [make_record("FeatureLevelRecord", 0, name=name, featureLevel=level)
               for name, level in sorted(image.features.items())]
    records += [make_record("RegisterBrokerRecord", 3, brokerId=b.broker_id, brokerEpoch=b.broker_epoch,
                            incarnationId=uuid_from_str(b.incarnation_id), endPoints=endpoints(b.endpoints),
                            features=features(b.features), rack=b.rack, fenced=b.fenced,
                            inControlledShutdown=b.in_controlled_shutdown,
                            isMigratingZkBroker=b.is_migrating_zk_broker,
                            logDirs=[uuid_from_str(d) for d in b.log_dirs])
                for _, b in sorted(image.brokers.items())]
    records += [make_record("RegisterControllerRecord", 0, controllerId=c.controller_id,
                            incarnationId=uuid_from_str(c.incarnation_id), zkMigrationReady=c.zk_migration_ready,
                            endPoints=endpoints(c.endpoints), features=features(c.features))
                for _, c in sorted(image.controllers.items())]
    for tid, name in sorted(image.topics.items()):
        records.append(make_record("TopicRecord", 0, name=name, topicId=uuid_from_str(tid)))
        records += [make_record("PartitionRecord", 2, partitionId=p.partition_id, topicId=uuid_from_str(tid),
                                replicas=list(p.replicas), isr=list(p.isr),
                                removingReplicas=list(p.removing_replicas), addingReplicas=list(p.adding_replicas),
                                leader=p.leader, leaderRecoveryState=p.leader_recovery_state,
                                leaderEpoch=p.leader_epoch, partitionEpoch=p.partition_epoch,
                                directories=[uuid_from_str(d) for d in p.directories],
                                eligibleLeaderReplicas=list(p.eligible_leader_replicas),
                                lastKnownElr=list(p.last_known_elr))
                    for _, p in sorted(image.topic_partitions(tid).items())]
    return records + _image_part_records(image)


def _image_part_records(image: Image) -> list[MetadataRecord]:
    """The snapshot records of the image's other parts (a SCRAM credential's secrets, which the image does not
    keep, written empty)."""
    records = [make_record("ConfigRecord", 0, resourceType=rtype, resourceName=rname, name=key, value=value.value)
               for (rtype, rname), keys in sorted(image.configs.items()) for key, value in sorted(keys.items())]
    records += [make_record("ClientQuotaRecord", 0, entity=[{"entityType": t, "entityName": n} for t, n in entity],
                            key=key, value=value, remove=False)
                for entity, quotas in sorted(image.client_quotas.items(), key=repr)
                for key, value in sorted(quotas.items())]
    records += [make_record("AccessControlEntryRecord", 0, id=uuid_from_str(acl_id), resourceType=a.resource_type,
                            resourceName=a.resource_name, patternType=a.pattern_type, principal=a.principal,
                            host=a.host, operation=a.operation, permissionType=a.permission_type)
                for acl_id, a in sorted(image.acls.items())]
    records += [make_record("UserScramCredentialRecord", 0, name=name, mechanism=mechanism, salt=b"", storedKey=b"",
                            serverKey=b"", iterations=credential.iterations)
                for (name, mechanism), credential in sorted(image.scram.items())]
    records += [make_record("DelegationTokenRecord", 0, owner=t.owner, requester=t.requester,
                            renewers=list(t.renewers), issueTimestamp=t.issue_timestamp, maxTimestamp=t.max_timestamp,
                            expirationTimestamp=t.expiration_timestamp, tokenId=t.token_id)
                for _, t in sorted(image.delegation_tokens.items())]
    if image.producer_ids is not None:
        ids = image.producer_ids
        records.append(make_record("ProducerIdsRecord", 0, brokerId=ids.broker_id, brokerEpoch=ids.broker_epoch,
                                   nextProducerId=ids.next_producer_id))
    if image.zk_migration_state:
        records.append(make_record("ZkMigrationStateRecord", 0, zkMigrationState=image.zk_migration_state))
    return records
