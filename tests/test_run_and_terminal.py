"""`kraft-replay run` on a real log, and the terminal experience: progress, --quiet, --help everywhere."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import typer
from pyspark.sql import DataFrame, SparkSession
from typer.core import TyperGroup
from typer.testing import CliRunner

from kraft_replay.cli import app
from kraft_replay.run_commands import run_name
from kraft_replay.sample import SAMPLE_DIR
from lakehouse.spark import SHUFFLE_PARTITIONS
from lakehouse.spark_settings import ADAPTIVE_EXECUTION, WHOLE_STAGE_CODEGEN
from replay.query import summary as summary_queries
from tests.conftest import REPO_ROOT

runner = CliRunner()

LDI_SUMMARY = [
    "  brokers in controlled shutdown:",
    "    broker 1 (epoch 8) entered controlled shutdown at offset 4871 (2026-01-30T17:23:55.232Z) by "
    "BrokerRegistrationChangeRecord",
    "  brokers fenced:",
    "    broker 1 (epoch 8) fenced at offset 4926 (2026-01-30T17:23:55.316Z) by BrokerRegistrationChangeRecord",
    "  partitions offline (no leader):",
    "    Retry.TestTopicPatient-0: from offset 4872 (2026-01-30T17:23:55.232Z) still offline at the end of the log; "
    "leader 1 lost: broker 1 in controlled shutdown (BrokerRegistrationChangeRecord at offset 4871); no other ISR "
    "member could lead (ISR [1])",
]


@pytest.mark.real_logs
def test_run_on_the_real_ldi_poc_log_and_again(spark: SparkSession, real_log: Callable[[str], Path],
                                                tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka 3.7: broker 1 enters controlled shutdown at 4871, its 54 partitions lose their only replica as
    leader at 4872..4925 (all 54 leader -1 at 4925), and it is fenced at 4926. The summary's queries are planned as
    the replay of so small a log is (``lakehouse.spark_settings.sized_for``), the session's settings back after."""
    source = real_log("ldi-poc")
    monkeypatch.chdir(tmp_path)
    planned: list[tuple[str | None, ...]] = []
    listed = summary_queries.listed

    def planning() -> tuple[str | None, ...]:
        return tuple(map(spark.conf.get, (ADAPTIVE_EXECUTION, WHOLE_STAGE_CODEGEN, SHUFFLE_PARTITIONS)))

    def planning_seen(df: DataFrame, limit: int) -> summary_queries.Listed:
        planned.append(planning())
        return listed(df, limit)

    monkeypatch.setattr(summary_queries, "listed", planning_seen)
    before = planning()
    result = runner.invoke(app, ["run", str(source)])
    assert result.exit_code == 0, result.output
    assert planned == [("false", "false", "1")] * 5  # the five lists: no adaptive execution, no generated code
    assert planning() == before
    lines = result.stdout.splitlines()
    root = tmp_path / "kraft-run" / "ldi-poc"
    assert lines[0] == f"1/4 ingesting {source} into the Delta lake at {root / 'lake'}"
    assert "    4,929 records added, 0 already present" in lines
    assert lines[lines.index("3/4 what happened") + 1:][:len(LDI_SUMMARY)] == LDI_SUMMARY
    assert "    … and 44 more (`kraft-replay sql` lists them all, see docs/sql-recipes.md)" in lines
    assert "    partitions offline at once: 54 from offset 4925 (2026-01-30T17:23:55.232Z)" in lines
    assert "  unclean elections (leader not in the previous ISR: possible data loss):" in lines
    assert ("  Retry.TestTopicPatient-0 before the incident (offset 4871): leader 1, leader epoch 0, ISR [1], "
            "replicas [1]") in lines
    assert ("  Retry.TestTopicPatient-0 during the incident (offset 4872): leader -1, leader epoch 1, ISR [1], "
            "replicas [1]") in lines
    assert lines[-2] == (f"Everything is under {root}: the lake in {root / 'lake'}, the report in "
                         f"{root / 'report' / 'index.html'}.")
    assert lines[-1] == f"Try: kraft-replay state --lake {root / 'lake'} --offset 4872"
    assert sorted(p.name for p in (root / "report").iterdir()) == [
        "broker_fencing.png", "cluster_health.png", "index.html", "partition_timeline.png"]

    # The state the summary describes, through the lake it left behind.
    state = runner.invoke(app, ["state", "--lake", str(root / "lake"), "--offset", "4925", "--format", "json"])
    answer = json.loads(state.stdout)
    assert len(answer["partitions"]) == 54
    assert {(p["leader"], p["leaderEpoch"], tuple(p["isr"])) for p in answer["partitions"]} == {(-1, 1, (1,))}
    assert [(b["brokerId"], b["fenced"], b["inControlledShutdown"]) for b in answer["brokers"]] == [(1, False, True)]

    # Again, from the __cluster_metadata-0 directory (same folder name): nothing is added, nothing replayed.
    again = runner.invoke(app, ["run", str(source / "__cluster_metadata-0"), "--no-report", "--quiet"])
    assert again.exit_code == 0, again.output
    second = again.stdout.splitlines()
    assert "    0 records added, 4,929 already present" in second
    assert "    up to date: metadata_log v1 is already replayed (`kraft-replay replay --full` rebuilds it)" in second
    assert second[second.index("3/4 what happened") + 1:][:len(LDI_SUMMARY)] == LDI_SUMMARY
    assert "4/4 report skipped (--no-report)" in second


def test_run_names_its_folder_after_the_data_directory(tmp_path: Path) -> None:
    assert run_name(Path("/var/lib/kafka/data")) == "data"
    assert run_name(Path("/var/lib/kafka/data/__cluster_metadata-0")) == "data"
    weird = tmp_path / "my cluster (prod)"
    weird.mkdir()
    assert run_name(weird) == "my-cluster-prod"
    log = tmp_path / "metadata.jsonl"
    log.write_text("")
    assert run_name(log) == "metadata"


def test_run_errors_say_what_to_do(tmp_path: Path) -> None:
    missing = runner.invoke(app, ["run", str(tmp_path / "nope")], env={"COLUMNS": "250"})
    assert missing.exit_code == 2
    assert f"Invalid value for 'source': path '{tmp_path / 'nope'}' does not exist." in missing.output
    empty = tmp_path / "empty"
    empty.mkdir()
    result = runner.invoke(app, ["run", str(empty), "--out", str(tmp_path / "out")])
    assert result.exit_code == 3
    assert result.stdout == ""  # refused before Spark starts or anything is written
    assert result.stderr == (f"kraft-replay: {empty}: no KRaft metadata log found: expected __cluster_metadata-0/ "
                             "with NNNNNNNNNNNNNNNNNNNN.log segments or .checkpoint snapshots\n")
    assert not (tmp_path / "out").exists()


def test_usage_errors_found_while_running_exit_2_with_a_hint(tmp_path: Path) -> None:
    (tmp_path / "lake").mkdir()
    result = runner.invoke(app, ["lake", "history", "nosuch", "--lake", str(tmp_path / "lake")])
    assert result.exit_code == 2
    assert result.stderr == (f"kraft-replay: no table 'nosuch' in the lake at {tmp_path / 'lake'}; "
                             "`kraft-replay lake tables` lists the tables\n")
    follow = runner.invoke(app, ["ingest", str(SAMPLE_DIR / "meta.properties"), "--follow", "--lake",
                                 str(tmp_path / "lake")])
    assert follow.exit_code == 2
    assert "--follow needs a directory" in follow.stderr and "unexpected" not in follow.stderr


# --- progress ----------------------------------------------------------------------------------


def test_ingest_shows_progress_on_a_terminal_and_none_when_piped(tmp_path: Path) -> None:
    """Real processes: a pseudo-terminal gets the stages, a pipe (and --quiet) gets only the answer."""
    env = {**os.environ, "COLUMNS": "160", "PYTHONPATH": str(REPO_ROOT)}
    command = [sys.executable, "-m", "kraft_replay.cli", "ingest", str(SAMPLE_DIR), "--lake", str(tmp_path / "l")]
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(command, stdin=secondary, stdout=secondary, stderr=secondary, env=env, cwd=tmp_path)
    os.close(secondary)
    chunks = []
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    assert proc.wait(timeout=300) == 0
    os.close(primary)
    screen = b"".join(chunks).decode("utf-8", "replace")
    assert "\x1b[" in screen
    assert "starting Spark" in screen and "decoding and committing segments: chunk 1/1 (1 file(s)" in screen
    assert "records added:             31" in screen

    piped = subprocess.run([*command, "--quiet"], capture_output=True, text=True, env=env, cwd=tmp_path,
                           check=False, timeout=300)
    assert piped.returncode == 0, piped.stderr
    assert "\x1b[" not in piped.stdout and "\x1b[" not in piped.stderr
    assert "starting Spark" not in piped.stderr
    assert "skipped (already present): 31" in piped.stdout


# --- help ------------------------------------------------------------------------------------------


def _commands(group: TyperGroup, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    for name, command in sorted(group.commands.items()):
        found.append((*prefix, name))
        if isinstance(command, TyperGroup):
            found += _commands(command, (*prefix, name))
    return found


def test_every_command_has_help_with_examples() -> None:
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    commands = _commands(group)
    assert {("run",), ("report",), ("demo",), ("lake",), ("lake", "vacuum"), ("ingest",)} <= set(commands)
    for path in commands:
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, (path, result.output)
        assert "Example" in result.stdout, f"kraft-replay {' '.join(path)} --help shows no example"
        assert f"kraft-replay {' '.join(path)}" in result.stdout, path
    assert "--quiet" in runner.invoke(app, ["replay", "--help"]).stdout
    assert "--remote" in runner.invoke(app, ["ingest", "--help"]).stdout
