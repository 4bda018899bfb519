"""lakehouse/class_archive.py: a command's driver JVM maps Spark's classes from the class archive ``make setup`` built,
and runs as before, printing nothing about it, when the archive is off, foreign or damaged.

Each check starts a driver JVM of its own in a child process (as a command does), with the JVM's class-loading log
on (``-Xlog:class+load``): a class mapped from a dynamic archive is logged with ``source: shared objects file
(top)``, one read from a jar with the jar's path."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

from lakehouse.class_archive import (
    ARCHIVE_ENV,
    OFF,
    archive_path,
    installation,
    java_options,
    launched_java,
    stamp,
    stamp_path,
)
from lakehouse.class_archive_build import build, prune
from lakehouse.jars import SPARK_HOME
from lakehouse.spark import java_available
from tests.conftest import REPO_ROOT

# A driver as a command starts it (``get_spark``: the session's configuration with the archive's options), its JVM
# also logging where each class came from.
DRIVER = """
import sys
from lakehouse.spark import DRIVER_JAVA_OPTIONS, SparkOptions, get_spark, session_conf
options = session_conf(SparkOptions(), local=True)[DRIVER_JAVA_OPTIONS]
print(options, file=sys.stderr)
spark = get_spark(SparkOptions(java_options=(f"-Xlog:class+load=info:file={sys.argv[1]}",)))
print(spark.range(5).selectExpr("sum(id)").first()[0])
"""
SPARK_JARS = (SPARK_HOME / "jars").resolve()
FROM_ARCHIVE = "shared objects file (top)"  # a class's source, as the log names a dynamic archive


def _driver(tmp_path: Path, env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """The driver's run and, for each class it loaded from Spark's class path (pyspark's ``jars/``) or the archive,
    where from (the others: the JDK's own, the jars a session adds at run time, classes made at run time)."""
    log = tmp_path / "classes.log"
    done = subprocess.run([sys.executable, "-c", DRIVER, str(log)], capture_output=True, text=True, timeout=600,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)} | env, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    sources = dict(re.findall(r"\] (\S+) source: (.*)$", log.read_text(), re.MULTILINE))
    return done, {name: source for name, source in sources.items()
                  if source == FROM_ARCHIVE or f"{SPARK_JARS}/" in source}


def installed() -> tuple[Path, Path]:
    """This machine's java and Spark, as an archive's stamp names them."""
    found = installation()
    assert found is not None, "no java"
    return found


@pytest.fixture(scope="module")
def archive() -> Path:
    if java_available() is None:
        pytest.skip("no Java: no driver JVM to map an archive")
    line = build()  # `make setup` built it: "(cached)"
    path = archive_path()
    assert path is not None and path.is_file(), line
    return path


def test_a_driver_maps_sparks_classes_from_the_archive(archive: Path, tmp_path: Path) -> None:
    done, sources = _driver(tmp_path, {})
    assert done.stdout == "10\n"
    assert f"-XX:SharedArchiveFile={archive}" in done.stderr.splitlines()[0]
    assert sources["org.apache.spark.SparkContext"] == FROM_ARCHIVE
    # all but what the JDK cannot archive (janino's classes come from a signed jar)
    mapped = [name for name, source in sources.items() if source == FROM_ARCHIVE]
    assert len(mapped) > 0.9 * len(sources), (len(mapped), len(sources))


@pytest.mark.parametrize("setting", [OFF, "truncated", "unstamped"])
def test_a_driver_without_a_whole_archive_runs_as_before_and_says_nothing(
        archive: Path, tmp_path: Path, setting: str) -> None:
    """Off; an archive cut short after its build (the JVM would crash mapping it); one without the stamp a finished
    build leaves (a copy, or a build that stopped before its end)."""
    if setting != OFF:
        copy = tmp_path / "copy.jsa"
        shutil.copyfile(archive, copy)
        if setting == "truncated":
            shutil.copyfile(stamp_path(archive), stamp_path(copy))
            os.utime(copy, ns=(archive.stat().st_atime_ns, archive.stat().st_mtime_ns))
            # the copy is the archive as built, until it is cut
            assert stamp_path(copy).read_text() == stamp(copy, installed())
            with copy.open("r+b") as cut:
                cut.truncate(copy.stat().st_size // 2)
            os.utime(copy, ns=(archive.stat().st_atime_ns, archive.stat().st_mtime_ns))
        setting = str(copy)
    done, sources = _driver(tmp_path, {ARCHIVE_ENV: setting})
    assert done.stdout == "10\n"
    assert "-XX:SharedArchiveFile" not in done.stderr.splitlines()[0]
    assert sources["org.apache.spark.SparkContext"] == f"file:{SPARK_JARS}/spark-core_2.13-{pyspark.__version__}.jar"
    assert FROM_ARCHIVE not in sources.values()
    assert not re.search(r"cds|shared archive|SharedArchiveFile", done.stdout + "\n".join(
        done.stderr.splitlines()[1:]), re.IGNORECASE), done.stderr[-3000:]


def test_an_archive_of_another_class_path_maps_no_spark_class_and_says_nothing(tmp_path: Path) -> None:
    """A whole archive of another class path (here: of the JDK's alone, as a stale one after pyspark was reinstalled
    would be): the JVM maps no class of Spark's from it, and says nothing."""
    if java_available() is None:
        pytest.skip("no Java")
    foreign = tmp_path / "foreign.jsa"
    java = str(launched_java())
    subprocess.run([java, f"-XX:ArchiveClassesAtExit={foreign}", "-Xlog:cds=off", "-version"], capture_output=True,
                   check=True, timeout=120)
    foreign_stamp = stamp_path(foreign)
    foreign_stamp.write_text(stamp(foreign, installed()))
    done, sources = _driver(tmp_path, {ARCHIVE_ENV: str(foreign)})
    assert done.stdout == "10\n"
    assert f"-XX:SharedArchiveFile={foreign}" in done.stderr.splitlines()[0]
    # the JDK's classes it holds may be mapped; none of Spark's is in it
    assert sources["org.apache.spark.SparkContext"] == f"file:{SPARK_JARS}/spark-core_2.13-{pyspark.__version__}.jar"
    assert not [name for name, source in sources.items() if name.startswith("org.apache.spark.")
                and source == FROM_ARCHIVE]
    assert not re.search(r"cds|shared archive", done.stdout + "\n".join(done.stderr.splitlines()[1:]),
                         re.IGNORECASE), done.stderr[-3000:]


def test_off_names_no_archive(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(ARCHIVE_ENV, OFF)
    assert archive_path() is None and java_options() == ()
    assert build() == f"class archive: none ({ARCHIVE_ENV}={OFF} or no java)"
    chosen = tmp_path / "chosen.jsa"
    monkeypatch.setenv(ARCHIVE_ENV, str(chosen))
    assert archive_path() == chosen and java_options() == ()  # not built: the JVM is not asked for it
    chosen.write_bytes(b"x" * 10)
    assert java_options() == ()  # no stamp: not a finished build
    stamp_path(chosen).write_text(stamp(chosen, installed()))
    assert java_options() == (f"-XX:SharedArchiveFile={chosen}", "-Xlog:cds=off", "-Xlog:cds+dynamic=off")


def test_a_build_removes_the_archives_of_installations_gone(tmp_path: Path) -> None:
    """Each clone's Spark has an archive of its own in the cache: a deleted clone's goes at the next build."""
    gone_spark, kept = tmp_path / "deleted-clone" / "pyspark", tmp_path / "spark-4.0.1-kept.jsa"
    gone = tmp_path / "spark-4.0.1-gone.jsa"
    for path, spark_home in ((kept, installed()[1]), (gone, gone_spark)):
        path.write_bytes(b"archive")
        stamp_path(path).write_text(stamp(path, (installed()[0], spark_home)))
    assert prune(tmp_path) == "; 1 of installations gone removed"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spark-4.0.1-kept.jsa", "spark-4.0.1-kept.jsa.built"]
    assert prune(tmp_path) == ""
