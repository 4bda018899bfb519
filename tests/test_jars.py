"""The jar sets and their cache (lakehouse.jars), without the network: naming, where the cache is, reading a
manifest, why jars are missing, the jar-name helpers and the command's usage and ``path``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lakehouse import jars
from lakehouse.jars import (
    JAR_SETS,
    KAFKA_TOOLS_VERSIONS,
    KAFKA_VERSIONS,
    MANIFEST,
    SPARK_JARS,
    SPARK_VERSION,
    Jars,
    installed,
    jars_dir,
    kafka_jars,
    kafka_shell_jars,
    kafka_tools_jars,
    main,
    missing_reason,
)


def test_jar_set_names_and_what_each_requires() -> None:
    assert SPARK_JARS.name == f"spark-{SPARK_VERSION}" and SPARK_JARS.env == "KRAFT_REPLAY_JARS"
    assert SPARK_JARS.packages == ("io.delta:delta-spark_2.13:4.0.0",
                                   f"org.apache.spark:spark-avro_2.13:{SPARK_VERSION}")
    assert SPARK_JARS.required == ("delta-spark_2.13-4.0.0.jar", "delta-storage-4.0.0.jar",
                                   f"spark-avro_2.13-{SPARK_VERSION}.jar")
    kafka = kafka_jars("3.9.2")
    assert (kafka.name, kafka.packages, kafka.label, kafka.drop_spark_own, kafka.env) == (
        "kafka-3.9.2", ("org.apache.kafka:kafka_2.13:3.9.2",), "Kafka 3.9.2", False, None)
    assert kafka.required == ("kafka_2.13-3.9.2.jar", "kafka-metadata-3.9.2.jar", "kafka-raft-3.9.2.jar",
                              "kafka-server-common-3.9.2.jar", "kafka-clients-3.9.2.jar")
    tools = kafka_tools_jars("4.4.0")
    assert (tools.name, tools.packages, tools.label) == (
        "kafka-tools-4.4.0", ("org.apache.kafka:kafka-tools:4.4.0",), "Kafka 4.4.0 tools")
    assert KAFKA_VERSIONS == ("4.4.0", "3.9.2") and KAFKA_TOOLS_VERSIONS == ("4.4.0",)
    shell = kafka_shell_jars()
    assert (shell.name, shell.packages, shell.label, shell.drop_spark_own) == (
        "kafka-shell-3.9.0", ("org.apache.kafka:kafka-shell:3.9.0",), "Kafka 3.9.0 metadata shell", False)
    assert shell.required == ("kafka-shell-3.9.0.jar", "kafka-metadata-3.9.0.jar", "kafka-clients-3.9.0.jar")
    assert sorted(JAR_SETS) == sorted(["spark", f"spark-{SPARK_VERSION}", "kafka-4.4.0", "kafka-3.9.2",
                                       "kafka-tools-4.4.0", "kafka-shell-3.9.0"])
    assert JAR_SETS["spark"] is SPARK_JARS


def test_jars_dir_the_variable_else_the_shared_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KRAFT_REPLAY_JARS", str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert jars_dir() == tmp_path / "mine"
    assert jars_dir(kafka_jars("4.4.0")) == tmp_path / "cache" / "kraft-replay" / "jars" / "kafka-4.4.0"
    monkeypatch.delenv("KRAFT_REPLAY_JARS")
    assert jars_dir() == tmp_path / "cache" / "kraft-replay" / "jars" / SPARK_JARS.name


# as Spark's resolver (Ivy) names it; Maven names it "scala-library-2.13.15.jar"
SCALA = "org.scala-lang_scala-library-2.13.15.jar"


def write_cache(directory: Path, names: list[str], manifest: list[str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        (directory / name).write_bytes(b"jar")
    (directory / MANIFEST).write_text("".join(f"{name}\n" for name in manifest) + "\n")


def test_installed_reads_a_complete_manifest_in_its_order(tmp_path: Path) -> None:
    kafka = kafka_jars("3.9.2")
    names = ["zstd-jni-1.5.6.jar", SCALA, *kafka.required]
    write_cache(tmp_path, names, names)
    found = installed(tmp_path, kafka)
    assert found == Jars(tmp_path, tuple(tmp_path / name for name in names))
    assert found.spark_jars == ",".join(str(tmp_path / name) for name in names)
    assert found.classpath == os.pathsep.join(str(tmp_path / name) for name in names)


def test_installed_is_none_without_a_manifest_a_file_or_a_required_jar(tmp_path: Path) -> None:
    kafka = kafka_jars("3.9.2")
    assert installed(tmp_path / "empty", kafka) is None
    write_cache(tmp_path / "lacks-a-file", list(kafka.required[1:]), list(kafka.required))
    assert installed(tmp_path / "lacks-a-file", kafka) is None
    write_cache(tmp_path / "lacks-a-required", list(kafka.required[1:]), list(kafka.required[1:]))
    assert installed(tmp_path / "lacks-a-required", kafka) is None
    # Spark's resolver leaves scala-library out: Kafka's broker set without it cannot start StorageTool
    write_cache(tmp_path / "lacks-scala", list(kafka.required), list(kafka.required))
    assert kafka.scala and installed(tmp_path / "lacks-scala", kafka) is None
    maven = ["scala-library-2.13.15.jar", *kafka.required]
    write_cache(tmp_path / "maven-named", maven, maven)
    assert installed(tmp_path / "maven-named", kafka) is not None
    tools = kafka_tools_jars("4.4.0")
    write_cache(tmp_path / "tools", list(tools.required), list(tools.required))
    assert not tools.scala and installed(tmp_path / "tools", tools) is not None


def test_missing_reason_names_the_set_and_how_to_fetch_it(tmp_path: Path) -> None:
    assert missing_reason(tmp_path, SPARK_JARS) == (
        f"delta-spark/spark-avro jars not found in {tmp_path}: run `make setup` "
        f"(or `python -m lakehouse.jars fetch spark-{SPARK_VERSION}`) where Maven Central is reachable")
    assert missing_reason(tmp_path, kafka_jars("3.9.2")) == (
        f"Kafka 3.9.2 jars not found in {tmp_path}: run `make setup` "
        "(or `python -m lakehouse.jars fetch kafka-3.9.2`) where Maven Central is reachable")


def test_jar_name_helpers() -> None:
    assert jars._artifact("scala-library-2.13.13.jar") == "scala-library"
    assert jars._artifact("delta-spark_2.13-4.0.0.jar") == "delta-spark_2.13"
    assert jars._artifact("foo-1.0-SNAPSHOT.jar") == "foo"
    assert jars._ivy_name("io.delta_delta-spark_2.13-4.0.0.jar") is True
    assert jars._ivy_name("delta-spark_2.13-4.0.0.jar") is False
    assert jars._ivy_name("scala-library-2.13.13.jar") is False
    assert jars._last_error("ok\n[ERROR] one\nunresolved dependency: x\nend") == "unresolved dependency: x"
    assert jars._last_error("first\nlast  ") == "last"
    assert jars._last_error("") == "no output"
    assert jars._last_error("error " + "x" * 400) == ("error " + "x" * 400)[:300]


def test_main_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["nope"], ["fetch", "kafka-0.1"], ["path", "spark", "kafka-4.4.0"]):
        assert main(argv) == 1
        assert capsys.readouterr().err.startswith("usage: python -m lakehouse.jars [fetch [SET...]|path [SET]]")


def test_main_path_prints_the_classpath_or_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert main(["path", "kafka-3.9.2"]) == 0
    assert capsys.readouterr().out == "\n"
    kafka = kafka_jars("3.9.2")
    directory = tmp_path / "kraft-replay" / "jars" / "kafka-3.9.2"
    names = [*kafka.required, SCALA]
    write_cache(directory, names, names)
    assert main(["path", "kafka-3.9.2"]) == 0
    assert capsys.readouterr().out == os.pathsep.join(str(directory / name) for name in names) + "\n"
