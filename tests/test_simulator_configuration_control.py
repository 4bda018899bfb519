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
