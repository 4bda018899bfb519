"""replay/query/incidents.py: the incident questions over the derived tables, through ``kraft-replay incidents``, on the
stories of tests/state_machines_support.py (one lake per run)."""

from __future__ import annotations

import json

import pytest

from lakehouse.lake import Lake
from tests.state_machines_support import (
    Story,
    _cli,
)

pytestmark = pytest.mark.spark


def test_cli_incidents_json_and_table(lake: Lake, stories: dict[str, Story]) -> None:
    k = stories["rf2-unclean"].key
    result = _cli(lake, "incidents", "--cluster-id", "rf2-unclean", "--format", "json")
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    assert [p["validFromOffset"] for p in found["offlinePeriods"]] == [k["fence_last"] - 1]
    assert found["offlinePeriods"][0]["cause"] == "fenced"
    assert [(e["offset"], e["leader"]) for e in found["uncleanElections"]] == [(k["unclean"], k["first"])]
    assert found["invalidTransitions"] == [] and found["electionDeviations"] == []
    table = _cli(lake, "incidents", "--cluster-id", "moving")
    assert table.exit_code == 0, table.output
    assert "invalid state transitions (1)" in table.stdout
    assert "ReplicaDeletionIneligible" in table.stdout and "NewReplica" in table.stdout
    ranged = _cli(lake, "incidents", "--cluster-id", "rf2-unclean", "--from", str(k["unclean"] + 1),
                  "--format", "json")
    assert json.loads(ranged.stdout)["uncleanElections"] == []
