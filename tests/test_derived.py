"""replay/store/derived.py: incremental replays refresh the derived tables (state machines, election audit) as a full
replay builds them, on the stories of tests/state_machines_support.py replayed in three increments (the session
fixture ``increments`` of tests/conftest.py) and compared with the stories' full replay (``state_machine_lake``)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from pyspark.sql import SparkSession

from lakehouse.lake import Lake
from tests.state_machines_support import (
    DERIVED,
    Story,
    _rows,
)

pytestmark = pytest.mark.spark


def test_incremental_replays_refresh_the_derived_tables_as_a_full_replay_builds_them(
        spark: SparkSession, lake: Lake, increments: dict[str, Any]) -> None:
    assert [s.mode for s in increments["summaries"]] == ["full", "incremental", "incremental"]
    assert not any("rebuilt whole" in note for s in increments["summaries"] for note in s.notes)
    for name in (*DERIVED, "partition_history", "replica_history", "broker_history"):
        assert _rows(spark, increments["lake"], name) == _rows(spark, lake, name), name


def test_an_increment_explains_a_leader_loss_recorded_before_its_fence(stories: dict[str, Story],
                                                                      increments: dict[str, Any]) -> None:
    """rf1's leader is lost at fence1 - 1, the last offset of the first replay: its cause (the fence) is only
    in the second increment, which fills it in."""
    k = stories["rf1"].key
    loss = [[(e["previous_leader"], e["leader"], e["lost_leader_cause"], e["lost_leader_cause_offset"])
             for e in elections if e["offset"] == k["fence1"] - 1] for elections in increments["elections"]]
    assert loss[0] == [(k["b1"], -1, None, None)]
    assert loss[1] == loss[2] == [(k["b1"], -1, "fenced", k["fence1"])]


def test_an_increment_completes_a_deletion_that_waited_for_its_broker(stories: dict[str, Story],
                                                                      increments: dict[str, Any]) -> None:
    k = stories["deleted"].key

    def waiting(rows: list[Any]) -> list[tuple[Any, Any]]:
        return [(r["valid_from_offset"], r["valid_to_offset"]) for r in rows
                if r["broker_id"] == k["down"] and r["state"] == "ReplicaDeletionIneligible"]

    assert [waiting(rows) for rows in increments["replicas"]] == [
        [(k["delete"], None)], [(k["delete"], None)], [(k["delete"], k["back"])]]
    assert max(r["valid_from_offset"] for r in increments["replicas"][2]) == k["back"]


def test_an_increment_continues_a_replica_catching_up_across_the_checkpoint(
        stories: dict[str, Story], increments: dict[str, Any]) -> None:
    """The increments cut when c is added (NewReplica, open) and when its broker is back (OnlineReplica, open,
    still catching up): each open row keeps its start, previous state, cause and reason and only gets its end;
    the versions after the cut do not make c NewReplica again (it left that state when its broker was fenced)."""
    k = stories["catch-up"].key

    def rows(step: int) -> list[tuple[Any, ...]]:
        return [(r["state"], r["previous_state"], r["valid_from_offset"], r["valid_to_offset"], r["cause_offset"],
                 r["reason"]) for r in increments["catching_up"][step] if r["valid_from_offset"] >= k["start"]]

    c = k["c"]
    new = ("NewReplica", "NonExistentReplica", k["start"])
    offline = ("OfflineReplica", "NewReplica", k["fence_c"])
    back = ("OnlineReplica", "OfflineReplica", k["back_c"])
    assert rows(0) == [(*new, None, k["start"], "added by a reassignment")]
    assert rows(1) == [(*new, k["fence_c"], k["start"], "added by a reassignment"),
                       (*offline, k["back_c"], k["fence_c"], f"broker {c} fenced"),
                       (*back, None, k["back_c"], f"broker {c} unfenced")]
    assert rows(2) == [*rows(1)[:2], (*back, None, k["back_c"], f"broker {c} unfenced")]
    assert k["back_c"] < k["shrink"] < k["joined"]


def test_increments_keep_every_file_of_settled_derived_rows(increments: dict[str, Any]) -> None:
    """Rows that no later record can change live in files an increment never rewrites."""
    for before, after in itertools.pairwise(increments["closed"]):
        for name in DERIVED:
            assert before[name] <= after[name], f"{name}: a file of settled rows was rewritten"
    assert all(increments["closed"][-1][name] for name in DERIVED)
    assert all(increments["closed"][0][name] for name in DERIVED if name != "leaderless_periods")
