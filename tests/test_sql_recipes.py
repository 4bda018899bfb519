"""Every recipe of docs/sql-recipes.md on the demo's incident, run as written through `kraft-replay sql`.

The recipes are read from the document itself, so the document cannot drift from what the lake answers, and a
recipe added without a check here fails `test_every_recipe_is_checked`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from kraft_replay.cli import app
from tests.conftest import REPO_ROOT
from tests.incident_lake import IncidentLake, incident_lake

runner = CliRunner()
RECIPES = REPO_ROOT / "docs" / "sql-recipes.md"
Rows = list[dict[str, Any]]


def recipes() -> dict[str, list[str]]:
    """Section title (### heading) → its SQL blocks, in order: the demo's recipes, before the first ``## `` part
    (the image-changes lake's recipes after it are run by tests/test_docs_output.py)."""
    incident_part = re.split(r"^## ", RECIPES.read_text(encoding="utf-8"), flags=re.M)[0]
    sections = re.split(r"^### ", incident_part, flags=re.M)[1:]
    return {s.splitlines()[0].strip(): re.findall(r"```sql\n(.*?)```", s, flags=re.S) for s in sections}


@pytest.fixture(scope="module")
def incident(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> IncidentLake:
    return incident_lake(spark, tmp_path_factory)


def _sql(incident: IncidentLake, query: str) -> Rows:
    result = runner.invoke(app, ["sql", "--lake", incident.lake.root, "--format", "json", "--limit", "0", query])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def _pick(rows: Rows, *keys: str) -> list[tuple[Any, ...]]:
    return [tuple(row[k] for k in keys) for row in rows]


def check_leader_at_offset(blocks: list[Rows]) -> None:
    assert blocks[0] == [{"leader": -1, "leader_epoch": 1, "isr": [5], "replicas": [5, 4],
                          "eligible_leader_replicas": [], "valid_from_offset": 64,
                          "cause_type": "PartitionChangeRecord"}]


def check_leader_at_time(blocks: list[Rows]) -> None:
    assert blocks[0] == [{"as_of_offset": 144, "leader": 4, "leader_epoch": 2, "isr": [4], "replicas": [5, 4]}]


def check_epoch_jumps(blocks: list[Rows]) -> None:
    jumps, before = blocks
    assert _pick(jumps, "at_offset", "previous_epoch", "leader_epoch", "previous_leader", "leader", "previous_isr",
                 "why", "batch_base_offset") == [
        (64, 0, 1, 5, -1, [5], "leader lost: no live ISR member to elect", 64),
        (131, 1, 2, -1, 4, [5], "unclean election: the new leader was not in the ISR", 131),
        (170, 2, 3, 4, 5, [4, 5], "preferred leader election", 170)]
    assert jumps[1]["append_time"].startswith("2023-11-14T22:14:04.284")
    assert _pick(before, "offset", "record_type") == [(130, "ConfigRecord"), (131, "PartitionChangeRecord")]
    assert json.loads(before[0]["payload_json"]) == {"resourceType": 2, "resourceName": "topic-0",
                                                     "name": "unclean.leader.election.enable", "value": "true"}


def check_offline_periods(blocks: list[Rows]) -> None:
    (period,) = blocks[0]
    assert _pick([period], "topic_name", "partition_id", "offline_from", "offline_until", "lost_leader") == [
        ("topic-0", 0, 64, 131, 5)]
    assert period["from_time"].startswith("2023-11-14T22:13:34.276")
    assert period["until_time"].startswith("2023-11-14T22:14:04.284")
    assert float(period["seconds"]) == 30.008


def check_fence_cause(blocks: list[Rows]) -> None:
    assert blocks[0] == [{"topic_name": "topic-0", "partition_id": 0, "offline_at": 64, "broker": 5,
                          "broker_change_at": 69, "cause_type": "BrokerRegistrationChangeRecord", "fenced": True,
                          "in_controlled_shutdown": False}]


def check_under_replicated(blocks: list[Rows]) -> None:
    assert _pick(blocks[0], "topic_name", "partition_id", "leader", "isr", "replicas", "since") == [
        ("topic-0", 2, 4, [4], [4, 5], 65), ("topic-1", 1, 4, [4], [4, 5], 66),
        ("topic-1", 2, 1, [1], [5, 1], 67), ("topic-2", 3, 1, [1], [5, 1], 68)]


def check_fenced_brokers(blocks: list[Rows]) -> None:
    assert blocks[0] == [{"broker_id": 5, "broker_epoch": 13, "in_controlled_shutdown": False, "since": 69,
                          "cause_type": "BrokerRegistrationChangeRecord"}]


def check_fenced_replicas(blocks: list[Rows]) -> None:
    assert _pick(blocks[0], "topic_name", "partition_id", "broker_id", "is_leader", "in_isr", "since") == [
        ("topic-0", 0, 5, False, True, 69), ("topic-0", 2, 5, False, False, 69), ("topic-1", 1, 5, False, False, 69),
        ("topic-1", 2, 5, False, False, 69), ("topic-2", 3, 5, False, False, 69)]
    assert {row["cause_type"] for row in blocks[0]} == {"BrokerRegistrationChangeRecord"}


def check_anomalies(blocks: list[Rows]) -> None:
    assert blocks[0] == []


def check_unclean(blocks: list[Rows]) -> None:
    assert blocks[0] == [{"topic_name": "topic-0", "partition_id": 0, "at_offset": 131, "previous_leader": -1,
                          "leader": 4, "previous_isr": [5], "leader_epoch": 2, "leader_recovery_state": 1}]


def check_health(blocks: list[Rows]) -> None:
    assert _pick(blocks[0], "offset", "offline", "under_replicated") == [
        (37, 0, 1), (64, 1, 0), (65, 1, 1), (66, 1, 2), (67, 1, 3), (68, 1, 4), (131, 0, 5), (142, 0, 5),
        (165, 0, 4), (166, 0, 3), (167, 0, 2), (168, 0, 1), (169, 0, 0)]


CHECKS: dict[str, Callable[[list[Rows]], None]] = {
    "Who led the partition at an offset, with which ISR?": check_leader_at_offset,
    "Who led the partition at a time?": check_leader_at_time,
    "When did the leader epoch jump, and why?": check_epoch_jumps,
    "Which partitions were offline, from when to when?": check_offline_periods,
    "Which broker's fence took them offline?": check_fence_cause,
    "Which partitions were under-replicated at an offset?": check_under_replicated,
    "Which brokers were fenced at an offset?": check_fenced_brokers,
    "Which replicas sat on fenced brokers at an offset?": check_fenced_replicas,
    "Which elections were unclean?": check_unclean,
    "How many partitions were offline or under-replicated over time?": check_health,
    "What did the replay refuse or flag?": check_anomalies,
}


def test_every_recipe_is_checked() -> None:
    found = recipes()
    assert set(found) == set(CHECKS)
    assert all(found.values())


@pytest.mark.parametrize("title", list(CHECKS))
def test_recipe(title: str, incident: IncidentLake) -> None:
    blocks = [_sql(incident, query) for query in recipes()[title]]
    CHECKS[title](blocks)
