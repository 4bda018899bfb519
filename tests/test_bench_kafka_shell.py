"""The yardstick of issue 42 (bench/kafka_shell.py): Kafka 3.9.0's metadata shell, with the two fixes that make it
answer for the whole file, lists the brokers of the file's last image every time (as released, it often answered
from the first batches: an empty broker list); a fix that no longer applies to the released source is an error."""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.bench_first_answer import SHELL_PATH
from bench.kafka_shell import FIXES, ShellUnavailableError, _fixed_source, shell_classpath, timed_shell
from bench.logs import SEED, real_like_log

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def classpath(tmp_path_factory: pytest.TempPathFactory) -> str:
    try:
        return shell_classpath(tmp_path_factory.mktemp("kafka-shell"))
    except ShellUnavailableError as error:
        pytest.skip(f"Kafka's shell cannot be fetched or built here: {error}")


def _brokers(classpath: str, segment: Path) -> list[str]:
    printed, _ = timed_shell(classpath, segment, "ls", SHELL_PATH)
    return printed.split()


def test_the_shell_lists_the_last_images_brokers_of_a_simulated_log(classpath: str, tmp_path: Path) -> None:
    """The bench's kind of log (3 brokers registered in its first records, thousands of records after them): every
    run reads it whole."""
    sizes = {"records": 3000, "more": 10, "brokers": 3, "topics": 4, "partitions_per_topic": 2, "seed": SEED}
    real_like_log(tmp_path, sizes, reuse=False)
    segment = min((tmp_path / "log" / "__cluster_metadata-0").glob("*.log"))
    assert [_brokers(classpath, segment) for _ in range(3)] == [["1", "2", "3"]] * 3


def test_the_shell_lists_the_broker_of_a_real_log(classpath: str, real_log: Callable[[str], Path]) -> None:
    segment = real_log("ldi-poc") / "__cluster_metadata-0" / "00000000000000000000.log"
    assert _brokers(classpath, segment) == ["1"]


def test_a_fix_that_does_not_apply_stops_with_the_class_named(tmp_path: Path) -> None:
    fix = FIXES[0]
    with zipfile.ZipFile(tmp_path / f"{fix.artifact}-3.9.0-sources.jar", "w") as jar:
        jar.writestr(fix.path, "class SnapshotFileReader { /* another release's source */ }\n")
    with pytest.raises(ShellUnavailableError, match=f"{fix.path} is not as 3.9.0 released it"):
        _fixed_source(tmp_path, fix, "3.9.0")
