"""The command line as users run it: real files in, exact text out, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pyspark.sql import SparkSession
from typer.testing import CliRunner

from kraft_replay.cli import app
from kraft_replay.sample import SAMPLE_DIR, sample_entries, write_sample
from records.jsonl import write_jsonl

runner = CliRunner()


def _sample_jsonl(tmp_path: Path) -> Path:
    path = tmp_path / "sample.jsonl"
    with path.open("w", encoding="utf-8") as out:
        write_jsonl(sample_entries(), out)
    return path


def test_dump_jsonl_round_trips_byte_for_byte(tmp_path: Path) -> None:
    source = _sample_jsonl(tmp_path)
    result = runner.invoke(app, ["dump", str(source), "--format", "jsonl"])
    assert result.exit_code == 0, result.output
    assert result.stdout == source.read_text(encoding="utf-8")
    # ... and the output read again gives the same bytes once more.
    again = tmp_path / "again.jsonl"
    again.write_text(result.stdout, encoding="utf-8")
    assert runner.invoke(app, ["dump", str(again)]).stdout == result.stdout


def test_dump_of_the_segment_equals_the_jsonl(tmp_path: Path) -> None:
    from_segments = runner.invoke(app, ["dump", str(SAMPLE_DIR)])
    assert from_segments.exit_code == 0
    assert from_segments.stdout == _sample_jsonl(tmp_path).read_text(encoding="utf-8")
    lines = [json.loads(line) for line in from_segments.stdout.splitlines()]
    assert lines[0] == {"offset": 0, "appendTimeMs": 1767225600000, "raftLeaderEpoch": 1, "control": True,
                        "type": "LEADER_CHANGE", "version": 0,
                        "data": {"version": 0, "leaderId": 3000, "voters": [{"voterId": 3000}],
                                 "grantingVoters": [{"voterId": 3000}]}}
    assert lines[21] == {"offset": 21, "appendTimeMs": 1767225607000, "raftLeaderEpoch": 1,
                         "batchBaseOffset": 20, "type": "PARTITION_CHANGE_RECORD", "version": 1,
                         "data": {"partitionId": 1, "topicId": "b3JkZXJzLXRvcGljLWlkAA", "isr": [3, 1],
                                  "leader": 3}}


def test_shipped_sample_is_what_the_code_writes(tmp_path: Path) -> None:
    write_sample(tmp_path)
    for name in ("meta.properties", "__cluster_metadata-0/00000000000000000000.log"):
        assert (tmp_path / name).read_bytes() == (SAMPLE_DIR / name).read_bytes(), name


def test_export_to_avro_and_dump_it_back(tmp_path: Path) -> None:
    target = tmp_path / "sample.avro"
    result = runner.invoke(app, ["export", str(SAMPLE_DIR), "--out", str(target)])
    assert result.exit_code == 0 and result.stdout == f"wrote 31 records to {target}\n"
    assert target.read_bytes()[:4] == b"Obj\x01"
    back = runner.invoke(app, ["dump", str(target)])
    assert back.stdout == _sample_jsonl(tmp_path).read_text(encoding="utf-8")


def test_dump_table(tmp_path: Path) -> None:
    result = runner.invoke(app, ["dump", str(SAMPLE_DIR), "--format", "table"])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].split()[:4] == ["OFFSET", "EPOCH", "APPEND", "TIME"]
    assert lines[1].split()[:5] == ["0", "1", "1767225600000", "LeaderChangeMessage*", "0"]
    assert lines[24].split()[:5] == ["23", "1", "1767225607000", "BrokerRegistrationChangeRecord", "0"]
    assert '"fenced":1' in lines[24]


def test_schemas_command() -> None:
    listing = runner.invoke(app, ["schemas"])
    assert listing.exit_code == 0
    assert any(line.split()[:4] == ["PartitionChangeRecord", "PARTITION_CHANGE_RECORD", "5", "0-2"]
               for line in listing.stdout.splitlines())
    one = runner.invoke(app, ["schemas", "PARTITION_CHANGE_RECORD"])
    schema = json.loads(one.stdout)
    assert schema["name"] == "PartitionChangeRecord"
    assert {f["name"]: f["default"] for f in schema["fields"]}["leader"] == -2
    v0 = json.loads(runner.invoke(app, ["schemas", "PartitionRecord", "--version", "0"]).stdout)
    assert "directories" not in {f["name"] for f in v0["fields"]}
    bad = runner.invoke(app, ["schemas", "PartitionRecord", "--version", "7"])
    assert bad.exit_code == 3 and "PartitionRecord has no version 7 (versions 0-2)" in bad.stderr


def test_bad_input_exit_code_and_message_without_traceback(tmp_path: Path) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_text('{"offset": 3, "type": "FENCE_BROKER_RECORD", "version": 0, "data": {"id": 1}}\n')
    result = subprocess.run([sys.executable, "-m", "kraft_replay.cli", "dump", str(source)],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 3
    assert result.stderr.strip() == (f"kraft-replay: {source}, line 1, offset 3: field epoch: missing: "
                                      "epoch is mandatory in FenceBrokerRecord version 0")
    assert "Traceback" not in result.stderr


def test_help_lists_commands_with_examples() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("dump", "schemas", "export", "demo"):
        assert command in result.stdout
        sub = runner.invoke(app, [command, "--help"])
        assert sub.exit_code == 0 and "Example" in sub.stdout


def test_demo_runs_the_whole_pipeline_and_is_safe_to_rerun(spark: SparkSession, tmp_path: Path) -> None:
    """The README's main job: simulated incident → segments → lake → Spark replay → answers."""
    from kraft_replay.demo import run_demo

    lines: list[str] = []
    run_demo(spark, tmp_path / "demo", lines.append)
    text = "\n".join(lines)
    assert "    174 records in 1 segment file(s)" in text
    assert "    174 records added, 0 already present" in text
    assert "broker 5 (epoch 13) fenced at offset 69" in text
    assert "topic-0-0: from offset 64 (2023-11-14T22:13:34.276Z) until offset 131" in text
    assert "topic-0-0: broker 4 elected at offset 131, previous ISR [5], leader epoch 2, recovery state 1" in text
    assert "topic-0-0 before the incident (offset 63): leader 5, leader epoch 0, ISR [5], replicas [5, 4]" in text
    assert "topic-0-0 during the incident (offset 64): leader -1, leader epoch 1, ISR [5], replicas [5, 4]" in text
    assert (tmp_path / "demo" / "lake" / "partition_history" / "_delta_log").is_dir()
    assert ("    topic-0-0: from offset 64 (2023-11-14T22:13:34.276Z) until offset 131 (2023-11-14T22:14:04.284Z, "
            "unclean election); leader 5 lost: broker 5 fenced (BrokerRegistrationChangeRecord at offset 69); no other "
            "ISR member could lead (ISR [5])") in lines
    assert "    partitions offline at once: 1 from offset 64 (2023-11-14T22:13:34.276Z)" in lines
    report = tmp_path / "demo" / "report"
    assert sorted(p.name for p in report.iterdir()) == ["broker_fencing.png", "cluster_health.png", "index.html",
                                                        "partition_timeline.png"]
    assert all((report / f"{name}.png").stat().st_size > 20_000 for name in ("broker_fencing", "cluster_health"))
    root = (tmp_path / "demo").resolve()
    assert lines[-2] == (f"Everything is under {root}: the segments in {root / 'cluster'}, the lake in "
                         f"{root / 'lake'}, the report in {root / 'report' / 'index.html'}.")
    again: list[str] = []
    run_demo(spark, tmp_path / "demo", again.append)
    assert "    0 records added, 174 already present" in again
    assert [line for line in again if "offset" in line and "replayed" not in line] == [
        line for line in lines if "offset" in line and "replayed" not in line]
