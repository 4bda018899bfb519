"""Getting the SparkSession: one place that knows the local defaults, Spark Connect and the JDK check.

Everything else in kraft-replay asks `get_spark()` for its session so that a laptop, a 2-core CI box
and a remote Spark Connect server are configured the same way.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkRuntimeError
from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
LOCAL_SHUFFLE_PARTITIONS = 8
MIN_DRIVER_MEMORY_GIB, MAX_DRIVER_MEMORY_GIB = 2, 8


def local_driver_memory() -> str:
    """The local driver's heap: a third of the machine's memory, 2 to 8 GiB. In ``local[*]`` the driver JVM is
    also the executor, so the replay's sorts and checkpoints live in this heap: with 2 GiB a 10-million-record
    replay spills most of them to disk."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return f"{MIN_DRIVER_MEMORY_GIB}g"
    gib = total // 3 // (1 << 30)
    return f"{max(MIN_DRIVER_MEMORY_GIB, min(MAX_DRIVER_MEMORY_GIB, gib))}g"


MIN_JAVA_MAJOR = 17
DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
LOG4J2_CONFIG = Path(__file__).with_name("log4j2.properties")

# Runtime SQL settings that hold for local and Spark Connect sessions alike.
_COMMON_CONF: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    # delta-rs and the Delta protocol expect INT64 microsecond timestamps, not Spark's legacy INT96.
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # The replay's window folds have deep plans: Spark renders every plan as text for its listeners, and
    # an uncapped rendering of the incremental replay's plan alone exhausts a 2 GiB driver heap.
    "spark.sql.maxPlanStringLength": "1000000",
}


class SparkUnavailableError(RuntimeError):
    """No usable local Spark: raised instead of PySpark's opaque gateway errors."""


@dataclass(frozen=True)
class SparkOptions:
    """How to get a session. Unset fields fall back to the environment, then to local defaults.

    `remote` falls back to `SPARK_REMOTE` and `master` to `KRAFT_REPLAY_SPARK_MASTER`, then `local[*]`.
    `extra_conf` is applied last and wins over every default.
    """

    master: str | None = None
    remote: str | None = None
    app_name: str = "kraft-replay"
    shuffle_partitions: int | None = None
    driver_memory: str | None = None
    extra_conf: dict[str, str] = field(default_factory=dict)


def java_available() -> str | None:
    """The first line of `java -version` for the JDK Spark would launch, or None when there is none.

    Mirrors `spark-class`: `$JAVA_HOME/bin/java` when JAVA_HOME is set, else `java` on PATH.
    """
    java_home = os.environ.get("JAVA_HOME")
    java = os.path.join(java_home, "bin", "java") if java_home else shutil.which("java")
    if not java or not os.access(java, os.X_OK):
        return None
    try:
        result = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (result.stderr or result.stdout).strip().splitlines()
    return lines[0] if result.returncode == 0 and lines else None


def _java_major(version_line: str) -> int | None:
    """17 for `openjdk version "17.0.15"`, 8 for the old `"1.8.0_392"` scheme, None if unparseable."""
    match = re.search(r'version "(\d+)(?:\.(\d+))?', version_line)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def _require_java() -> str:
    """Fail early with an actionable message: PySpark's own error for a missing JDK says nothing useful."""
    line = java_available()
    if line is None:
        raise SparkUnavailableError(
            f"Java {MIN_JAVA_MAJOR} not found: run `make setup` or install openjdk-17-jre-headless "
            "(or set JAVA_HOME to a JDK 17+), or point SPARK_REMOTE at a Spark Connect server."
        )
    major = _java_major(line)
    if major is not None and major < MIN_JAVA_MAJOR:
        raise SparkUnavailableError(
            f"Spark 4 needs Java {MIN_JAVA_MAJOR}+, found {line!r}: install openjdk-17-jre-headless "
            "and put it first on PATH (or set JAVA_HOME to it)."
        )
    return line


def _session_conf(options: SparkOptions, *, local: bool) -> dict[str, str]:
    """The configuration for a session; static JVM settings only for local sessions (Connect refuses them)."""
    conf = dict(_COMMON_CONF)
    if local:
        conf |= {
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.driver.memory": options.driver_memory or local_driver_memory(),
            "spark.sql.shuffle.partitions": str(options.shuffle_partitions or LOCAL_SHUFFLE_PARTITIONS),
            # The status listeners keep every finished query's plan graph and metrics in the driver heap
            # (1,000 queries by default); the replay runs hundreds of deep plans, so keep only a few.
            "spark.sql.ui.retainedExecutions": "20",
            "spark.ui.retainedJobs": "100",
            "spark.ui.retainedStages": "100",
            "spark.ui.retainedTasks": "10000",
            # Spark's warnings without its start-up notices (hostname, native Hadoop, plan truncation).
            "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.as_uri()}",
        }
    else:
        if options.shuffle_partitions is not None:
            conf["spark.sql.shuffle.partitions"] = str(options.shuffle_partitions)
        if options.driver_memory is not None:
            raise ValueError("driver_memory cannot be set for Spark Connect: the server owns the JVM")
    return conf | options.extra_conf


def get_spark(options: SparkOptions | None = None) -> SparkSession:
    """Return the (shared) SparkSession: Spark Connect when a remote URL is given, else a local JVM.

    `spark.driver.memory` and the other static settings only take effect when this call starts the JVM;
    a later call without an explicit master returns the running session unchanged (but for the settings
    it names explicitly), so commands called inside a notebook or a test run keep its configuration.
    """
    options = options or SparkOptions()
    remote = options.remote or os.environ.get("SPARK_REMOTE")
    if remote:
        builder = SparkSession.builder.remote(remote).appName(options.app_name)
        for key, value in _session_conf(options, local=False).items():
            builder = builder.config(key, value)
        return builder.getOrCreate()

    active = SparkSession.getActiveSession()
    if active is not None and options.master is None:
        # A session is already running in this process (a notebook, a test run, a command called from
        # Python): use it as it is configured, changing only what the caller asked for explicitly.
        if options.shuffle_partitions is not None:
            active.conf.set("spark.sql.shuffle.partitions", str(options.shuffle_partitions))
        for key, value in options.extra_conf.items():
            active.conf.set(key, value)
        return active

    master = options.master or os.environ.get("KRAFT_REPLAY_SPARK_MASTER") or DEFAULT_MASTER
    java_line = _require_java()
    # Python workers must run this interpreter (it has pyspark/pyarrow), not whatever `python3` is on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName(options.app_name)
    conf = _session_conf(options, local=True)
    if master.startswith("local"):
        # Machines whose hostname does not resolve (containers, CI) otherwise fail to bind the driver.
        conf = {"spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1"} | conf
    for key, value in conf.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except PySparkRuntimeError as error:
        if error.getCondition() != "JAVA_GATEWAY_EXITED":
            raise
        raise SparkUnavailableError(
            f"The Spark JVM did not start ({java_line}); check the output above, JAVA_HOME and `make setup`."
        ) from error
    spark.sparkContext.setLogLevel("WARN")
    return spark


def has_delta_spark(spark: SparkSession) -> bool:
    """True only when this session can use delta-spark itself (its JVM classes and SQL extension).

    The embedded default has no delta-spark jars (they come from Maven Central, unreachable here), so
    Spark only writes and reads Parquet and delta-rs makes the Delta commits (see lakehouse.delta_commit).
    A cluster started with `--packages io.delta:delta-spark_2.13:4.0.0` and the extension answers True.
    """
    extensions = spark.conf.get("spark.sql.extensions", "") or ""
    if DELTA_EXTENSION not in extensions:
        return False
    jvm = getattr(spark, "_jvm", None)  # Spark Connect sessions have no JVM gateway on this side
    if jvm is None:
        return False
    try:
        # The context class loader is the one that sees jars added with --packages/--jars.
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName("io.delta.tables.DeltaTable", False, loader)
    except Py4JJavaError:
        return False
    return True


@contextlib.contextmanager
def spark_conf(spark: SparkSession, key: str, value: str) -> Iterator[None]:
    """Set a runtime SQL setting for the block, then restore it (or unset it when it was unset)."""
    previous = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if previous is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, previous)
