"""The JVM jars the lake engine needs (delta-spark with delta-storage, spark-avro), fetched once into a cache.

`scripts/bootstrap.sh` runs ``python -m lakehouse.jars fetch``. It resolves the packages the ecosystem's own way
first: Spark's ``--packages`` (Ivy, as ``delta.configure_spark_with_delta_pip`` does). When that cannot reach a
repository, Maven resolves them (``dependency:copy-dependencies`` of a two-line POM, with the machine's Maven
settings). The jars land in one directory with a manifest, and every session passes them as ``spark.jars``: a
session never resolves anything, so it starts as fast offline as online.

Without the jars (an air-gapped machine), every command runs on the delta-rs engine instead
(``lakehouse.engine``).
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
SCALA_BINARY = "2.13"
DELTA_VERSION = "4.0.0"  # the delta-spark release built for Spark 4.0.x; the PyPI package of the same version
PACKAGES: tuple[str, ...] = (
    f"io.delta:delta-spark_{SCALA_BINARY}:{DELTA_VERSION}",
    f"org.apache.spark:spark-avro_{SCALA_BINARY}:{SPARK_VERSION}",
)
JARS_ENV = "KRAFT_REPLAY_JARS"
MANIFEST = "jars.txt"
# A jar each package must bring: the manifest is complete only when all are there.
REQUIRED = (f"delta-spark_{SCALA_BINARY}-{DELTA_VERSION}.jar", f"delta-storage-{DELTA_VERSION}.jar",
            f"spark-avro_{SCALA_BINARY}-{SPARK_VERSION}.jar")


class JarsUnavailableError(RuntimeError):
    """Neither Spark's resolver nor Maven could get the jars."""


def jars_dir() -> Path:
    """``$KRAFT_REPLAY_JARS``, else ``$XDG_CACHE_HOME/kraft-replay/jars/spark-<version>`` (shared by clones)."""
    configured = os.environ.get(JARS_ENV)
    if configured:
        return Path(configured).expanduser()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "kraft-replay" / "jars" / f"spark-{SPARK_VERSION}"


@dataclass(frozen=True)
class Jars:
    """The fetched jars of one directory (absolute paths), in the manifest's order."""

    directory: Path
    paths: tuple[Path, ...]

    @property
    def spark_jars(self) -> str:
        """The value of ``spark.jars``."""
        return ",".join(str(path) for path in self.paths)


def installed(directory: Path | None = None) -> Jars | None:
    """The jars of the cache when its manifest is complete and every file it names exists, else None."""
    directory = directory or jars_dir()
    manifest = directory / MANIFEST
    if not manifest.is_file():
        return None
    names = [line.strip() for line in manifest.read_text().splitlines() if line.strip()]
    paths = tuple(directory / name for name in names)
    if not all(path.is_file() for path in paths) or not all(any(p.name.endswith(r) for p in paths)
                                                           for r in REQUIRED):
        return None
    return Jars(directory, paths)


def missing_reason(directory: Path | None = None) -> str:
    """One line saying why there are no jars and how to get them."""
    directory = directory or jars_dir()
    return (f"delta-spark/spark-avro jars not found in {directory}: run `make setup` "
            f"(or `python -m lakehouse.jars fetch`) where Maven Central is reachable")


def _spark_submit() -> Path:
    return Path(pyspark.__file__).parent / "bin" / "spark-submit"


def _resolve_with_spark(target: Path, work: Path) -> list[Path]:
    """Spark's own resolver (Ivy, ``--packages``): a driver that runs an empty script once the jars are there."""
    script = work / "empty.py"
    script.write_text("")
    ivy = work / "ivy"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_HOME=str(Path(pyspark.__file__).parent))
    result = subprocess.run(
        [str(_spark_submit()), "--master", "local[1]", "--conf", f"spark.jars.ivy={ivy}",
         "--packages", ",".join(PACKAGES), str(script)],
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


def _resolve_with_maven(target: Path, work: Path) -> list[Path]:
    """Maven with the machine's settings: the packages and their runtime dependencies (Spark's own are
    ``provided`` in their POMs, so only what Spark lacks comes along)."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarsUnavailableError("mvn not found")
    dependencies = "".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
        for g, a, v in (package.split(":") for package in PACKAGES))
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
    return [jar for jar in jars if _artifact(jar.name.split("_", 1)[-1] if _ivy_name(jar.name) else jar.name)
            not in spark_own]


def _ivy_name(jar_name: str) -> bool:
    """Ivy names a jar "<organisation>_<artifact>-<version>.jar" (Maven: "<artifact>-<version>.jar")."""
    return "." in jar_name.split("_", 1)[0] and "_" in jar_name


def _artifact(jar_name: str) -> str:
    """"scala-library-2.13.13.jar" -> "scala-library": the name without its version."""
    return re.sub(r"-\d[^-]*(-[A-Za-z0-9.]+)?\.jar$", "", jar_name)


def _last_error(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if "error" in line.lower() or "unresolved" in line.lower()]
    return (lines[-1] if lines else (output.strip().splitlines() or ["no output"])[-1])[:300]


def fetch(directory: Path | None = None) -> tuple[Jars, str]:
    """Make the cache complete (nothing to do when it is); returns the jars and how they were obtained."""
    directory = directory or jars_dir()
    present = installed(directory)
    if present is not None:
        return present, "cached"
    directory.mkdir(parents=True, exist_ok=True)
    errors = []
    for how, resolve in (("Spark's resolver (--packages)", _resolve_with_spark), ("Maven", _resolve_with_maven)):
        with tempfile.TemporaryDirectory(prefix="kraft-jars-") as work:
            staging = Path(work) / "jars"
            staging.mkdir()
            try:
                jars = _not_in_spark(resolve(staging, Path(work)))
            except (JarsUnavailableError, OSError, subprocess.TimeoutExpired) as error:
                errors.append(f"{how}: {error}")
                continue
            for jar in jars:
                shutil.copyfile(jar, directory / jar.name)
            # the manifest last: a cache interrupted before it is simply fetched again
            (directory / MANIFEST).write_text("".join(f"{jar.name}\n" for jar in sorted(jars)))
            found = installed(directory)
            if found is not None:
                return found, how
            errors.append(f"{how}: resolved {len(jars)} jars but not {', '.join(REQUIRED)}")
    raise JarsUnavailableError("; ".join(errors))


def main(argv: list[str]) -> int:
    """``python -m lakehouse.jars fetch|path``: one line out, exit 0 also when offline (the delta-rs engine
    works without the jars), 1 only on a usage error."""
    command = argv[0] if argv else "fetch"
    if command == "path":
        present = installed()
        print(present.spark_jars if present else "")
        return 0
    if command != "fetch":
        print("usage: python -m lakehouse.jars [fetch|path]", file=sys.stderr)
        return 1
    try:
        jars, how = fetch()
    except JarsUnavailableError as error:
        print(f"jars: not available ({error}); the lake engine will be delta-rs")
        return 0
    print(f"jars: {len(jars.paths)} in {jars.directory} ({how}): delta-spark {DELTA_VERSION}, "
          f"spark-avro {SPARK_VERSION}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
