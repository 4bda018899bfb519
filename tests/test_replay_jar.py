"""The replay's own jar (``lakehouse.replay_jar``): built from ``replay/jvm`` into the jar cache once, named by its
sources, on every session's ``spark.jars``; a machine without javac is told what to install."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from lakehouse import replay_jar
from lakehouse.spark import SPARK_JARS_CONF, SparkOptions, local_session_conf


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "kraft-replay" / "jars"


@pytest.mark.skipif(shutil.which("javac") is None, reason="no javac on this machine: the jar cannot be built")
def test_the_jar_is_built_once_into_the_cache_with_the_fold(cache: Path) -> None:
    path = replay_jar.build()
    assert path.parent == cache and path.name.startswith(replay_jar.JAR_PREFIX) and path.suffix == ".jar"
    with zipfile.ZipFile(path) as jar:
        assert "kraftreplay/fold/PartitionFold.class" in jar.namelist()
    built_at = path.stat().st_mtime_ns
    assert replay_jar.build() == path and path.stat().st_mtime_ns == built_at  # nothing to do the second time
    assert replay_jar.built() == path
    assert str(path) in local_session_conf(SparkOptions(), "local[2]")[SPARK_JARS_CONF].split(",")


def test_the_jar_is_named_by_its_sources(cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sources = tmp_path / "jvm"
    shutil.copytree(replay_jar.SOURCES, sources)
    monkeypatch.setattr(replay_jar, "SOURCES", sources)
    before = replay_jar.jar_path()
    java = next(sources.rglob("PartitionFold.java"))
    java.write_text(java.read_text() + "\n// changed\n")
    assert replay_jar.jar_path() != before and replay_jar.jar_path().parent == cache


def test_no_javac_says_what_to_install(cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "a-jre"))  # no bin/javac there
    with pytest.raises(replay_jar.ReplayJarError, match=r"javac not found: .*openjdk-17-jdk-headless"):
        replay_jar.build()
    assert replay_jar.built() is None
    jars = local_session_conf(SparkOptions(), "local[2]").get(SPARK_JARS_CONF, "")
    assert replay_jar.JAR_PREFIX not in jars  # a session still starts: only the replay needs the jar
