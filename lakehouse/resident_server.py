"""The resident Spark server: one Spark Connect server on this machine's loopback that the commands reuse.

Every command that starts its own Spark pays the JVM's start and runs its first plans in a cold JVM, about half of
a small replay's time (BENCHMARKS.md, issue 42). ``kraft-replay server start`` starts one driver JVM that stays:
the server Spark ships (``SparkConnectServer`` in pyspark's ``spark-connect`` jar), with the same settings and jars
as a session this process would start (``lakehouse.spark.local_session_conf``), bound to 127.0.0.1 only (Spark
Connect has no authentication). The commands then connect to it as to any Spark Connect server.

What runs is recorded in ``server.json`` of the server directory (``$KRAFT_REPLAY_SERVER_DIR``, else
``~/.cache/kraft-replay/server``) with the server's log beside it. A record whose process is gone or whose port is
closed is stale and removed; starting, stopping and asking again are safe.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import pyspark

from lakehouse.jars import SCALA_BINARY, SPARK_HOME, SPARK_SUBMIT
from lakehouse.loopback import LOOPBACK, free_port, listening
from lakehouse.server_dir import end_process, process_alive, server_dir
from lakehouse.spark import (
    SPARK_JARS_CONF,
    SparkOptions,
    SparkUnavailableError,
    local_session_conf,
    require_java,
)

SERVER_FILE = "server.json"
SERVER_LOG = "server.log"
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
SERVER_MASTER = "local[*]"
CONNECT_PORT = "spark.connect.grpc.binding.port"
CONNECT_ADDRESS = "spark.connect.grpc.binding.address"
START_TIMEOUT = 120.0  # seconds for the JVM to listen (a busy 2-core machine takes about 20)
STOP_TIMEOUT = 30.0  # seconds for the JVM to end after SIGTERM before SIGKILL
CONNECT_JAR = SPARK_HOME / "jars" / f"spark-connect_{SCALA_BINARY}-{pyspark.__version__}.jar"
# the directory holding the product's packages: the server's Python workers import them (``mapInArrow`` decoders)
PACKAGE_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class ResidentServer:
    """One started server, as ``server.json`` records it."""

    url: str  # sc://127.0.0.1:PORT
    port: int
    pid: int  # the spark-submit process, leader of the server's process group
    log: str
    started_at: str  # ISO-8601, UTC
    spark_version: str
    spark_jars: str  # the jars it was started with ("" without delta-spark)

    def describe(self) -> str:
        return f"{self.url} (pid {self.pid}, started {self.started_at}, log {self.log})"

    def outdated(self) -> str | None:
        """Why the commands of this installation should not use it (another Spark or other jars), or None."""
        if self.spark_version != pyspark.__version__:
            return f"it runs Spark {self.spark_version}, this installation has {pyspark.__version__}"
        if self.spark_jars != _spark_jars():
            return "it was started with other jars than this installation's (`make setup` ran since)"
        return None


def resident_server() -> ResidentServer | None:
    """The running server, or None (a stale record is removed)."""
    record = server_dir() / SERVER_FILE
    try:
        server = ResidentServer(**json.loads(record.read_text()))
    except FileNotFoundError:
        return None
    except (ValueError, TypeError):
        record.unlink(missing_ok=True)  # a record this release cannot read: its server is found by nobody
        return None
    if process_alive(server.pid) and listening(server.port):
        return server
    record.unlink(missing_ok=True)
    return None


def start_server(port: int | None = None, driver_memory: str | None = None) -> tuple[ResidentServer, bool]:
    """The running server, or a new one on ``port`` (a free one by default); True when this call started it."""
    with _locked():
        running = resident_server()
        if running is not None:
            return running, False
        if not CONNECT_JAR.is_file():
            raise SparkUnavailableError(f"{CONNECT_JAR} is missing: pyspark {pyspark.__version__} ships no "
                                        "Spark Connect server here, so there is no resident server to start")
        require_java()
        directory = server_dir()
        log_path = directory / SERVER_LOG
        port = port or free_port()
        if listening(port):
            raise SparkUnavailableError(f"port {port} on {LOOPBACK} is taken: choose another with --port")
        command = _server_command(port, driver_memory)
        with log_path.open("wb") as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       env=_server_env(), cwd=directory, start_new_session=True)
        _wait_listening(process, port, log_path)
        server = ResidentServer(url=f"sc://{LOOPBACK}:{port}", port=port, pid=process.pid, log=str(log_path),
                                started_at=datetime.now(UTC).isoformat(timespec="seconds"),
                                spark_version=pyspark.__version__, spark_jars=_spark_jars())
        record = directory / SERVER_FILE
        partial = record.with_suffix(".json.partial")
        partial.write_text(json.dumps(asdict(server), indent=1))
        partial.replace(record)
        return server, True


def stop_server() -> ResidentServer | None:
    """Stop the running server (SIGTERM to its process group, SIGKILL after ``STOP_TIMEOUT``); the server
    stopped, or None when none ran."""
    with _locked():
        server = resident_server()
        if server is None:
            return None
        end_process(server.pid, STOP_TIMEOUT, group=True)
        # the port closes as the JVM ends: "stopped" is said once nothing answers there any more
        deadline = time.monotonic() + STOP_TIMEOUT
        while listening(server.port) and time.monotonic() < deadline:
            time.sleep(0.2)
        (server_dir() / SERVER_FILE).unlink(missing_ok=True)
        return server


def _server_command(port: int, driver_memory: str | None) -> list[str]:
    conf = local_session_conf(SparkOptions(driver_memory=driver_memory), SERVER_MASTER)
    conf |= {CONNECT_PORT: str(port), CONNECT_ADDRESS: LOOPBACK}
    settings = [part for key, value in conf.items() for part in ("--conf", f"{key}={value}")]
    return [str(SPARK_SUBMIT), "--class", SERVER_CLASS, "--name", "kraft-replay-server",
            "--master", SERVER_MASTER, *settings, "spark-internal"]


def _server_env() -> dict[str, str]:
    """The server's environment: pyspark's Spark, this interpreter for its Python workers, which import the
    product's packages."""
    path = os.pathsep.join(p for p in (str(PACKAGE_ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "PYSPARK_PYTHON": sys.executable,
           "SPARK_LOCAL_IP": LOOPBACK, "PYTHONPATH": path}
    env.pop("SPARK_REMOTE", None)
    return env


def _wait_listening(process: subprocess.Popen[bytes], port: int, log_path: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while not listening(port):
        if process.poll() is not None:
            raise SparkUnavailableError(f"the resident Spark server exited with {process.returncode} before "
                                        f"listening on {port}: see {log_path}")
        if time.monotonic() > deadline:
            end_process(process.pid, STOP_TIMEOUT, group=True)
            raise SparkUnavailableError(f"the resident Spark server did not listen on {port} within "
                                        f"{START_TIMEOUT:.0f} s (stopped again): see {log_path}")
        time.sleep(0.25)


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """One start or stop at a time on this machine (two `server start` at once start one server)."""
    directory = server_dir()
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / "server.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _spark_jars() -> str:
    """The jars a server started now gets (the lake engine's and the replay's own)."""
    return local_session_conf(SparkOptions(), SERVER_MASTER).get(SPARK_JARS_CONF, "")

