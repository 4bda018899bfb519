"""The resident Spark server (``kraft-replay server``): a real Spark Connect server started, reused and stopped
by the commands, as a user types them (real processes; the server directory is this test's own)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraft_replay.resident_runner import NO_RUNNER_ENV, RUNNER_FILE, RUNNER_LOG
from kraft_replay.sample import CLUSTER_ID, SAMPLE_DIR
from lakehouse.jars import installed, missing_reason
from lakehouse.loopback import listening
from lakehouse.resident_server import CONNECT_JAR, SERVER_FILE
from lakehouse.server_dir import SERVER_DIR_ENV, process_alive
from lakehouse.spark import DRIVER_GC, java_available
from simulator import ScenarioOptions, run_scenario
from tests.conftest import REPO_ROOT

# one worker runs the module in order: its tests share one server, the last one stops it
pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("resident-server")]
NOT_RUNNING = "no resident Spark server (start one with `kraft-replay server start`)"


def _cli(server_dir: Path, *args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``kraft-replay ARGS`` as a user types it (the entry point: run by the command runner once one runs)."""
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT), SERVER_DIR_ENV: str(server_dir), **env}
    for name in ("SPARK_REMOTE", "KRAFT_REPLAY_SPARK_MASTER", "KRAFT_REPLAY_ENGINE", NO_RUNNER_ENV):
        environment.pop(name, None)
    return subprocess.run([sys.executable, "-m", "kraft_replay.launcher", *args], capture_output=True, text=True,
                          env=environment, cwd=cwd, timeout=600, check=False)


@pytest.fixture(scope="module")
def server_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The server directory of a resident server started for this module (1 GiB heap), stopped afterwards."""
    if not CONNECT_JAR.is_file():
        pytest.skip(f"{CONNECT_JAR} is not installed: this pyspark ships no Spark Connect server")
    if java_available() is None:
        pytest.skip("no Java 17+: the resident server is a JVM")
    if installed() is None:
        pytest.skip(f"no delta-spark for the resident server: {missing_reason()}")
    directory = tmp_path_factory.mktemp("resident-server")
    assert _cli(directory, "server", "status", cwd=directory).stdout.strip() == NOT_RUNNING
    started = _cli(directory, "server", "start", "--driver-memory", "1g", "--no-warm-up", cwd=directory)
    assert started.returncode == 0, started.stderr
    try:
        yield directory
    finally:
        _cli(directory, "server", "stop", cwd=directory)


def _record(server_dir: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((server_dir / SERVER_FILE).read_text())
    return loaded


def test_start_again_and_status_find_the_same_server(server_dir: Path) -> None:
    record = _record(server_dir)
    port = record["port"]
    assert isinstance(port, int) and listening(port)
    assert record["url"] == f"sc://127.0.0.1:{port}"
    # the JVM itself (spark-submit execs it), with the throughput garbage collector
    assert DRIVER_GC in Path(f"/proc/{record['pid']}/cmdline").read_bytes().decode().split("\0")
    again = _cli(server_dir, "server", "start", cwd=server_dir)
    assert again.returncode == 0
    assert again.stdout.startswith(f"already running: resident Spark server sc://127.0.0.1:{port} "
                                   f"(pid {record['pid']},")
    # the command runner started beside it (tests/test_command_runner.py runs commands through one)
    runner = json.loads((server_dir / RUNNER_FILE).read_text())
    assert process_alive(runner["pid"])
    status = _cli(server_dir, "server", "status", cwd=server_dir)
    assert status.returncode == 0
    assert status.stdout.splitlines() == [
        f"running: resident Spark server sc://127.0.0.1:{port} (pid {record['pid']}, started "
        f"{record['started_at']}, log {server_dir / 'server.log'})",
        "the commands without --master or --remote use it until `kraft-replay server stop`",
        f"command runner: pid {runner['pid']}, the commands run in children of it, with everything imported "
        "(KRAFT_REPLAY_NO_RUNNER=1: in their own)"]


def test_the_commands_use_it_and_answer_as_the_jvm_free_path(server_dir: Path, tmp_path: Path) -> None:
    """ingest, replay and a Spark query go through the server, each in a child of the command runner; the JVM-free
    path reads the same answer from the tables it wrote."""
    url = _record(server_dir)["url"]
    served = (server_dir / RUNNER_LOG).read_text().count(" child ")
    uses = f"Spark: the resident server at {url} (`kraft-replay server stop` ends it)"
    lake = str(tmp_path / "lake")
    ingest = _cli(server_dir, "ingest", str(SAMPLE_DIR), "--lake", lake, cwd=tmp_path)
    assert ingest.returncode == 0, ingest.stderr
    assert uses in ingest.stderr.splitlines()
    assert "records added:             31" in ingest.stdout
    replay = _cli(server_dir, "replay", "--lake", lake, cwd=tmp_path)
    assert replay.returncode == 0, replay.stderr
    assert uses in replay.stderr.splitlines()
    assert replay.stdout.splitlines()[0].startswith(
        f"replayed {CLUSTER_ID} (offsets 0..30) from metadata_log v1 (full) ")
    question = ("state", "--lake", lake, "--offset", "20", "--topic", "orders", "--format", "json")
    through_server = _cli(server_dir, *question, cwd=tmp_path, KRAFT_REPLAY_QUERY_PATH="spark")
    assert through_server.returncode == 0, through_server.stderr
    assert uses in through_server.stderr.splitlines()
    jvm_free = _cli(server_dir, *question, cwd=tmp_path)
    assert (server_dir / RUNNER_LOG).read_text().count(" child ") == served + 4
    assert jvm_free.returncode == 0, jvm_free.stderr
    assert uses not in jvm_free.stderr
    assert through_server.stdout == jvm_free.stdout
    # offset 20: broker 2 has left orders-0's ISR (partition epoch 1); it still leads orders-1
    partitions = json.loads(through_server.stdout)["partitions"]
    assert [(p["partitionId"], p["leader"], p["partitionEpoch"], p["isr"]) for p in partitions] == [
        (0, 1, 1, [1, 3]), (1, 2, 0, [2, 3, 1]), (2, 3, 0, [3, 1, 2])]


def test_its_warm_up_replays_a_simulated_log_then_increments_of_it(server_dir: Path, tmp_path: Path) -> None:
    """What ``server start`` runs once (``kraft_replay.warm_up``), here small: a simulated cluster's first 500
    records replayed in full, then the 100 after them replayed as `replay` does (a small log whole) and the 100 after
    those as an increment, in a lake deleted afterwards."""
    url = _record(server_dir)["url"]
    small = "ScenarioOptions(brokers=3, topics=2, partitions_per_topic=3, events=10**9, seed=11)"
    script = ("import json; from kraft_replay.warm_up import warm_up; from simulator import ScenarioOptions; "
              f"done = warm_up({url!r}, {small}, records=500, rounds=1, increments=2); "
              "print(json.dumps([[summary.mode, summary.clusters] for summary in done]))")
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "TMPDIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environment,
                          cwd=tmp_path, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    cluster = run_scenario("random", ScenarioOptions(brokers=3, topics=2, partitions_per_topic=3, seed=11)).sim
    assert json.loads(done.stdout) == [["full", {cluster.cluster_id: 499}],
                                       ["full", {cluster.cluster_id: 599}],
                                       ["incremental", {cluster.cluster_id: 699}]]
    assert list(tmp_path.iterdir()) == []  # its simulated logs and its lake are gone


def test_a_server_of_other_jars_is_named_and_not_used(server_dir: Path) -> None:
    record = _record(server_dir)
    (server_dir / SERVER_FILE).write_text(json.dumps({**record, "spark_jars": "/elsewhere/delta-spark.jar"}))
    try:
        status = _cli(server_dir, "server", "status", cwd=server_dir)
    finally:
        (server_dir / SERVER_FILE).write_text(json.dumps(record))
    assert status.stdout.splitlines()[1] == ("not used: it was started with other jars than this installation's "
                                             "(`make setup` ran since); restart it (`kraft-replay server stop`, "
                                             "then start)")


def test_stop_ends_it_and_is_safe_again(server_dir: Path) -> None:
    record = _record(server_dir)
    runner = json.loads((server_dir / RUNNER_FILE).read_text())
    stopped = _cli(server_dir, "server", "stop", cwd=server_dir)
    assert stopped.stdout.startswith(f"stopped: resident Spark server {record['url']} (pid {record['pid']},")
    assert stopped.stdout.splitlines()[-1] == f"stopped: command runner pid {runner['pid']}"
    assert not process_alive(runner["pid"]) and not (server_dir / RUNNER_FILE).exists()
    port = record["port"]
    assert isinstance(port, int) and not listening(port)
    assert not (server_dir / SERVER_FILE).exists()
    pid = record["pid"]
    assert isinstance(pid, int) and not process_alive(pid)
    assert _cli(server_dir, "server", "stop", cwd=server_dir).stdout.strip() == "no resident Spark server ran"
    assert _cli(server_dir, "server", "status", cwd=server_dir).returncode == 1


def test_a_stale_record_is_removed(tmp_path: Path) -> None:
    """A record whose process is gone (a machine restarted) names no server and is cleaned up."""
    (tmp_path / SERVER_FILE).write_text(json.dumps({
        "url": "sc://127.0.0.1:1", "port": 1, "pid": 2**22 + 1, "log": "x", "started_at": "2026-01-01T00:00:00+00:00",
        "spark_version": "4.0.1", "spark_jars": ""}))
    status = _cli(tmp_path, "server", "status", cwd=tmp_path)
    assert (status.returncode, status.stdout.strip()) == (1, NOT_RUNNING)
    assert not (tmp_path / SERVER_FILE).exists()
