"""Cluster mode on a real Spark standalone cluster: a master and two workers started from the installed pyspark.

The cluster is Spark's own (``org.apache.spark.deploy.master.Master`` and ``...deploy.worker.Worker`` through
pyspark's ``bin/spark-class``), on loopback ports, each worker with one core and 1 GiB. The commands run as
separate processes with ``--master spark://127.0.0.1:PORT``, exactly as a user would run them against a cluster:
each is one Spark application whose executors are JVMs the workers launch (``CoarseGrainedExecutorBackend``), with
their own Python workers. Nothing is shared with the driver but the lake (a local directory both sides see, as a
shared filesystem or an object store would be) and, for the executor-side decode, the Kafka files at the same path.

The settings a user would give a cluster live in a ``SPARK_CONF_DIR`` of the test's own (``spark-defaults.conf``):
small executors, and Delta's snapshot state in 2 partitions instead of 50 (a lake this small otherwise spends most
of each command scheduling empty tasks).

What the test asserts besides the replayed values: every command was a finished application of the master, every
application had an executor JVM (its own process id) on each worker that ran tasks, and the executor-side decode
ran in the executors' Python workers: the decoding ingest's Spark event log shows its ``MapInArrow`` tasks ending on
the application's executors (never the driver), and on Linux the ``pyspark.daemon`` processes seen under the executor
JVMs during that ingest run this interpreter (``PYSPARK_PYTHON`` reaches them).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyspark
import pytest

from kraft_replay.demo import CLUSTER_ID, SCENARIO
from lakehouse.jars import SPARK_HOME
from lakehouse.loopback import free_port, listening
from lakehouse.spark import java_available
from simulator import run_scenario
from tests.conftest import REPO_ROOT
from tests.incident_lake import OPTIONS
from tests.kafka_cluster import SHORT_LIVED_JVM
from tests.test_lake_support import write_jsonl_file, write_log_dir

pytestmark = pytest.mark.cluster

SPARK_CLASS = SPARK_HOME / "bin" / "spark-class"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
WORKERS = 2
START_TIMEOUT = 180.0
COMMAND_TIMEOUT = 900.0  # one command; a loaded 2-core machine makes a replay take minutes
# What the applications get (a user would put the same in their cluster's spark-defaults.conf).
SPARK_DEFAULTS = {
    "spark.executor.memory": "512m",
    "spark.executor.cores": "1",
    "spark.cores.max": str(WORKERS),
    # executors that live for one short command each, run as the test's Kafka nodes are
    "spark.executor.extraJavaOptions": " ".join(SHORT_LIVED_JVM),
}
# `python -m tests.executor_decode_cli`: the CLI with segment inputs decoded by the executors at any size.
EXECUTOR_DECODE_CLI = "tests.executor_decode_cli"


# --- processes ------------------------------------------------------------------------------------


def _processes() -> dict[int, tuple[int, list[str]]]:
    """pid -> (parent pid, command line) of every process, from /proc (empty where there is none)."""
    table: dict[int, tuple[int, list[str]]] = {}
    proc = Path("/proc")
    if not proc.is_dir():
        return table
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])  # after "pid (comm) state"
        table[int(entry.name)] = (parent, [a.decode(errors="replace") for a in argv if a])
    return table


def _descendants(roots: list[int]) -> set[int]:
    table = _processes()
    found: set[int] = set()
    frontier = set(roots)
    while frontier:
        children = {pid for pid, (parent, _) in table.items() if parent in frontier} - found
        found |= children
        frontier = children
    return found


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM each process group (a worker kills its executors), wait, then SIGKILL whatever is left, including
    the executors' Python daemons (``pyspark.daemon`` moves itself into a process group of its own)."""
    live = [p for p in processes if p.poll() is None]
    stragglers = _descendants([p.pid for p in live])
    for process in live:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    for process in live:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
    for pid in stragglers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


# --- the cluster ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExecutorRun:
    """One executor of one application, from its directory in a worker's work dir."""

    worker: int
    executor_id: str
    pid: int | None  # of its JVM ("Started daemon with process name: PID@host")
    command: str  # the java command line the worker launched
    tasks: int  # tasks it ran
    python_runs: int  # PythonRunner lines: work done by its Python workers


@dataclass
class StandaloneCluster:
    url: str
    web_port: int
    root: Path
    conf_dir: Path
    work_dirs: list[Path]
    logs: list[Path]
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def status(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.web_port}/json/", timeout=10) as answer:
            return json.load(answer)

    def alive_workers(self) -> int | None:
        """The master's count of registered workers; None while its web UI is still starting (an empty page)."""
        try:
            return self.status().get("aliveworkers")
        except (OSError, ValueError):
            return None

    def log_tails(self) -> str:
        return "\n".join(f"--- {log.name}\n{log.read_text(errors='replace')[-3000:]}" for log in self.logs
                         if log.is_file())

    def client_env(self) -> dict[str, str]:
        """The environment of a command run against the cluster (a driver, in Spark's terms)."""
        env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_CONF_DIR": str(self.conf_dir),
               "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOCAL_DIRS": str(self.root / "driver-local"),
               "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(REPO_ROOT)}
        for name in ("SPARK_REMOTE", "KRAFT_REPLAY_SPARK_MASTER", "PYSPARK_SUBMIT_ARGS"):
            env.pop(name, None)
        return env

    def finished_apps(self, count: int) -> list[dict]:
        """The master's completed applications, oldest first, once there are ``count`` of them."""
        deadline = time.monotonic() + 60
        while True:
            apps = sorted(self.status()["completedapps"], key=lambda app: app["starttime"])
            if len(apps) >= count or time.monotonic() > deadline:
                return apps
            time.sleep(0.5)

    def executors(self, app_id: str) -> list[ExecutorRun]:
        runs = []
        for worker, work_dir in enumerate(self.work_dirs):
            for directory in sorted((work_dir / app_id).glob("*")):
                log = (directory / "stderr").read_text(errors="replace") if (directory / "stderr").is_file() else ""
                pid = re.search(r"Started daemon with process name: (\d+)@", log)
                command = re.search(r'^Spark Executor Command: (.*)$', log, re.MULTILINE)
                runs.append(ExecutorRun(worker, directory.name, int(pid.group(1)) if pid else None,
                                        command.group(1) if command else "",
                                        len(re.findall(r"Executor: Running task ", log)),
                                        len(re.findall(r"PythonRunner: Times: ", log))))
        return runs


def _spawn(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)


@pytest.fixture(scope="module")
def standalone_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """A master and two one-core workers on loopback ports for this module; stopped afterwards, also on failure."""
    if not SPARK_CLASS.is_file():
        pytest.skip(f"{SPARK_CLASS} is not installed: pyspark {pyspark.__version__} ships no launcher")
    if java_available() is None:
        pytest.skip("no Java 17+: Spark's master and workers are JVMs")
    root = tmp_path_factory.mktemp("standalone")
    conf_dir, log_dir = root / "conf", root / "logs"
    for directory in (conf_dir, log_dir, root / "pids", root / "driver-local"):
        directory.mkdir()
    (conf_dir / "spark-defaults.conf").write_text("".join(f"{k} {v}\n" for k, v in SPARK_DEFAULTS.items()))
    port, web_port = free_port(), free_port()
    cluster = StandaloneCluster(f"spark://127.0.0.1:{port}", web_port, root, conf_dir,
                                [root / f"work-{i}" for i in range(WORKERS)],
                                [log_dir / "master.log", *(log_dir / f"worker-{i}.log" for i in range(WORKERS))])
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_CONF_DIR": str(conf_dir),
           "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(log_dir), "SPARK_PID_DIR": str(root / "pids"),
           "SPARK_DAEMON_MEMORY": "256m", "PYSPARK_PYTHON": sys.executable}
    for name in ("SPARK_REMOTE", "SPARK_MASTER_OPTS", "SPARK_WORKER_OPTS", "PYTHONPATH"):
        env.pop(name, None)
    try:
        cluster.processes.append(_spawn([str(SPARK_CLASS), MASTER_CLASS, "--host", "127.0.0.1", "--port", str(port),
                                         "--webui-port", str(web_port)], env, cluster.logs[0]))
        deadline = time.monotonic() + START_TIMEOUT

        def wait_until(done, what: str) -> None:
            while not done():
                exited = [p for p in cluster.processes if p.poll() is not None]
                if exited:
                    pytest.fail(f"{what}: {exited[0].args[1]} exited with {exited[0].returncode}\n"
                                f"{cluster.log_tails()}")
                if time.monotonic() > deadline:
                    pytest.fail(f"{what}: not within {START_TIMEOUT:.0f}s\n{cluster.log_tails()}")
                time.sleep(0.5)

        wait_until(lambda: listening(port) and listening(web_port), "the master listening")
        for i, work_dir in enumerate(cluster.work_dirs):
            work_dir.mkdir()
            worker_env = env | {"SPARK_WORKER_DIR": str(work_dir), "SPARK_LOCAL_DIRS": str(root / f"local-{i}")}
            cluster.processes.append(_spawn(
                [str(SPARK_CLASS), WORKER_CLASS, "--host", "127.0.0.1", "--cores", "1", "--memory", "1g",
                 "--webui-port", str(free_port()), "--work-dir", str(work_dir), cluster.url],
                worker_env, cluster.logs[1 + i]))
        wait_until(lambda: cluster.alive_workers() == WORKERS, f"{WORKERS} workers registered")
        yield cluster
    finally:
        _stop(list(reversed(cluster.processes)))  # the workers (and their executors) first, then the master


# --- the commands -------------------------------------------------------------------------------------


class PythonWorkerWatch(threading.Thread):
    """Notes the ``pyspark.daemon`` processes whose parent is an executor JVM of this cluster (Linux /proc)."""

    def __init__(self, cluster: StandaloneCluster) -> None:
        super().__init__(name="python-worker-watch", daemon=True)
        self.workers = {p.pid for p in cluster.processes[1:]}
        self.seen: dict[int, tuple[int, list[str]]] = {}  # daemon pid -> (executor pid, its command line)
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.25):
            table = _processes()
            for pid, (parent, argv) in table.items():
                executor = table.get(parent)
                if ("pyspark.daemon" in argv and executor is not None and executor[0] in self.workers
                        and "org.apache.spark.executor.CoarseGrainedExecutorBackend" in executor[1]):
                    self.seen[pid] = (parent, argv)


def _cli(cluster: StandaloneCluster, *args: str, cwd: Path, module: str = "kraft_replay.cli",
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", module, *args]
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=cluster.client_env() | (env or {}), cwd=cwd, start_new_session=True)
    try:
        out, err = process.communicate(timeout=COMMAND_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # the command and its driver JVM
        out, err = process.communicate()
        pytest.fail(f"{' '.join(args[:1])} did not finish within {COMMAND_TIMEOUT:.0f}s:\n{err[-4000:]}\n"
                    f"{cluster.log_tails()}")
    engines = [line for line in err.splitlines() if line.startswith("lake engine:")]
    print(f"{' '.join(args[:1]):8s} {time.monotonic() - started:6.1f}s  {'; '.join(engines) or '(no engine line)'}")
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def _map_in_arrow_tasks(event_log: Path) -> list[tuple[int, str, str]]:
    """(stage, executor id, end reason) of every task of a stage that evaluates ``MapInArrow``, from an
    uncompressed, unrolled Spark event log."""
    events = [json.loads(line) for line in event_log.read_text(encoding="utf-8").splitlines() if line.strip()]
    stages = {e["Stage Info"]["Stage ID"] for e in events if e["Event"] == "SparkListenerStageSubmitted"
              and any('"name":"MapInArrow"' in (rdd.get("Scope") or "") for rdd in e["Stage Info"]["RDD Info"])}
    return [(e["Stage ID"], e["Task Info"]["Executor ID"], e["Task End Reason"]["Reason"]) for e in events
            if e["Event"] == "SparkListenerTaskEnd" and e["Stage ID"] in stages]


def test_ingest_replay_state_and_report_on_a_standalone_cluster(
        standalone_cluster: StandaloneCluster, tmp_path: Path) -> None:
    """The demo's incident in two parts: offsets 0..100 as JSON lines (decoded by the driver), then the whole log
    as Kafka segments decoded by the executors; one replay, then state and report. (Incremental replays on a
    remote Spark: tests/test_spark_connect.py.)"""
    cluster = standalone_cluster
    entries = list(run_scenario(SCENARIO, OPTIONS).entries())
    first = write_jsonl_file(tmp_path / "first.jsonl", [e for e in entries if e.offset <= 100])
    log = write_log_dir(tmp_path / "log", entries, cluster_id=CLUSTER_ID, segment_bytes=8 * 1024)
    lake = str(tmp_path / "lake")
    master = ("--master", cluster.url)
    commands: list[str] = []  # one Spark application each, in order

    def run(*args: str, module: str = "kraft_replay.cli", env: dict[str, str] | None = None,
            ) -> subprocess.CompletedProcess[str]:
        commands.append(args[0])
        result = _cli(cluster, *args, *master, cwd=tmp_path, module=module, env=env)
        assert result.returncode == 0, f"{result.stderr[-6000:]}\n{cluster.log_tails()}"
        return result

    ingested = run("ingest", str(first), "--lake", lake, "--cluster-id", CLUSTER_ID)
    assert "  records added:             101" in ingested.stdout.splitlines()

    # The segments' paths are absolute: the executors' working directories are their own. This one application
    # keeps Spark's event log (the replays' plans would make theirs large).
    events = tmp_path / "events"
    events.mkdir()
    event_log = {"PYSPARK_SUBMIT_ARGS": " ".join(
        f"--conf spark.eventLog.{key}" for key in ("enabled=true", f"dir={events.as_uri()}", "compress=false",
                                                   "rolling.enabled=false")) + " pyspark-shell"}
    watch = PythonWorkerWatch(cluster)
    watch.start()
    try:
        more = run("ingest", str(log), "--lake", lake, module=EXECUTOR_DECODE_CLI, env=event_log)
    finally:
        watch.done.set()
        watch.join()
    lines = more.stdout.splitlines()
    assert "  records added:             73" in lines
    assert "  skipped (already present): 101" in lines
    assert "  conflicts:                 0" in lines
    replayed = run("replay", "--lake", lake)
    lines = replayed.stdout.splitlines()
    assert lines[0].startswith(f"replayed {CLUSTER_ID} (offsets 0..173) from metadata_log v2 (full)")
    rows = {line.split()[0]: int(line.split()[1].replace(",", "")) for line in lines[1:] if " rows " in line}
    assert (rows["partition_history"], rows["broker_history"], rows["topic_history"]) == (28, 13, 3)

    # topic-0-0 after the unclean election of broker 4 at offset 131.
    state = run("state", "--lake", lake, "--offset", "131", "--topic", "topic-0", "--partition", "0",
                "--format", "json")
    answer = json.loads(state.stdout)
    assert answer["offset"] == 131
    assert [(p["partitionId"], p["leader"], p["leaderEpoch"], p["partitionEpoch"], p["isr"], p["replicas"])
            for p in answer["partitions"]] == [(0, 4, 2, 3, [4], [5, 4])]
    assert [(b["brokerId"], b["fenced"]) for b in answer["brokers"]] == [(1, False), (2, False), (3, False),
                                                                        (4, False), (5, True)]

    report = run("report", "--lake", lake, "--out", str(tmp_path / "report"))
    assert "  partition timeline: topic-0-0, the partition with the most leader changes (3); choose another " \
           "with --topic and --partition" in report.stdout.splitlines()
    for name in ("partition_timeline.png", "cluster_health.png", "broker_fencing.png"):
        assert (tmp_path / "report" / name).stat().st_size > 10_000, name
    page = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    assert "    partitions offline at once: 1 from offset 64 (2023-11-14T22:13:34.276Z)" in page

    # Where the work ran: each command was an application of the master, with an executor JVM on each worker.
    apps = cluster.finished_apps(len(commands))
    assert [(app["name"], app["state"]) for app in apps] == [("kraft-replay", "FINISHED")] * len(commands)
    for command, app in zip(commands, apps, strict=True):
        executors = cluster.executors(app["id"])
        print(f"{command:8s} {app['id']}: " + ", ".join(
            f"worker {e.worker} executor {e.executor_id} pid {e.pid}: {e.tasks} tasks, {e.python_runs} Python runs"
            for e in executors))
        # An executor that exits as the driver stops it can be replaced by the master before the application has
        # unregistered (Spark's standalone shutdown race, seen on a loaded machine): that replacement is killed
        # before its JVM starts, and runs nothing.
        started = [e for e in executors if e.pid is not None]
        assert all(e.tasks == 0 and e.python_runs == 0 for e in executors if e.pid is None), executors
        assert {e.worker for e in started} == set(range(WORKERS)), executors
        assert all("org.apache.spark.executor.CoarseGrainedExecutorBackend" in e.command and '"-Xmx512M"' in e.command
                   and f'"--app-id" "{app["id"]}"' in e.command for e in executors), executors
        pids = [e.pid for e in started]
        assert len(set(pids)) == len(pids) == WORKERS, executors  # a JVM each
        assert sum(e.tasks for e in started) > 0, executors
        if command == "replay":  # hundreds of tasks: both executors take part
            assert all(e.tasks > 0 for e in started), executors
    decode = cluster.executors(apps[1]["id"])
    (event_file,) = events.glob(f"{apps[1]['id']}*")  # `.inprogress` if the driver did not stop its context
    arrow_tasks = _map_in_arrow_tasks(event_file)
    print(f"MapInArrow tasks of the decode (stage, executor, result): {arrow_tasks}")
    # Tasks of executors of this application only (never "driver"); which of the two gets them is Spark's choice.
    assert arrow_tasks and {executor for _, executor, _ in arrow_tasks} <= {e.executor_id for e in decode}, arrow_tasks
    assert {result for _, _, result in arrow_tasks} == {"Success"}, arrow_tasks
    if Path("/proc").is_dir():
        daemons = {(executor, argv[0]) for executor, argv in watch.seen.values()}
        print(f"Python workers of the decode: {sorted(daemons)}")
        assert daemons, "no pyspark.daemon seen under an executor JVM during the executor-side decode"
        assert {python for _, python in daemons} == {sys.executable}
        assert {executor for executor, _ in daemons} <= {e.pid for e in decode}
