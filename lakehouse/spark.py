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
import threading
from dataclasses import dataclass, field
from pathlib import Path

from py4j.protocol import Py4JJavaError
from pyspark import SparkConf, SparkContext
from pyspark.errors import PySparkRuntimeError
from pyspark.java_gateway import launch_gateway
from pyspark.sql import SparkSession

from lakehouse import class_archive
from lakehouse.jars import DELTA_VERSION, installed, jars_dir, missing_reason
from lakehouse.light_reader import AUTO as AUTO
from lakehouse.light_reader import DELTA_RS as DELTA_RS
from lakehouse.light_reader import DELTA_SPARK as DELTA_SPARK
from lakehouse.light_reader import ENGINE_ENV as ENGINE_ENV
from lakehouse.light_reader import SPARK_MASTER_ENV, SPARK_REMOTE_ENV
from lakehouse.replay_jar import ReplayJarError
from lakehouse.replay_jar import build as build_replay_jar

DEFAULT_MASTER = "local[*]"
LOCAL_SHUFFLE_PARTITIONS = 8
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
SPARK_JARS_CONF = "spark.jars"
DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
# Every driver JVM started here runs the throughput garbage collector, not G1. On a small machine G1's concurrent
# threads and write barriers compete with the jobs for the cores, most of all when a replay caches and spills at the
# heap's edge (a resident server, a large replay: BENCHMARKS.md, issue 42).
DRIVER_GC = "-XX:+UseParallelGC"
DEFAULT_DRIVER_MEMORY = "2g"
DRIVER_MEMORY_ENV = "KRAFT_REPLAY_DRIVER_MEMORY"
_JVM_SIZE = re.compile(r"[1-9][0-9]*[kmgt]?", re.IGNORECASE)


def local_driver_memory() -> str:
    """The local driver's heap: ``$KRAFT_REPLAY_DRIVER_MEMORY``, else 2 GiB. In ``local[*]`` the driver JVM is
    also the executor; a full replay sorts in more partitions as the log grows
    (``lakehouse.spark_settings.shuffle_partitions_for``), so 2 GiB replays 10 M records."""
    value = os.environ.get(DRIVER_MEMORY_ENV, "").strip()
    if not value:
        return DEFAULT_DRIVER_MEMORY
    if not _JVM_SIZE.fullmatch(value):
        raise SparkUnavailableError(f"{DRIVER_MEMORY_ENV}={value!r}: expected a JVM memory size such as 2g or 4096m")
    return value


MIN_JAVA_MAJOR = 17
DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
# Delta's data skipping: a Spark job over a table's file statistics before each query that filters it. The
# replay's tables are a few files each, sorted for Parquet's own page statistics (replay.store.layout): a question pays
# the job (about 0.1 s a table read) and gains little. Off in sessions started here; on in ``file_statistics``.
DELTA_STATS_SKIPPING = "spark.databricks.delta.stats.skipping"
KRYO_SERIALIZER = "org.apache.spark.serializer.KryoSerializer"
# What the JVM prints at every start (Spark 4 adds the module) and that says nothing about the user's data.
_JVM_NOISE = (b"WARNING: Using incubator modules: jdk.incubator.vector",)
LOG4J2_CONFIG = Path(__file__).with_name("log4j2.properties")

DATAFRAME_DEBUGGING = "spark.python.sql.dataFrameDebugging.enabled"
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
    # PySpark records the Python call site of every DataFrame call for error messages: five JVM round trips per
    # call, 60 % of a small replay's round trips (issue 20: a 176-record replay 64 -> 51 s without it).
    DATAFRAME_DEBUGGING: "false",
}


class SparkUnavailableError(RuntimeError):
    """No usable local Spark: raised instead of PySpark's opaque gateway errors."""


@dataclass(frozen=True)
class SparkOptions:
    """How to get a session. Unset fields fall back to the environment, then to local defaults.

    `remote` falls back to `SPARK_REMOTE` and `master` to `KRAFT_REPLAY_SPARK_MASTER`, then `local[*]`.
    `java_options` are added to the driver JVM's own (a session started here; Connect's server owns its JVM).
    `extra_conf` is applied last and wins over every default.
    """

    master: str | None = None
    remote: str | None = None
    app_name: str = "kraft-replay"
    shuffle_partitions: int | None = None
    driver_memory: str | None = None
    java_options: tuple[str, ...] = ()
    extra_conf: dict[str, str] = field(default_factory=dict)
    announce: bool = False  # say once on stderr which lake engine the session gives (the CLI does)


def requested_engine() -> str:
    """``$KRAFT_REPLAY_ENGINE`` (delta-spark, delta-rs or auto, the default)."""
    value = (os.environ.get(ENGINE_ENV) or AUTO).strip().lower()
    if value not in (DELTA_SPARK, DELTA_RS, AUTO):
        raise SparkUnavailableError(f"{ENGINE_ENV}={value!r}: expected {DELTA_SPARK}, {DELTA_RS} or {AUTO}")
    return value


def delta_conf() -> dict[str, str]:
    """The settings that put delta-spark and spark-avro into a session started here: the cached jars (never a
    resolution at start-up), Delta's SQL extension and catalog. Empty when the engine is delta-rs or there are
    no jars (``lakehouse.jars``); an error when delta-spark is asked for and there are none."""
    engine = requested_engine()
    if engine == DELTA_RS:
        return {}
    jars = installed()
    if jars is None:
        if engine == DELTA_SPARK:
            raise SparkUnavailableError(f"{ENGINE_ENV}={DELTA_SPARK}, but {missing_reason()}")
        return {}
    return {SPARK_JARS_CONF: jars.spark_jars, "spark.sql.extensions": DELTA_EXTENSION,
            "spark.sql.catalog.spark_catalog": DELTA_CATALOG,
            # Delta rebuilds a table's snapshot in 50 tasks by default; the lake's tables have tens of files, and
            # 50 tiny tasks per table read dominated the small commands (state: 274 tasks and 146 s -> 34, 64 s)
            "spark.databricks.delta.snapshotPartitions": str(max(2, os.cpu_count() or 2)),
            DELTA_STATS_SKIPPING: "false"}


def replay_jar() -> str | None:
    """The jar of the replay's own JVM functions (``lakehouse.replay_jar``), built when missing; None when it cannot
    be built here (no JDK): the replay says so when it needs them, every other command runs without them."""
    try:
        return str(build_replay_jar())
    except ReplayJarError:
        return None


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


def require_java() -> str:
    """Fail early with an actionable message: PySpark's own error for a missing JDK says nothing useful."""
    line = java_available()
    if line is None:
        raise SparkUnavailableError(
            f"Java {MIN_JAVA_MAJOR} not found: run `make setup` or install openjdk-17-jdk-headless "
            "(or set JAVA_HOME to a JDK 17+), or point SPARK_REMOTE at a Spark Connect server."
        )
    major = _java_major(line)
    if major is not None and major < MIN_JAVA_MAJOR:
        raise SparkUnavailableError(
            f"Spark 4 needs Java {MIN_JAVA_MAJOR}+, found {line!r}: install openjdk-17-jdk-headless "
            "and put it first on PATH (or set JAVA_HOME to it)."
        )
    return line


def session_conf(options: SparkOptions, *, local: bool) -> dict[str, str]:
    """The configuration for a session; static JVM settings only for local sessions (Connect refuses them)."""
    conf = dict(_COMMON_CONF)
    if local:
        conf |= {
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.driver.memory": options.driver_memory or local_driver_memory(),
            SHUFFLE_PARTITIONS: str(options.shuffle_partitions or LOCAL_SHUFFLE_PARTITIONS),
            # The status listeners keep every finished query's plan graph and metrics in the driver heap
            # (1,000 queries by default); the replay runs hundreds of deep plans, so keep only a few.
            "spark.sql.ui.retainedExecutions": "20",
            "spark.ui.retainedJobs": "100",
            "spark.ui.retainedStages": "100",
            "spark.ui.retainedTasks": "10000",
            # Checkpointed rows spilled to disk (the fold's, the derivation's: the 2 GiB heap holds few) and
            # broadcasts are written with Kryo, not Java serialization (issue 20: the 10 M derivation 385 -> 362 s).
            "spark.serializer": KRYO_SERIALIZER,
            # Spark's warnings without its start-up notices (hostname, native Hadoop, plan truncation).
            # Spark's classes mapped from the class archive when there is one (lakehouse.class_archive).
            DRIVER_JAVA_OPTIONS: " ".join((f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.as_uri()}",
                                           DRIVER_GC, *class_archive.java_options(), *options.java_options)),
        } | delta_conf()
        jars = [jar for jar in (conf.get(SPARK_JARS_CONF), replay_jar()) if jar]
        if jars:
            conf[SPARK_JARS_CONF] = ",".join(jars)
    else:
        conf.pop(DATAFRAME_DEBUGGING)  # a setting of the classic client; a Connect server refuses to change it
        if options.shuffle_partitions is not None:
            conf[SHUFFLE_PARTITIONS] = str(options.shuffle_partitions)
        if options.driver_memory is not None:
            raise ValueError("driver_memory cannot be set for Spark Connect: the server owns the JVM")
    return conf | options.extra_conf


def local_session_conf(options: SparkOptions, master: str) -> dict[str, str]:
    """The whole configuration of a driver JVM started on this machine for ``master`` (a session of this process,
    or the resident server of ``lakehouse.resident_server``)."""
    conf = session_conf(options, local=True)
    if master.startswith("local"):
        # Machines whose hostname does not resolve (containers, CI) otherwise fail to bind the driver.
        conf = {"spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1"} | conf
    return conf


def is_connect(spark: SparkSession) -> bool:
    """A Spark Connect session (its class is pyspark's Connect client, not the classic one)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def get_spark(options: SparkOptions | None = None) -> SparkSession:
    """Return the (shared) SparkSession: Spark Connect when a remote URL is given, else a local JVM.

    `spark.driver.memory` and the other static settings only take effect when this call starts the JVM;
    a later call without an explicit master returns the running session unchanged (but for the settings
    it names explicitly), so commands called inside a notebook or a test run keep its configuration.
    """
    options = options or SparkOptions()
    remote = options.remote or os.environ.get(SPARK_REMOTE_ENV)
    if remote:
        builder = SparkSession.builder.remote(remote).appName(options.app_name)
        for key, value in session_conf(options, local=False).items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        if options.announce:
            announce_engine(spark)
        return spark

    active = SparkSession.getActiveSession()
    if active is not None and options.master is None:
        # A session is already running in this process (a notebook, a test run, a command called from
        # Python): use it as it is configured, changing only what the caller asked for explicitly.
        if options.shuffle_partitions is not None:
            active.conf.set(SHUFFLE_PARTITIONS, str(options.shuffle_partitions))
        for key, value in options.extra_conf.items():
            active.conf.set(key, value)
        return active

    master = options.master or os.environ.get(SPARK_MASTER_ENV) or DEFAULT_MASTER
    java_line = require_java()
    # Python workers must run this interpreter (it has pyspark/pyarrow), not whatever `python3` is on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName(options.app_name)
    conf = local_session_conf(options, master)
    for key, value in conf.items():
        builder = builder.config(key, value)
    try:
        _launch_quiet_gateway(master, options.app_name, conf)
        spark = builder.getOrCreate()
    except PySparkRuntimeError as error:
        if error.getCondition() != "JAVA_GATEWAY_EXITED":
            raise
        raise SparkUnavailableError(
            f"The Spark JVM did not start ({java_line}); check the output above, JAVA_HOME and `make setup`."
        ) from error
    spark.sparkContext.setLogLevel("WARN")
    if options.announce:
        announce_engine(spark)
    return spark


def _launch_quiet_gateway(master: str, app_name: str, conf: dict[str, str]) -> None:
    """Start the driver JVM as PySpark would, its stderr passed through a thread that drops the JVM's start-up
    noise (``_JVM_NOISE``) and forwards everything else; a JVM already running is left as it is."""
    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    spark_conf = SparkConf(loadDefaults=False).setMaster(master).setAppName(app_name).setAll(list(conf.items()))
    read_end, write_end = os.pipe()
    try:
        gateway = launch_gateway(spark_conf, popen_kwargs={"stderr": write_end})
    finally:
        os.close(write_end)  # the JVM holds its own copy

    # the stderr the JVM would have inherited: what fd 2 is now (a later redirection of fd 2, e.g. a test's
    # capture, does not receive the JVM's lines, as it would not without this filter)
    target = os.dup(2)

    def forward() -> None:
        with os.fdopen(read_end, "rb") as lines:
            for line in lines:
                if not line.rstrip().startswith(_JVM_NOISE):
                    with contextlib.suppress(OSError):
                        os.write(target, line)

    threading.Thread(target=forward, name="spark-jvm-stderr", daemon=True).start()
    SparkContext._gateway = gateway
    SparkContext._jvm = gateway.jvm


_announced: set[str] = set()


def lake_engine(spark: SparkSession) -> str:
    """The engine the lake uses with this session: delta-rs when asked for or when the session has no
    delta-spark, else delta-spark."""
    if requested_engine() == DELTA_RS:
        return DELTA_RS
    return DELTA_SPARK if has_delta_spark(spark) else DELTA_RS


def announce_engine(spark: SparkSession) -> None:
    """One line on stderr, once per process, naming the lake engine (and why, for the fallback)."""
    engine = lake_engine(spark)
    if engine in _announced:
        return
    _announced.add(engine)
    if engine == DELTA_SPARK:
        line = f"lake engine: delta-spark {DELTA_VERSION} on Spark {spark.version}"
    elif requested_engine() == DELTA_RS:
        line = f"lake engine: delta-rs ({ENGINE_ENV}={DELTA_RS})"
    elif installed() is None:
        line = f"lake engine: delta-rs ({missing_reason(jars_dir())})"
    else:
        line = "lake engine: delta-rs (the Spark session has no delta-spark)"
    print(line, file=sys.stderr)


_HAS_DELTA: dict[int, tuple[SparkSession, bool]] = {}


def has_delta_spark(spark: SparkSession) -> bool:
    """True only when this session can use delta-spark itself (its SQL extension, and its JVM classes where
    this side has the JVM). A local session gets them from the jars ``make setup`` fetched; a Spark Connect
    server or a cluster started with ``--packages io.delta:delta-spark_2.13:4.0.0`` and the extension too.
    """
    known = _HAS_DELTA.get(id(spark))
    if known is None or known[0] is not spark:
        known = _HAS_DELTA[id(spark)] = (spark, _probe_delta_spark(spark))
    return known[1]


def _probe_delta_spark(spark: SparkSession) -> bool:
    extensions = spark.conf.get("spark.sql.extensions", "") or ""
    if DELTA_EXTENSION not in extensions:
        return False
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        return True  # Spark Connect: the server has the extension configured, so it has the jars
    try:
        # The context class loader is the one that sees jars added with --packages/--jars.
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName("io.delta.tables.DeltaTable", False, loader)
    except Py4JJavaError:
        return False
    return True
