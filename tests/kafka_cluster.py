"""A real Apache Kafka KRaft cluster for the tests, started from the jars ``python -m lakehouse.jars fetch
kafka-<version>`` puts in the cache: one dedicated controller and three brokers, each its own JVM
(``java -cp <Kafka's jars> kafka.Kafka server.properties``), formatted by Kafka's own ``kafka.tools.StorageTool``,
listening on free 127.0.0.1 ports only.

Why a dedicated controller: the scripted incidents kill brokers (two at once for the ELR scenario); with combined
nodes that would lose the controller quorum. The settings make the controller write what a long-lived cluster
writes in hours within seconds: short broker sessions, snapshots every few KB, small metadata segments and a short
metadata retention on the controller (its log no longer starts at offset 0: the replay starts from a snapshot).
The brokers keep their whole metadata log (default retention) so it can also be folded from offset 0.

Every process runs in its own process group and is killed (``killpg``) by ``KafkaCluster.close``, which the
fixture calls in a ``finally``: nothing is left running, also when a test fails.
"""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from lakehouse.jars import installed, jars_dir, kafka_jars, missing_reason
from lakehouse.loopback import free_port, listening

CONTROLLER_ID = 100
BROKER_IDS = (1, 2, 3)
START_TIMEOUT = 300.0  # one JVM to listen (a restarted broker recovers its logs first), on a loaded 2-core machine
WAIT_TIMEOUT = 180.0  # the cluster to reach a state after an incident, on a loaded 2-core machine
STOP_TIMEOUT = 30.0
HEAP = {"controller": "-Xmx256m", "broker": "-Xmx384m"}
# a test's short-lived JVM, small and busy briefly: the client compiler only and the serial collector leave the cores
# to the work (the Kafka nodes here, the standalone cluster's executors in tests/test_standalone_cluster.py)
SHORT_LIVED_JVM = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
JVM_OPTIONS = ("-Xms32m", *SHORT_LIVED_JVM, "-Xss512k", "-Djava.awt.headless=true")
METADATA_DIR = "__cluster_metadata-0"
T = TypeVar("T")


class KafkaUnavailable(Exception):
    """No Kafka jars or no java here: the tests skip with this reason."""


def classpath(version: str) -> str:
    """Kafka ``version``'s jars as a ``java -cp`` value, or KafkaUnavailable saying how to fetch them."""
    jar_set = kafka_jars(version)
    jars = installed(jar_set=jar_set)
    if jars is None:
        raise KafkaUnavailable(missing_reason(jars_dir(jar_set), jar_set))
    return jars.classpath


def random_cluster_id() -> str:
    """A cluster id as ``kafka-storage random-uuid`` prints it: 16 random bytes, URL-safe base64, no padding, and,
    as Kafka's ``Uuid.randomUuid`` draws again, never containing ``-``: ``StorageTool format -t -Abc…`` reads an id
    that starts with one as an option (a 4.4.0 cluster of CI failed to format on one)."""
    while "-" in (cluster_id := base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")):
        pass
    return cluster_id


def _segment_settings(version: str) -> dict[str, str]:
    """Small metadata segments: Kafka refuses ``metadata.log.segment.bytes`` below 8 MiB unless an internal knob
    lowers the minimum (3.x: ``metadata.log.segment.min.bytes``; 4.x: ``internal.metadata.log.segment.bytes``
    replaces the value)."""
    size = str(4 * 1024)
    if version.startswith("3."):
        return {"metadata.log.segment.min.bytes": size, "metadata.log.segment.bytes": size}
    return {"internal.metadata.log.segment.bytes": size}


@dataclass
class Node:
    """One Kafka server: its id, role, ports, directory and (while running) its process."""

    node_id: int
    role: str  # "controller" or "broker"
    port: int
    directory: Path
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def properties(self) -> Path:
        return self.directory / "server.properties"

    @property
    def data(self) -> Path:
        return self.directory / "data"

    @property
    def metadata_log(self) -> Path:
        return self.data / METADATA_DIR

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


@dataclass
class KafkaCluster:
    """One controller and three brokers of Kafka ``version`` under ``root``."""

    version: str
    root: Path
    release_version: str | None = None  # the metadata.version to format with (StorageTool's --release-version)
    cluster_id: str = field(default_factory=random_cluster_id)
    nodes: dict[int, Node] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.cp = classpath(self.version)
        self.nodes[CONTROLLER_ID] = Node(CONTROLLER_ID, "controller", free_port(), self.root / "controller")
        for broker_id in BROKER_IDS:
            self.nodes[broker_id] = Node(broker_id, "broker", free_port(), self.root / f"broker-{broker_id}")

    # --- configuration ---------------------------------------------------------------------------

    @property
    def controller(self) -> Node:
        return self.nodes[CONTROLLER_ID]

    def bootstrap(self, broker_ids: Iterable[int] = BROKER_IDS) -> list[str]:
        """The listeners of ``broker_ids``, as a client's ``bootstrap.servers``."""
        return [f"127.0.0.1:{self.nodes[b].port}" for b in broker_ids]

    def _settings(self, node: Node) -> dict[str, str]:
        controller = self.controller
        common = {
            "node.id": str(node.node_id),
            "controller.quorum.voters": f"{CONTROLLER_ID}@127.0.0.1:{controller.port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(node.data),
            # ACLs are replayed by the controller's StandardAuthorizer; every connection here is the
            # PLAINTEXT principal ANONYMOUS, a super user, so the ACLs the test creates restrict nobody
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:ANONYMOUS",
            # a controller writes a snapshot every few KB of records, or every 10 s
            "metadata.log.max.record.bytes.between.snapshots": "4096",
            "metadata.log.max.snapshot.interval.ms": "10000",
            "metadata.log.segment.ms": "15000",
            **_segment_settings(self.version),
        }
        if node.role == "controller":
            return {**common, "process.roles": "controller",
                    "listeners": f"CONTROLLER://127.0.0.1:{node.port}",
                    # short sessions: a killed broker is fenced within seconds (not so short that a broker
                    # starved of CPU on a loaded machine misses its heartbeats and is fenced while it runs)
                    "broker.session.timeout.ms": "12000",
                    # the controller's log loses its first segments once a snapshot covers them
                    "metadata.max.retention.ms": "5000",
                    "metadata.max.retention.bytes": "8192"}
        return {**common, "process.roles": "broker",
                "listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
                "inter.broker.listener.name": "PLAINTEXT",
                "broker.heartbeat.interval.ms": "500",
                "num.partitions": "1", "default.replication.factor": "3",
                "offsets.topic.replication.factor": "3", "transaction.state.log.replication.factor": "3",
                "transaction.state.log.min.isr": "1", "group.initial.rebalance.delay.ms": "0",
                "replica.lag.time.max.ms": "12000", "num.network.threads": "2", "num.io.threads": "2",
                "background.threads": "2", "log.cleaner.enable": "false", "num.recovery.threads.per.data.dir": "1"}

    def _java(self, *args: str, heap: str = "-Xmx256m") -> list[str]:
        return ["java", heap, *JVM_OPTIONS, "-cp", self.cp, *args]

    def format(self) -> None:
        """Write every node's ``server.properties`` and format its storage with Kafka's ``StorageTool``."""
        started = time.monotonic()
        tools: dict[int, subprocess.Popen[str]] = {}
        try:
            for node in self.nodes.values():  # all at once: each is a JVM start
                node.directory.mkdir(parents=True, exist_ok=True)
                node.properties.write_text("".join(f"{k}={v}\n" for k, v in self._settings(node).items()))
                tools[node.node_id] = subprocess.Popen(
                    self._java("kafka.tools.StorageTool", "format", "-t", self.cluster_id, "-c", str(node.properties),
                               *(("--release-version", self.release_version) if self.release_version else ())),
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=node.directory,
                    start_new_session=True)
            for node_id, tool in tools.items():
                output, _ = tool.communicate(timeout=300)
                if tool.returncode != 0:
                    raise AssertionError(f"Kafka {self.version}'s StorageTool could not format node {node_id}:\n"
                                         f"{output}")
        finally:
            for tool in tools.values():
                if tool.poll() is None:
                    os.killpg(tool.pid, signal.SIGKILL)
                    tool.wait()
        self.timings["format"] = time.monotonic() - started

    # --- processes -------------------------------------------------------------------------------

    def start(self, node_id: int, wait: bool = True) -> None:
        """Start one node's JVM in a process group of its own; wait until it listens."""
        node = self.nodes[node_id]
        assert not node.running(), f"node {node_id} is running"
        node.starts += 1
        log = (node.directory / f"server-{node.starts}.out").open("wb")
        node.process = subprocess.Popen(
            self._java(f"-Dkafka.logs.dir={node.directory}", "kafka.Kafka", str(node.properties),
                       heap=HEAP[node.role]),
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=node.directory,
            start_new_session=True)
        log.close()
        if wait:
            self.wait_listening(node_id)

    def wait_listening(self, node_id: int) -> None:
        node = self.nodes[node_id]
        deadline = time.monotonic() + START_TIMEOUT
        while not listening(node.port):
            if not node.running():
                raise AssertionError(f"Kafka {self.version} node {node_id} exited "
                                     f"({node.process.returncode if node.process else None}):\n{self.output(node_id)}")
            if time.monotonic() > deadline:
                raise AssertionError(f"Kafka {self.version} node {node_id} does not listen on {node.port} after "
                                     f"{START_TIMEOUT:.0f} s:\n{self.output(node_id)}")
            time.sleep(0.2)

    def start_all(self) -> None:
        started = time.monotonic()
        for node_id in self.nodes:
            self.start(node_id, wait=False)
        for node_id in self.nodes:
            self.wait_listening(node_id)
        self.timings["start"] = time.monotonic() - started

    def output(self, node_id: int) -> str:
        """The tail of what the node's JVM printed (its last start)."""
        node = self.nodes[node_id]
        path = node.directory / f"server-{node.starts}.out"
        return path.read_text(errors="replace")[-3000:] if path.is_file() else ""

    def kill(self, node_id: int) -> None:
        """kill -9: no controlled shutdown; the controller fences the broker when its session times out."""
        node = self.nodes[node_id]
        assert node.process is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(node.process.pid, signal.SIGKILL)
        node.process.wait(timeout=STOP_TIMEOUT)

    def stop(self, node_id: int, timeout: float = STOP_TIMEOUT) -> int:
        """SIGTERM: a broker asks the controller for a controlled shutdown first; SIGKILL after ``timeout``."""
        node = self.nodes[node_id]
        assert node.process is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(node.process.pid, signal.SIGTERM)
        try:
            return node.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill(node_id)
            return -9

    def close(self) -> None:
        """Kill every process group this cluster started (idempotent; for ``finally``)."""
        for node in self.nodes.values():
            if node.process is None:
                continue
            with contextlib.suppress(ProcessLookupError):
                os.killpg(node.process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                node.process.wait(timeout=STOP_TIMEOUT)

    def running_pids(self) -> list[int]:
        return [n.process.pid for n in self.nodes.values() if n.process is not None and n.process.poll() is None]


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = WAIT_TIMEOUT, every: float = 0.5) -> T:
    """Poll ``probe`` until it returns something truthy (returned); AssertionError naming ``what`` on timeout. An
    exception of the probe (a broker that just went away) counts as not yet."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            value = probe()
            if value:
                return value
            last = value
        except (KeyError, TypeError, AttributeError, AssertionError):
            raise  # the probe's own mistake, not the cluster's
        except Exception as exc:  # a client error while brokers restart: not yet
            last = exc
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what} (last: {last!r})")
        time.sleep(every)
