"""Commands say once which engine they use (delta-spark or delta-rs), fall back to delta-rs without jars, and print
no JVM start-up noise: each run as its own process, as a user runs it (no Spark session in the test process, so this
module runs beside the session's tests)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from lakehouse.spark import DELTA_SPARK
from lakehouse.tables import METADATA_LOG
from tests.test_delta_spark_engine import DELTA_SPARK_ENGINE
from tests.test_lake_support import CLUSTER, simulated, write_jsonl_file


def _command(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kraft_replay.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **env}, cwd=cwd, timeout=600, check=False)


def test_commands_name_their_engine_once_fall_back_without_jars_and_print_no_jvm_noise(tmp_path: Path) -> None:
    source = write_jsonl_file(tmp_path / "a.jsonl", simulated()[:120])
    lake = str(tmp_path / "lake")
    default = _command(["ingest", str(source), "--lake", lake, "--cluster-id", CLUSTER], {}, tmp_path)
    assert default.returncode == 0, default.stderr
    assert default.stderr.count("lake engine: delta-spark 4.0.0") == 1, default.stderr
    assert "incubator" not in default.stderr and "Traceback" not in default.stderr

    more = write_jsonl_file(tmp_path / "b.jsonl", simulated()[:160])
    offline = _command(["ingest", str(more), "--lake", lake, "--cluster-id", CLUSTER],
                       {"KRAFT_REPLAY_JARS": str(tmp_path / "no-jars")}, tmp_path)
    assert offline.returncode == 0, offline.stderr
    assert "  records added:             40" in offline.stdout.splitlines()
    assert offline.stderr.count("lake engine: delta-rs (delta-spark/spark-avro jars not found in") == 1
    assert "incubator" not in offline.stderr and "Traceback" not in offline.stderr
    commits = [json.loads(line).get("commitInfo") for line in
               sorted((Path(lake) / METADATA_LOG / "_delta_log").glob("*.json"))[-1].read_text().splitlines()]
    engines = [c.get("engineInfo") or c.get("clientVersion") or "" for c in commits if c]
    assert engines and not any(DELTA_SPARK_ENGINE in e for e in engines), engines

    forced = _command(["state", "--lake", lake, "--offset", "10", "--format", "json"],
                      {"KRAFT_REPLAY_ENGINE": DELTA_SPARK, "KRAFT_REPLAY_JARS": str(tmp_path / "no-jars")}, tmp_path)
    assert forced.returncode != 0
    lines = [line for line in forced.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "jars not found" in lines[0] and "Traceback" not in forced.stderr, forced.stderr

    heap = _command(["replay", "--lake", lake], {"KRAFT_REPLAY_DRIVER_MEMORY": "lots"}, tmp_path)
    assert heap.returncode != 0
    lines = [line for line in heap.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "KRAFT_REPLAY_DRIVER_MEMORY='lots'" in lines[0], heap.stderr
    assert "Traceback" not in heap.stderr
