"""The rules of the image's other parts (replay/reference/image_parts_delta.py) as the reference fold applies them,
record by record: Kafka's ConfigurationsDelta, ClientQuotasDelta, AclsDelta, ScramDelta, DelegationTokenDelta,
ProducerIdsDelta and 3.9's ZkMigrationStateRecord. tests/test_kafka_referee.py folds the same log with Kafka."""

from __future__ import annotations

from records.model import LogEntry
from records.standard_acl import StandardAcl
from replay.reference.fold import image_at, reference_histories
from replay.reference.image import Changes
from replay.reference.image_parts_delta import (
    ConfigValue,
    DelegationToken,
    ProducerIds,
    Refused,
    ScramCredential,
    kafka_principal,
    zk_migration_state_of,
)
from replay.reference.metadata_delta import MetadataDelta
from tests.reference_fold_support import (
    ACL1,
    ACL1S,
    ACL2S,
    ACL3S,
    BROKER_CONFIG,
    SHA256,
    SHA512,
    TOPIC_CONFIG,
    acl,
    anomalies,
    config,
    entries,
    image_parts_log,
    marker,
    quota,
    remove_acl,
    scram,
    topic,
    zk_migration,
)

LOG = image_parts_log()


def test_configs_set_overwrite_delete_and_the_cluster_default() -> None:
    at_4 = image_at(LOG, 4).configs
    assert at_4 == {(TOPIC_CONFIG, "orders"): {"retention.ms": ConfigValue("604800000", None),
                                               "cleanup.policy": ConfigValue("compact", None)},
                    (BROKER_CONFIG, ""): {"min.insync.replicas": ConfigValue("2", None)},
                    (BROKER_CONFIG, "1"): {"log.retention.ms": ConfigValue("1000", None)}}
    at_7 = image_at(LOG, 7).configs
    assert at_7[(TOPIC_CONFIG, "orders")]["retention.ms"] == ConfigValue("86400000", None)
    assert (BROKER_CONFIG, "1") not in at_7  # its last key deleted: the resource is gone
    assert at_7[(0, "r")] == {"x": ConfigValue("y", None)}  # ConfigResource.Type.forId(99): UNKNOWN


def test_remove_topic_deletes_the_configs_of_its_name_and_a_recreated_topic_starts_with_none() -> None:
    before, after, recreated = (image_at(LOG, offset).configs for offset in (29, 30, 32))
    assert set(before[(TOPIC_CONFIG, "orders")]) == {"retention.ms", "cleanup.policy"}
    assert (TOPIC_CONFIG, "orders") not in after and (BROKER_CONFIG, "") in after
    assert recreated[(TOPIC_CONFIG, "orders")] == {"retention.ms": ConfigValue("1", None)}


def test_deleting_an_absent_key_changes_nothing_and_creates_no_resource() -> None:
    image = image_at(entries(config("retention.ms", None)), 0)
    assert image.configs == {}


def test_client_quotas_entity_is_the_set_of_its_parts_and_an_emptied_entity_disappears() -> None:
    alice = (("client-id", None), ("user", "alice"))
    assert image_at(LOG, 9).client_quotas == {alice: {"producer_byte_rate": 1024.0},
                                              (("user", None),): {"consumer_byte_rate": 2048.0}}
    # the same entity, its parts in another order: removed, and the entity with it
    assert image_at(LOG, 10).client_quotas == {(("user", None),): {"consumer_byte_rate": 2048.0}}


def test_a_repeated_entity_type_keeps_its_last_name() -> None:
    record = quota({"user": "alice"}, "request_percentage", 50.0)
    record.data["entity"].append({"entityType": "user", "entityName": "bob"})
    assert image_at(entries(record), 0).client_quotas == {(("user", "bob"),): {"request_percentage": 50.0}}


def test_acls_upsert_by_id_remove_and_unknown_codes() -> None:
    assert image_at(LOG, 12).acls[ACL2S] == StandardAcl(3, "g", 4, "User:bob", "*", 3, 3)
    assert image_at(LOG, 13).acls[ACL1S] == StandardAcl(2, "orders", 3, "User:alice", "*", 3, 3)  # now READ
    assert set(image_at(LOG, 15).acls) == {ACL1S}
    assert image_at(LOG, 16).acls[ACL3S] == StandardAcl(2, "orders", 3, "User:alice", "*", 0, 0)  # UNKNOWN codes


def test_removing_an_absent_acl_is_refused_with_kafkas_message() -> None:
    refused = anomalies(reference_histories(LOG, "c1"), "refused")
    assert [(a["offset"], a["record_type"], a["reason"]) for a in refused] == [
        (15, "RemoveAccessControlEntryRecord",
         f"Failed to find existing ACL with ID {ACL2S} in either image or changes"),
        (26, "DelegationTokenRecord",
         "expected a string in format principalType:principalName but got alice")]


def test_an_acl_added_and_removed_in_one_transaction_is_no_refusal() -> None:
    """Kafka's AclsDelta drops an ACL added in the same delta; record by record it is in the image: the same."""
    log = entries(topic(), marker("BeginTransactionRecord"), acl(ACL1), remove_acl(ACL1),
                  marker("EndTransactionRecord"))
    assert not anomalies(reference_histories(log, "c1"), "refused")
    assert image_at(log, 4).acls == {}


def test_scram_per_mechanism_removal_and_unknown_mechanism() -> None:
    assert image_at(LOG, 18).scram == {("alice", SHA256): ScramCredential(4096, None),
                                       ("alice", SHA512): ScramCredential(8192, None)}
    assert image_at(LOG, 20).scram == {("alice", SHA512): ScramCredential(8192, None)}  # bob: no error
    assert image_at(LOG, 21).scram[("carol", 0)] == ScramCredential(1000, None)  # fromType(7): UNKNOWN


def test_secret_fingerprints_are_kept_beside_the_redacted_values() -> None:
    redacted = [LogEntry(offset=0, record=config("ssl.key.password", "(redacted)"), secret_fingerprint="f00d"),
                LogEntry(offset=1, record=scram("alice", SHA256, 4096), secret_fingerprint="beef")]
    image = image_at(redacted, 1)
    assert image.configs[(TOPIC_CONFIG, "orders")]["ssl.key.password"] == ConfigValue("(redacted)", "f00d")
    assert image.scram[("alice", SHA256)] == ScramCredential(4096, "beef")


def test_delegation_tokens_upsert_remove_and_principals() -> None:
    assert image_at(LOG, 23).delegation_tokens == {
        "tok1": DelegationToken("tok1", "User:alice", "User:alice", ("User:bob",), 1_000, 9_000, 7_000)}
    assert set(image_at(LOG, 26).delegation_tokens) == {"tok1"}  # tok2 removed, tok3 refused
    assert kafka_principal("User:") == "User:" and kafka_principal(":x") == ":x"
    for bad in ("", "alice"):
        try:
            kafka_principal(bad)
        except Refused as refused:
            assert str(refused) == f"expected a string in format principalType:principalName but got {bad}"
        else:
            raise AssertionError(f"{bad!r} is no principal")


def test_producer_ids_are_the_last_block() -> None:
    assert image_at(LOG, 26).producer_ids is None  # ProducerIdsImage.EMPTY: -1
    assert image_at(LOG, 27).producer_ids == ProducerIds(1000, 1, 5)
    assert image_at(LOG, 28).producer_ids == ProducerIds(2000, 2, 7)


def test_zk_migration_state_as_kafka_39_keeps_it() -> None:
    assert image_at(LOG, 28).zk_migration_state == 0 and image_at(LOG, 29).zk_migration_state == 3
    assert zk_migration_state_of(4) == 4
    delta, changes = MetadataDelta(), Changes()
    delta.replay(LogEntry(offset=5, record=zk_migration(5)), changes)
    assert delta.image.zk_migration_state == 0
    assert [(a.offset, a.kind, a.reason) for a in changes.anomalies] == [
        (5, "refused", "Value 5 is not a valid Zk migration state")]


def test_image_copy_is_independent() -> None:
    image = image_at(LOG, 9)
    copy = image.copy()
    copy.configs[(TOPIC_CONFIG, "orders")]["retention.ms"] = ConfigValue("1", None)
    copy.client_quotas[(("user", None),)]["x"] = 1.0
    assert image.configs[(TOPIC_CONFIG, "orders")]["retention.ms"] == ConfigValue("86400000", None)
    assert "x" not in image.client_quotas[(("user", None),)]
    assert copy.acls == image.acls and copy.producer_ids == image.producer_ids


def test_refused_records_change_nothing() -> None:
    before = image_at(LOG, 14)
    after = image_at(LOG, 15)
    assert after.acls == before.acls and after.configs == before.configs
    assert image_at(LOG, 25).delegation_tokens == image_at(LOG, 26).delegation_tokens
