"""kraft_replay/config_commands.py: ``kraft-replay configs`` (on the audit stories' lake, tests/audit_support.py)
and the static server.properties a user passes (``--broker-config``, ``--static``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kraft_replay.config_commands import static_configs
from lakehouse.lake import Lake
from records.kafka_topic_configs import KAFKA_VERSION, MIN_IN_SYNC_REPLICAS, UNCLEAN_LEADER_ELECTION_ENABLE
from replay.query.state import QueryError
from tests.audit_support import AuditStory

UNCLEAN, MIN_ISR = UNCLEAN_LEADER_ELECTION_ENABLE, MIN_IN_SYNC_REPLICAS


def test_static_configs_from_a_file_and_pairs(tmp_path: Path) -> None:
    properties = tmp_path / "server.properties"
    properties.write_text("# the controller's\n! also a comment\n\nmin.insync.replicas = 2\nnode.id: 3000\n"
                          "unclean.leader.election.enable=false\n")
    assert static_configs(properties, [f"{UNCLEAN}=true"]) == {MIN_ISR: "2", "node.id": "3000", UNCLEAN: "true"}
    assert static_configs(None, None) == {}


def test_bad_static_configs_are_refused_clearly(tmp_path: Path) -> None:
    with pytest.raises(QueryError, match="--static takes KEY=VALUE"):
        static_configs(None, ["oops"])
    broken = tmp_path / "broken.properties"
    broken.write_text("min.insync.replicas 2\n")
    with pytest.raises(QueryError, match=r"broken.properties line 1: expected key=value"):
        static_configs(broken, None)
    with pytest.raises(QueryError, match="cannot read it"):
        static_configs(tmp_path / "missing.properties", None)


def _cli(lake: Lake, *args: str) -> Any:
    from typer.testing import CliRunner

    from kraft_replay.cli import app

    return CliRunner().invoke(app, [*args, "--lake", str(lake.root)], env={"COLUMNS": "200"})


@pytest.mark.spark
def test_cli_configs(audit_lake: Lake, audit_stories: dict[str, AuditStory], tmp_path: Path) -> None:
    key = audit_stories["unclean-default"].key
    result = _cli(audit_lake, "configs", "--topic", "t", "--offset", str(key["config"]), "--cluster-id",
                  "unclean-default", "--format", "json")
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert (answer["offset"], answer["topic"], answer["kafkaVersion"]) == (key["config"], "t", KAFKA_VERSION)
    assert answer["configs"] == [
        {"name": MIN_ISR, "value": "1", "source": "DEFAULT_CONFIG"},
        {"name": UNCLEAN, "value": "true", "source": "DYNAMIC_DEFAULT_BROKER_CONFIG"}]
    assert "not in the metadata log" in answer["note"]
    properties = tmp_path / "server.properties"
    properties.write_text("# the controller's\nmin.insync.replicas = 2\nnode.id: 3000\n")
    text = _cli(audit_lake, "configs", "--topic", "t", "--offset", str(key["config"]), "--cluster-id",
                "unclean-default", "--broker-config", str(properties))
    assert text.exit_code == 0, text.output
    lines = [line.split() for line in text.stdout.splitlines()]
    assert [MIN_ISR, "2", "STATIC_BROKER_CONFIG"] in lines
    assert [UNCLEAN, "true", "DYNAMIC_DEFAULT_BROKER_CONFIG"] in lines
    bad = _cli(audit_lake, "configs", "--topic", "t", "--offset", "3", "--cluster-id", "unclean-default",
               "--static", "oops")
    assert bad.exit_code == 2 and "--static takes KEY=VALUE" in bad.output
    unknown = _cli(audit_lake, "configs", "--topic", "nope", "--offset", "3", "--cluster-id", "unclean-default")
    assert unknown.exit_code == 2 and "no topic 'nope'" in unknown.output
