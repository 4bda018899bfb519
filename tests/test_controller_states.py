"""replay/query/controller_states.py: the controller's states at an offset and one partition's transitions, through
``state --states`` and ``history --states``, on the stories of tests/state_machines_support.py (one lake per run)."""

from __future__ import annotations

import json

import pytest

from lakehouse.lake import Lake
from tests.state_machines_support import (
    Story,
    _cli,
)

pytestmark = pytest.mark.spark


def test_cli_state_and_history_show_the_controller_states(lake: Lake, stories: dict[str, Story]) -> None:
    k = stories["deleted"].key
    table = _cli(lake, "state", "--cluster-id", "deleted", "--offset", str(k["delete"]), "--states")
    assert table.exit_code == 0, table.output
    assert "controller states (1)" in table.stdout and "ReplicaDeletionIneligible" in table.stdout
    as_json = _cli(lake, "state", "--cluster-id", "deleted", "--offset", str(k["fence"]), "--states",
                   "--format", "json")
    assert as_json.exit_code == 0, as_json.output
    doc = json.loads(as_json.stdout)
    assert [(p["partitionId"], p["state"]) for p in doc["partitionStates"]] == [(0, "OnlinePartition")]
    assert sorted((r["brokerId"], r["state"]) for r in doc["replicaStates"]) == sorted(
        [(k["up"], "OnlineReplica"), (k["down"], "OfflineReplica")])
    history = _cli(lake, "history", "--cluster-id", "deleted", "--topic", "doomed", "--partition", "0", "--states")
    assert history.exit_code == 0, history.output
    lines = history.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("state-machine transitions"))
    # partition: 4 (created, online, offline, gone); replica up: 6; fenced replica: 9 (waits, then deleted)
    assert lines[start].startswith("state-machine transitions (19)")
    assert sum("ReplicaDeletionIneligible" in line for line in lines[start:]) == 2
