"""JVM jars fetched once into a cache: the lake engine's (delta-spark with delta-storage, spark-avro) and, for
the tests that make Kafka the referee of the replay, Kafka's own (``kafka_2.13`` with its runtime dependencies).

`scripts/bootstrap.sh` runs ``python -m lakehouse.jars fetch spark kafka-4.4.0 kafka-3.9.2``. Each set is
resolved the ecosystem's own way first: Spark's ``--packages`` (Ivy, as ``delta.configure_spark_with_delta_pip``
does). When that cannot reach a repository, Maven resolves them (``dependency:copy-dependencies`` of a two-line
POM, with the machine's Maven settings). Each set's jars land in their own directory with a manifest. Every Spark
session passes the lake engine's as ``spark.jars``: a session never resolves anything, so it starts as fast
offline as online. Kafka's are a ``java -cp`` of their own (tests/referee), never on Spark's classpath.

Without the lake engine's jars (an air-gapped machine), every command runs on the delta-rs engine instead
(``lakehouse.engine``); without Kafka's, the tests that need them skip.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pyspark

SPARK_VERSION = pyspark.__version__
SPARK_HOME = Path(pyspark.__file__).resolve().parent  # the Spark that pyspark ships: its launchers and jars
SPARK_SUBMIT = SPARK_HOME / "bin" / "spark-submit"
SCALA_BINARY = "2.13"
DELTA_VERSION = "4.0.0"  # the delta-spark release built for Spark 4.0.x; the PyPI package of the same version
# Kafka releases whose own metadata fold referees the replay: the newest, and the last 3.x (the last with ZooKeeper
# migration, whose MetadataVersion stops at 3.9). Each gets its own cache directory: two Kafkas never share one.
KAFKA_VERSIONS = ("4.4.0", "3.9.2")
JARS_ENV = "KRAFT_REPLAY_JARS"
SCALA_LIBRARY = "scala-library"
MANIFEST = "jars.txt"


@dataclass(frozen=True)
class JarSet:
    """What to fetch into one cache directory, and how to tell the cache is complete."""

    name: str  # the cache directory's name, and how ``python -m lakehouse.jars`` calls it
    packages: tuple[str, ...]  # group:artifact:version, resolved with their runtime dependencies
    required: tuple[str, ...]  # a jar each package must bring: the manifest is complete only when all are there
    drop_spark_own: bool  # True for jars that join Spark's classpath: Spark's own libraries stay Spark's
    label: str  # for people: "delta-spark 4.0.0, spark-avro 4.0.1"
    env: str | None = None  # a variable that names the directory instead of the cache
    scala: bool = False  # runs Scala on its own classpath: needs scala-library, which Spark's resolver leaves out


SPARK_JARS = JarSet(
    name=f"spark-{SPARK_VERSION}",
    packages=(f"io.delta:delta-spark_{SCALA_BINARY}:{DELTA_VERSION}",
              f"org.apache.spark:spark-avro_{SCALA_BINARY}:{SPARK_VERSION}"),
    required=(f"delta-spark_{SCALA_BINARY}-{DELTA_VERSION}.jar", f"delta-storage-{DELTA_VERSION}.jar",
              f"spark-avro_{SCALA_BINARY}-{SPARK_VERSION}.jar"),
    drop_spark_own=True, label=f"delta-spark {DELTA_VERSION}, spark-avro {SPARK_VERSION}", env=JARS_ENV)


def kafka_jars(version: str) -> JarSet:
    """Kafka's broker jar and everything it runs with (its own classpath: nothing is dropped for Spark)."""
    return JarSet(
        name=f"kafka-{version}", packages=(f"org.apache.kafka:kafka_{SCALA_BINARY}:{version}",),
        required=tuple(f"{artifact}-{version}.jar" for artifact in (
            f"kafka_{SCALA_BINARY}", "kafka-metadata", "kafka-raft", "kafka-server-common", "kafka-clients")),
        drop_spark_own=False, label=f"Kafka {version}", scala=True)


def kafka_tools_jars(version: str) -> JarSet:
    """Kafka's command-line tools (``kafka-tools``: ``DumpLogSegments`` moved there from ``kafka_2.13`` in 4.0)
    with everything they run with: the tests compare ``kafka-dump-log --cluster-metadata-decoder`` with ours."""
    return JarSet(
        name=f"kafka-tools-{version}", packages=(f"org.apache.kafka:kafka-tools:{version}",),
        required=tuple(f"{artifact}-{version}.jar" for artifact in ("kafka-tools", "kafka-metadata", "kafka-clients")),
        drop_spark_own=False, label=f"Kafka {version} tools")


# Kafka's metadata shell, the yardstick of a first answer (bench/bench_first_answer.py): Maven Central serves
# ``kafka-shell`` up to 3.9.0 (4.x's is not published there).
KAFKA_SHELL_VERSION = "3.9.0"


def kafka_shell_jars(version: str = KAFKA_SHELL_VERSION) -> JarSet:
    """``kafka-metadata-shell``'s jar (``org.apache.kafka.shell.MetadataShell``) with everything it runs with."""
    return JarSet(
        name=f"kafka-shell-{version}", packages=(f"org.apache.kafka:kafka-shell:{version}",),
        required=tuple(f"{artifact}-{version}.jar" for artifact in ("kafka-shell", "kafka-metadata", "kafka-clients")),
        drop_spark_own=False, label=f"Kafka {version} metadata shell")


# Kafka releases whose DumpLogSegments lives in kafka-tools (3.x has it in kafka_2.13, as kafka.tools.DumpLogSegments)
KAFKA_TOOLS_VERSIONS = tuple(v for v in KAFKA_VERSIONS if not v.startswith("3."))
JAR_SETS: dict[str, JarSet] = {SPARK_JARS.name: SPARK_JARS, "spark": SPARK_JARS,
                               **{f"kafka-{v}": kafka_jars(v) for v in KAFKA_VERSIONS},
                               **{f"kafka-tools-{v}": kafka_tools_jars(v) for v in KAFKA_TOOLS_VERSIONS},
                               f"kafka-shell-{KAFKA_SHELL_VERSION}": kafka_shell_jars()}


class JarsUnavailableError(RuntimeError):
    """Neither Spark's resolver nor Maven could get the jars."""


def jars_dir(jar_set: JarSet = SPARK_JARS) -> Path:
    """The set's variable when set (``$KRAFT_REPLAY_JARS`` for Spark's), else
    ``$XDG_CACHE_HOME/kraft-replay/jars/<name>``: outside the clone, so every clone shares one download."""
    configured = os.environ.get(jar_set.env) if jar_set.env else None
    if configured:
        return Path(configured).expanduser()
    return jars_cache() / jar_set.name


def jars_cache() -> Path:
    """``$XDG_CACHE_HOME/kraft-replay/jars``: the directory of every cached set (and of the replay's own jar)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kraft-replay" / "jars"


@dataclass(frozen=True)
class Jars:
    """The fetched jars of one directory (absolute paths), in the manifest's order."""

    directory: Path
    paths: tuple[Path, ...]

    @property
    def spark_jars(self) -> str:
        """The value of ``spark.jars``."""
        return ",".join(str(path) for path in self.paths)

    @property
    def classpath(self) -> str:
        """The value of ``java -cp`` / ``javac -cp``."""
        return os.pathsep.join(str(path) for path in self.paths)


def installed(directory: Path | None = None, jar_set: JarSet = SPARK_JARS) -> Jars | None:
    """The jars of the cache when its manifest is complete and every file it names exists, else None."""
    directory = directory or jars_dir(jar_set)
    manifest = directory / MANIFEST
    if not manifest.is_file():
        return None
    names = [line.strip() for line in manifest.read_text().splitlines() if line.strip()]
    paths = tuple(directory / name for name in names)
    if not all(path.is_file() for path in paths) or not all(any(p.name.endswith(r) for p in paths)
                                                           for r in jar_set.required):
        return None
    if jar_set.scala and SCALA_LIBRARY not in {_artifact(_maven_name(p.name)) for p in paths}:
        return None  # fetched by Spark's resolver before it was known to leave Scala out: fetched again
    return Jars(directory, paths)


def missing_reason(directory: Path | None = None, jar_set: JarSet = SPARK_JARS) -> str:
    """One line saying why there are no jars and how to get them."""
    directory = directory or jars_dir(jar_set)
    what = "delta-spark/spark-avro" if jar_set is SPARK_JARS else jar_set.label
    return (f"{what} jars not found in {directory}: run `make setup` "
            f"(or `python -m lakehouse.jars fetch {jar_set.name}`) where Maven Central is reachable")


def _resolve_with_spark(packages: tuple[str, ...], target: Path, work: Path) -> list[Path]:
    """Spark's own resolver (Ivy, ``--packages``): a driver that runs an empty script once the jars are there."""
    script = work / "empty.py"
    script.write_text("")
    ivy = work / "ivy"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_HOME=str(SPARK_HOME))
    result = subprocess.run(
        [str(SPARK_SUBMIT), "--master", "local[1]", "--conf", f"spark.jars.ivy={ivy}",
         "--packages", ",".join(packages), str(script)],
        capture_output=True, text=True, env=env, timeout=900, check=False)
    fetched = sorted((ivy / "jars").glob("*.jar")) if (ivy / "jars").is_dir() else []
    if result.returncode != 0 or not fetched:
        raise JarsUnavailableError(_last_error(result.stderr or result.stdout))
    for jar in fetched:
        shutil.copyfile(jar, target / jar.name)
    return [target / jar.name for jar in fetched]


_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kraft-replay</groupId><artifactId>jars</artifactId><version>1</version>
  <dependencies>{dependencies}</dependencies>
</project>
"""


def _resolve_with_maven(packages: tuple[str, ...], target: Path, work: Path) -> list[Path]:
    """Maven with the machine's settings: the packages and their runtime dependencies (for delta-spark and
    spark-avro, Spark's own are ``provided`` in their POMs, so only what Spark lacks comes along)."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarsUnavailableError("mvn not found")
    dependencies = "".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
        for g, a, v in (package.split(":") for package in packages))
    (work / "pom.xml").write_text(_POM.format(dependencies=dependencies))
    before = set(target.glob("*.jar"))
    result = subprocess.run(
        [mvn, "-q", "-B", "-f", str(work / "pom.xml"), "dependency:copy-dependencies", "-DincludeScope=runtime",
         f"-DoutputDirectory={target}"], capture_output=True, text=True, timeout=900, check=False)
    if result.returncode != 0:
        raise JarsUnavailableError(_last_error(result.stdout + result.stderr))
    return sorted(set(target.glob("*.jar")) | before)


def _not_in_spark(jars: list[Path]) -> list[Path]:
    """The resolvers also bring what Spark ships itself (scala-library, antlr4-runtime, xz), at times in
    another version: two of one library on a classpath is a conflict waiting to happen."""
    spark_own = {_artifact(jar.name) for jar in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    return [jar for jar in jars if _artifact(_maven_name(jar.name)) not in spark_own]


def _maven_name(jar_name: str) -> str:
    """"org.scala-lang_scala-library-2.13.18.jar" (Ivy) -> "scala-library-2.13.18.jar" (Maven)."""
    return jar_name.split("_", 1)[-1] if _ivy_name(jar_name) else jar_name


def _spark_scala_library(target: Path) -> list[Path]:
    """Spark's own scala-library copied into ``target``: the Scala a set gets when only Spark's resolver works."""
    own = sorted((Path(pyspark.__file__).parent / "jars").glob(f"{SCALA_LIBRARY}-*.jar"))
    for jar in own:
        shutil.copyfile(jar, target / jar.name)
    return [target / jar.name for jar in own]


def _ivy_name(jar_name: str) -> bool:
    """Ivy names a jar "<organisation>_<artifact>-<version>.jar" (Maven: "<artifact>-<version>.jar")."""
    return "." in jar_name.split("_", 1)[0] and "_" in jar_name


def _artifact(jar_name: str) -> str:
    """"scala-library-2.13.13.jar" -> "scala-library": the name without its version."""
    return re.sub(r"-\d[^-]*(-[A-Za-z0-9.]+)?\.jar$", "", jar_name)


def _last_error(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if "error" in line.lower() or "unresolved" in line.lower()]
    return (lines[-1] if lines else (output.strip().splitlines() or ["no output"])[-1])[:300]


def fetch(directory: Path | None = None, jar_set: JarSet = SPARK_JARS) -> tuple[Jars, str]:
    """Make the cache complete (nothing to do when it is); returns the jars and how they were obtained."""
    directory = directory or jars_dir(jar_set)
    present = installed(directory, jar_set)
    if present is not None:
        return present, "cached"
    directory.mkdir(parents=True, exist_ok=True)
    errors = []
    resolvers = [("Spark's resolver (--packages)", _resolve_with_spark), ("Maven", _resolve_with_maven)]
    if jar_set.scala:  # Spark's resolver excludes scala-library from every resolution: Maven first
        resolvers.reverse()
    for how, resolve in resolvers:
        with tempfile.TemporaryDirectory(prefix="kraft-jars-") as work:
            staging = Path(work) / "jars"
            staging.mkdir()
            try:
                jars = resolve(jar_set.packages, staging, Path(work))
                if jar_set.scala and resolve is _resolve_with_spark:
                    jars = [*jars, *_spark_scala_library(staging)]
                if jar_set.drop_spark_own:
                    jars = _not_in_spark(jars)
            except (JarsUnavailableError, OSError, subprocess.TimeoutExpired) as error:
                errors.append(f"{how}: {error}")
                continue
            for jar in jars:
                shutil.copyfile(jar, directory / jar.name)
            # the manifest last: a cache interrupted before it is simply fetched again
            (directory / MANIFEST).write_text("".join(f"{jar.name}\n" for jar in sorted(jars)))
            found = installed(directory, jar_set)
            if found is not None:
                return found, how
            errors.append(f"{how}: resolved {len(jars)} jars but not {', '.join(jar_set.required)}")
    raise JarsUnavailableError("; ".join(errors))


def main(argv: list[str]) -> int:
    """``python -m lakehouse.jars fetch [SET...]`` / ``path [SET]`` (SET: ``spark``, the default, or
    ``kafka-<version>``): one line out per set, exit 0 also when offline (the delta-rs engine works without
    Spark's jars, and the Kafka-referee tests skip without Kafka's), 1 only on a usage error."""
    command, names = (argv[0], argv[1:]) if argv else ("fetch", [])
    unknown = [name for name in names if name not in JAR_SETS]
    if command not in ("fetch", "path") or unknown or (command == "path" and len(names) > 1):
        print(f"usage: python -m lakehouse.jars [fetch [SET...]|path [SET]], SET one of "
              f"{', '.join(sorted(JAR_SETS))}", file=sys.stderr)
        return 1
    jar_sets = [JAR_SETS[name] for name in names] or [SPARK_JARS]
    if command == "path":
        present = installed(jar_set=jar_sets[0])
        print("" if present is None else present.spark_jars if jar_sets[0] is SPARK_JARS else present.classpath)
        return 0
    for jar_set in jar_sets:
        try:
            jars, how = fetch(jar_set=jar_set)
        except JarsUnavailableError as error:
            consequence = ("the lake engine will be delta-rs" if jar_set is SPARK_JARS
                           else "the tests that need them will skip")
            print(f"jars: {jar_set.label} not available ({error}); {consequence}")
            continue
        print(f"jars: {len(jars.paths)} in {jars.directory} ({how}): {jar_set.label}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
