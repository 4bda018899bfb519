"""The jar of the replay's own JVM functions: the Java sources under ``replay/jvm``, compiled against the Spark that
pyspark ships and put on every session's ``spark.jars`` (``lakehouse.spark``), so its executors run them.

A fold that needs the state before each event (``PartitionRegistration.merge``) is one sequential pass per entity in
the JVM, where Spark's windows need several passes and rounds (BENCHMARKS.md, issue 42). The jar is built once into
the jar cache (``lakehouse.jars.jars_cache``), named by the digest of its sources and of Spark's version, by
``make setup`` or by the first session that finds it missing; building needs a JDK's ``javac``.

``python -m lakehouse.replay_jar`` builds it (nothing to do when it is there) and prints its path.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from lakehouse.jars import SPARK_HOME, SPARK_VERSION, jars_cache

# The sources, found by path: the replay's rules live with the replay, the session only needs their jar.
SOURCES = Path(__file__).resolve().parents[1] / "replay" / "jvm"
JAR_PREFIX = "kraft-replay-jvm"
# What the sources compile against: Spark's Java UDF interfaces and rows, and Scala's collections.
COMPILE_AGAINST = ("spark-sql-api_*.jar", "scala-library-*.jar")
JAVA_RELEASE = "17"


class ReplayJarError(RuntimeError):
    """The replay's JVM functions cannot be built: no sources, no javac, or javac refused them."""


def _sources() -> list[Path]:
    return sorted(SOURCES.rglob("*.java"))


def jar_path() -> Path:
    """Where the jar of the current sources is (or will be)."""
    digest = hashlib.sha256(SPARK_VERSION.encode())
    for source in _sources():
        digest.update(source.relative_to(SOURCES).as_posix().encode())
        digest.update(source.read_bytes())
    return jars_cache() / f"{JAR_PREFIX}-{digest.hexdigest()[:16]}.jar"


def built() -> Path | None:
    """The jar when it is built for the current sources, else None."""
    path = jar_path()
    return path if path.is_file() else None


def _javac() -> str:
    java_home = os.environ.get("JAVA_HOME")
    javac = os.path.join(java_home, "bin", "javac") if java_home else shutil.which("javac")
    if not javac or not os.access(javac, os.X_OK):
        raise ReplayJarError("javac not found: the replay's JVM functions are built with a JDK 17+ "
                             "(install openjdk-17-jdk-headless, or set JAVA_HOME to a JDK), then run `make setup`")
    return javac


def build() -> Path:
    """Build the jar unless it is there; returns its path. Safe to run at once from several processes: each
    builds apart and the first to finish puts the jar in place."""
    path = jar_path()
    if path.is_file():
        return path
    sources = _sources()
    if not sources:
        raise ReplayJarError(f"no Java sources under {SOURCES}")
    classpath = os.pathsep.join(str(jar) for pattern in COMPILE_AGAINST
                                for jar in sorted((SPARK_HOME / "jars").glob(pattern)))
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".build-") as work:
        classes = Path(work) / "classes"
        result = subprocess.run(
            [_javac(), "--release", JAVA_RELEASE, "-nowarn", "-cp", classpath, "-d", str(classes),
             *map(str, sources)], capture_output=True, text=True, timeout=300, check=False)
        if result.returncode != 0:
            raise ReplayJarError(f"javac refused {SOURCES}:\n{(result.stderr or result.stdout).strip()}")
        staged = Path(work) / path.name
        with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as jar:
            jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n\r\n")
            for compiled in sorted(classes.rglob("*.class")):
                jar.write(compiled, compiled.relative_to(classes).as_posix())
        os.replace(staged, path)
    return path


def main() -> int:
    try:
        print(build())
    except ReplayJarError as error:
        print(f"replay jar: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
