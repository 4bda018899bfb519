"""The simulated controller's configs (simulator.configuration_control): the records a config change writes and
the values the controller's rules read."""

from __future__ import annotations

from simulator.configuration_control import MIN_ISR_KEY, UNCLEAN_KEY
from simulator.controller import ControllerSimulator
from simulator.model import RESOURCE_BROKER, RESOURCE_TOPIC, SimConfig, Topic


def written(sim: ControllerSimulator) -> list[tuple[str, dict[str, object]]]:
    return [(entry.type_name, dict(entry.record.data)) for entry in sim.entries()
            if entry.type_name in ("ConfigRecord", "ClearElrRecord")]


def test_a_topic_config_is_one_config_record() -> None:
    sim = ControllerSimulator(SimConfig())
    sim.register_broker(1)
    sim.unfence(1)
    sim.create_topic("orders", 1, 1)
    sim.entries()
    sim.set_topic_config("orders", "retention.ms", "1000")
    assert written(sim) == [("ConfigRecord", {"resourceType": RESOURCE_TOPIC, "resourceName": "orders",
                                              "name": "retention.ms", "value": "1000"})]


def test_min_isr_with_elr_adds_a_clear_elr_record() -> None:
    sim = ControllerSimulator(SimConfig(metadata_version="4.0", elr=True))
    sim.entries()
    sim.set_cluster_config(MIN_ISR_KEY, "2")
    assert written(sim) == [
        ("ConfigRecord", {"resourceType": RESOURCE_BROKER, "resourceName": "", "name": MIN_ISR_KEY, "value": "2"}),
        ("ClearElrRecord", {"topicName": ""})]
    assert sim._config_records(RESOURCE_TOPIC, "orders", MIN_ISR_KEY, "1")[1].data == {"topicName": "orders"}
    assert len(sim._config_records(RESOURCE_TOPIC, "orders", UNCLEAN_KEY, "true")) == 1


def test_min_isr_without_elr_is_the_config_record_alone() -> None:
    sim = ControllerSimulator(SimConfig(metadata_version="4.0"))
    records = sim._config_records(RESOURCE_BROKER, "", MIN_ISR_KEY, "2")
    assert [record.type_name for record in records] == ["ConfigRecord"]


def test_the_values_the_rules_read_topic_first_then_cluster_default() -> None:
    sim = ControllerSimulator(SimConfig())
    topic = Topic("orders", b"\x01" * 16)
    assert sim._min_isr(topic) == 1 and sim._unclean_enabled(topic) is False
    sim.cluster_configs.update({MIN_ISR_KEY: "2", UNCLEAN_KEY: "true"})
    assert sim._min_isr(topic) == 2 and sim._unclean_enabled(topic) is True
    topic.configs.update({MIN_ISR_KEY: "3", UNCLEAN_KEY: "false"})
    assert sim._min_isr(topic) == 3 and sim._unclean_enabled(topic) is False


def test_broker_configs_a_password_an_unknown_key_and_a_delete() -> None:
    """A broker's own configs (resource name = its id) take PASSWORD-type keys and keys Kafka does not define; a
    delete is a ConfigRecord with a null value, and a broker left without configs has none in the state."""
    sim = ControllerSimulator(SimConfig())
    sim.register_broker(1)
    sim.entries()
    password = sim.set_broker_config(1, "ssl.keystore.password", "s3cret")
    custom = sim.set_broker_config(1, "acme.audit.token", "t-1")
    assert written(sim) == [
        ("ConfigRecord", {"resourceType": RESOURCE_BROKER, "resourceName": "1", "name": "ssl.keystore.password",
                          "value": "s3cret"}),
        ("ConfigRecord", {"resourceType": RESOURCE_BROKER, "resourceName": "1", "name": "acme.audit.token",
                          "value": "t-1"})]
    assert sim.broker_configs == {"1": {"ssl.keystore.password": "s3cret", "acme.audit.token": "t-1"}}
    first_delete = sim.set_broker_config(1, "ssl.keystore.password", None)
    deleted = sim.set_broker_config(1, "acme.audit.token", None)
    assert [data["value"] for _, data in written(sim)] == [None, None]
    assert sim.broker_configs == {}
    assert [(c.offset, c.kind, c.key) for c in sim.facts.changes_of("config")] == [
        (password, "set", (RESOURCE_BROKER, "1", "ssl.keystore.password")),
        (custom, "set", (RESOURCE_BROKER, "1", "acme.audit.token")),
        (first_delete, "removed", (RESOURCE_BROKER, "1", "ssl.keystore.password")),
        (deleted, "removed", (RESOURCE_BROKER, "1", "acme.audit.token"))]


def test_a_deleted_topic_takes_its_configs_and_a_recreated_one_starts_with_none() -> None:
    sim = ControllerSimulator(SimConfig())
    sim.register_broker(1)
    sim.unfence(1)
    sim.create_topic("orders", 1, 1, {"retention.ms": "604800000"})
    sim.set_topic_config("orders", "cleanup.policy", "compact")
    assert sim.topics["orders"].configs == {"retention.ms": "604800000", "cleanup.policy": "compact"}
    sim.delete_topic("orders")
    sim.create_topic("orders", 1, 1)
    assert sim.topics["orders"].configs == {}
    sim.set_cluster_config("log.cleaner.threads", "2")
    sim.set_cluster_config("log.cleaner.threads", None)
    assert sim.cluster_configs == {}
