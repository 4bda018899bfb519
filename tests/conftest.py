"""Shared pytest fixtures: one SparkSession per run, and the real KRaft logs in ../shared; the summary lines tests
leave for the end of the run."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from lakehouse.spark import SparkOptions, get_spark

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_MISSING = "../shared is not present beside the checkout: real-log tests need it"
# Lines a test module leaves for the end of the run (what it compared): output of a passing test is not shown.
SUMMARY = pytest.StashKey[list[str]]()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    for line in config.stash.get(SUMMARY, []):
        terminalreporter.write_line(line)


# --- Spark ---------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """The one SparkSession of the test run: starting the JVM takes seconds, so tests share it."""
    session = get_spark(SparkOptions(master="local[2]", shuffle_partitions=4))
    yield session
    session.stop()


# --- Real logs in ../shared ----------------------------------------------------------------------


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The `shared` directory beside the checkout (CI clones with `../shared` next to it)."""
    shared = REPO_ROOT.parent / "shared"
    if not shared.is_dir():
        pytest.skip(SHARED_MISSING)
    return shared


@pytest.fixture(scope="session")
def real_log(shared_dir: Path) -> Callable[[str], Path]:
    """Factory: `real_log("ldi-poc")` is `shared/data/real/ldi-poc`, or the test is skipped."""

    def locate(name: str) -> Path:
        path = shared_dir / "data" / "real" / name
        if not path.exists():
            pytest.skip(f"{path} is not present: real-log tests need ../shared/data/real/{name}")
        return path

    return locate
