"""Cluster mode through Spark Connect: a real Spark Connect server started from the installed pyspark.

The server is the one Spark ships (``org.apache.spark.sql.connect.service.SparkConnectServer`` in pyspark's
``jars/spark-connect_2.13-<version>.jar``), launched with pyspark's own ``spark-submit`` on a free loopback
port. The commands run as separate processes (a Python process that holds a classic session, as the test run
does, cannot open a Connect session too) with ``--remote sc://localhost:PORT``, exactly as a user would
point them at a cluster. The lake is a local directory both sides see, as a shared filesystem or an object
store would be on a real cluster.

The server runs twice: once as pyspark ships it (no Delta: the commands fall back to delta-rs), once started
with the jars ``make setup`` fetched and Delta's SQL extension, as a cluster given ``--packages
io.delta:delta-spark_2.13:4.0.0`` would be (the commands then read and write every table through the server's
delta-spark, and type records with its spark-avro).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest
from deltalake import DeltaTable

from kraft_replay.demo import CLUSTER_ID, SCENARIO
from lakehouse.jars import SPARK_HOME, SPARK_SUBMIT, installed, missing_reason
from lakehouse.loopback import free_port, listening
from lakehouse.resident_server import CONNECT_JAR, SERVER_CLASS
from lakehouse.spark import (
    DELTA_CATALOG,
    DELTA_EXTENSION,
    DELTA_RS,
    DELTA_SPARK,
    DRIVER_GC,
    DRIVER_JAVA_OPTIONS,
    ENGINE_ENV,
    java_available,
)
from lakehouse.tables import DERIVED_TABLES
from records.jsonl import write_jsonl
from records.model import LogEntry
from replay.store.layout import OPEN
from simulator import run_scenario
from tests.conftest import REPO_ROOT
from tests.incident_lake import OPTIONS
from tests.table_rows import sorted_rows

START_TIMEOUT = 120.0


def _delta_server_conf() -> list[str]:
    """What a cluster with delta-spark is started with: the jars and Delta's SQL extension and catalog."""
    jars = installed()
    if jars is None:
        pytest.skip(f"no delta-spark for the Connect server: {missing_reason()}")
    return ["--jars", jars.spark_jars, "--conf", f"spark.sql.extensions={DELTA_EXTENSION}",
            "--conf", f"spark.sql.catalog.spark_catalog={DELTA_CATALOG}"]


@pytest.fixture(scope="module", params=[DELTA_RS, DELTA_SPARK])
def connect_server(request: pytest.FixtureRequest,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """``(sc://localhost:PORT, engine)`` of a Spark Connect server running for this module, without and with
    delta-spark; stopped afterwards."""
    engine: str = request.param
    if not CONNECT_JAR.is_file():
        pytest.skip(f"{CONNECT_JAR} is not installed: pyspark {pyspark.__version__} ships no Spark Connect server")
    if java_available() is None:
        pytest.skip("no Java 17+: the Spark Connect server is a JVM")
    delta = _delta_server_conf() if engine == DELTA_SPARK else []
    port = free_port()
    log_path = tmp_path_factory.mktemp("connect") / "server.log"
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "PYSPARK_PYTHON": sys.executable,
           "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("SPARK_REMOTE", None)
    command = [str(SPARK_SUBMIT), "--class", SERVER_CLASS, "--name", "kraft-replay-test",
               "--master", "local[2]", "--conf", f"spark.connect.grpc.binding.port={port}",
               "--conf", "spark.connect.grpc.binding.address=127.0.0.1", "--conf", "spark.driver.memory=1g",
               "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=4",
               # the collector every driver JVM kraft-replay starts runs, its resident server's too (lakehouse.spark)
               "--conf", f"{DRIVER_JAVA_OPTIONS}={DRIVER_GC}", *delta,
               "spark-internal"]
    with log_path.open("wb") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not listening(port):
            if server.poll() is not None:
                pytest.fail(f"the Spark Connect server exited with {server.returncode}:\n"
                            f"{log_path.read_text(errors='replace')[-4000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"the Spark Connect server did not listen on {port} within {START_TIMEOUT:.0f}s:\n"
                            f"{log_path.read_text(errors='replace')[-4000:]}")
            time.sleep(0.5)
        yield f"sc://localhost:{port}", engine
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)  # the server and any Python workers it started
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait(timeout=30)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("SPARK_REMOTE", None)
    env.pop(ENGINE_ENV, None)  # the engine is what the server offers
    return subprocess.run([sys.executable, "-m", "kraft_replay.cli", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=300, check=False)


def _rows(replay_output: str) -> dict[str, int]:
    """Rows per table, from the lines a replay prints after its first."""
    lines = replay_output.splitlines()[1:]
    return {line.split()[0]: int(line.split()[1].replace(",", "")) for line in lines if " rows " in line}


def _jsonl(entries: list[LogEntry], path: Path) -> Path:
    with path.open("w", encoding="utf-8") as out:
        write_jsonl(entries, out)
    return path


def test_ingest_replay_incremental_state_and_report_through_spark_connect(connect_server: tuple[str, str],
                                                                          tmp_path: Path) -> None:
    """The demo's incident in two parts: offsets 0..100, replayed in full, then the rest, replayed incrementally."""
    connect_url, engine = connect_server
    entries = list(run_scenario(SCENARIO, OPTIONS).entries())
    first = _jsonl([e for e in entries if e.offset <= 100], tmp_path / "first.jsonl")
    whole = _jsonl(entries, tmp_path / "all.jsonl")
    lake = str(tmp_path / "lake")
    remote = ("--remote", connect_url)

    ingested = _cli("ingest", str(first), "--lake", lake, "--cluster-id", CLUSTER_ID, *remote, cwd=tmp_path)
    assert ingested.returncode == 0, ingested.stderr
    assert "  records added:             101" in ingested.stdout.splitlines()
    engine_line = (f"lake engine: delta-spark 4.0.0 on Spark {pyspark.__version__}" if engine == DELTA_SPARK
                   else "lake engine: delta-rs (the Spark session has no delta-spark)")
    assert engine_line in ingested.stderr.splitlines()
    replayed = _cli("replay", "--lake", lake, *remote, cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.startswith(f"replayed {CLUSTER_ID} (offsets 0..100) from metadata_log v1 (full)")
    first_rows = _rows(replayed.stdout)

    more = _cli("ingest", str(whole), "--lake", lake, "--cluster-id", CLUSTER_ID, *remote, cwd=tmp_path)
    assert more.returncode == 0, more.stderr
    assert "  records added:             73" in more.stdout.splitlines()
    again = _cli("replay", "--lake", lake, "--incremental", *remote, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(f"replayed {CLUSTER_ID} (offsets 0..173) from metadata_log v2 (incremental)")
    rows = _rows(again.stdout)
    assert (rows["partition_history"], rows["broker_history"], rows["topic_history"]) == (28, 13, 3)
    # the increment's derived tables (refreshed from the rows it wrote, while it wrote them) are a full replay's
    full_lake = tmp_path / "full-lake"
    shutil.copytree(lake, full_lake)
    full = _cli("replay", "--lake", str(full_lake), "--full", *remote, cwd=tmp_path)
    assert full.returncode == 0, full.stderr
    for name in DERIVED_TABLES:
        incremental, whole = (DeltaTable(str(Path(root) / name)).to_pyarrow_table().to_pylist()
                              for root in (lake, full_lake))
        assert whole and sorted_rows(incremental, drop=(OPEN,)) == sorted_rows(whole, drop=(OPEN,)), name

    for offset, leader, epoch, isr in ((64, -1, 1, [5]), (131, 4, 2, [4])):
        state = _cli("state", "--lake", lake, "--offset", str(offset), "--topic", "topic-0", "--partition", "0",
                     "--format", "json", *remote, cwd=tmp_path)
        assert state.returncode == 0, state.stderr
        answer = json.loads(state.stdout)
        assert answer["offset"] == offset
        assert [(p["partitionId"], p["leader"], p["leaderEpoch"], p["isr"], p["replicas"])
                for p in answer["partitions"]] == [(0, leader, epoch, isr, [5, 4])]
    assert [(b["brokerId"], b["fenced"]) for b in answer["brokers"]] == [(1, False), (2, False), (3, False),
                                                                        (4, False), (5, True)]

    # The health series and plots: windows and aggregates over Connect, PNGs written by this process.
    report = _cli("report", "--lake", lake, "--out", str(tmp_path / "report"), *remote, cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert "  partition timeline: topic-0-0, the partition with the most leader changes (3); choose another " \
           "with --topic and --partition" in report.stdout.splitlines()
    assert (tmp_path / "report" / "cluster_health.png").stat().st_size > 20_000
    page = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    assert "    partitions offline at once: 1 from offset 64 (2023-11-14T22:13:34.276Z)" in page

    # Who committed: delta-rs, on either engine (Spark writes the files: lakehouse.lake_commit.LakeCommits).
    for name in ("metadata_log", "partition_history", "broker_history"):
        infos = [json.loads(line)["commitInfo"].get("engineInfo") or ""
                 for commit in sorted((Path(lake) / name / "_delta_log").glob("*.json"))
                 for line in commit.read_text(encoding="utf-8").splitlines() if '"commitInfo"' in line]
        assert infos, name
        assert all(info.startswith("delta-rs:") for info in infos), (name, infos)

    # Spark SQL by table name through the server: time travel to version 0, the first replay's.
    first_replay = _cli("sql", "SELECT count(*) AS n FROM partition_history VERSION AS OF 0", "--lake", lake,
                        "--format", "json", *remote, cwd=tmp_path)
    if engine == DELTA_SPARK:
        assert first_replay.returncode == 0, first_replay.stderr
        assert json.loads(first_replay.stdout) == {"n": first_rows["partition_history"]}
        assert first_rows["partition_history"] != rows["partition_history"]
    else:  # delta-rs tables are temporary views: no time travel by name, and one clear line says so
        assert first_replay.returncode != 0
        assert "Traceback" not in first_replay.stderr


def test_a_command_releases_its_connect_session(connect_server: tuple[str, str], tmp_path: Path) -> None:
    """A resident server serves command after command: each command releases its Connect session as it exits, so
    the server does not keep what the session cached (every local checkpoint of a replay) until it idles out. A
    session released is closed for good: attaching to its id again is refused."""
    connect_url, _ = connect_server
    session_id = str(uuid.uuid4())
    log = _jsonl(list(run_scenario(SCENARIO, OPTIONS).entries())[:20], tmp_path / "log.jsonl")
    ingested = _cli("ingest", str(log), "--lake", str(tmp_path / "lake"), "--cluster-id", CLUSTER_ID,
                    "--remote", f"{connect_url}/;session_id={session_id}", cwd=tmp_path)
    assert ingested.returncode == 0, ingested.stderr
    probe = ("from pyspark.sql import SparkSession\n"
             f"spark = SparkSession.builder.remote('{connect_url}/;session_id={session_id}').getOrCreate()\n"
             "try:\n    spark.range(1).collect()\n    print('still open')\n"
             "except Exception as error:\n    print(error)\n")
    attached = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                              check=False, env={k: v for k, v in os.environ.items() if k != "SPARK_REMOTE"})
    assert "SESSION_CLOSED" in attached.stdout, attached.stdout + attached.stderr
