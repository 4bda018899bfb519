"""Shared pytest fixtures: one SparkSession per run, the real KRaft logs in ../shared, the replays several test
modules read (computed once per run); the summary lines tests leave for the end of the run."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pyspark.sql import SparkSession

from lakehouse.server_dir import SERVER_DIR_ENV
from lakehouse.spark import SparkOptions, get_spark

if TYPE_CHECKING:
    from lakehouse.lake import Lake

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_MISSING = "../shared is not present beside the checkout: real-log tests need it"
# Lines a test module leaves for the end of the run (what it compared): output of a passing test is not shown.
SUMMARY = pytest.StashKey[list[str]]()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    for line in config.stash.get(SUMMARY, []):
        terminalreporter.write_line(line)


# --- Two workers, one Spark session ------------------------------------------------------------------------
# `make test` runs pytest-xdist with two workers (--dist loadgroup): every test on the shared session (the `spark`
# marker or fixture) is one group, run in order by ONE worker, the run's one Spark session; the other worker takes
# the tests that start no session in this process (JVM-free tests, and tests of real processes: Kafka's jars,
# clusters, subprocess commands), so their waiting and their processes overlap the session's work.

SESSION_GROUP = "spark-session"
SESSION_MARK = "spark"  # the marker, named as the session's fixture is
# A worker starts with COLUMNS=80 and LINES=24 in its environment where a plain run has none: the commands' tables
# would be cut at 80 columns on a worker and not in a plain run (or on a terminal of the user's width).
if os.environ.get("PYTEST_XDIST_WORKER"):
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)
# The commands a test runs as processes start their own Spark: a resident server the developer started
# (``kraft-replay server start``) is not theirs to use. test_resident_server starts its own in a directory of its own.
os.environ[SERVER_DIR_ENV] = tempfile.mkdtemp(prefix="kraft-replay-test-no-server-")


def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's own directory, which both workers see (the parent of each worker's base), or a plain run's base."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def uses_session(item: pytest.Item) -> bool:
    """The test asks for the session's fixture (itself or through its fixtures) or carries its marker."""
    return item.get_closest_marker(SESSION_MARK) is not None or SESSION_MARK in getattr(item, "fixturenames", ())


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if uses_session(item):
            item.add_marker(pytest.mark.xdist_group(SESSION_GROUP))


def _no_second_session(item: pytest.Item) -> Iterator[None]:
    """A test outside the session's group that starts a Spark session in this process would be a second session
    of the run (on the other worker): it fails, naming the marker it lacks."""
    from pyspark import SparkContext

    before = SparkContext._active_spark_context
    yield
    if before is None and SparkContext._active_spark_context is not None and not uses_session(item):
        raise AssertionError(f"{item.nodeid} started a Spark session in the test process without the "
                             f"`{SESSION_MARK}` marker: mark it, so that it runs on the worker of the run's one "
                             "session")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    return (yield from _no_second_session(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    return (yield from _no_second_session(item))


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A worker hands the summary lines its tests left to the controller (``pytest_testnodedown``)."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["summary"] = session.config.stash.get(SUMMARY, [])


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    lines = getattr(node, "workeroutput", {}).get("summary", [])
    node.config.stash.setdefault(SUMMARY, []).extend(lines)


# --- Spark ---------------------------------------------------------------------------------------

TEST_DRIVER_MEMORY = "8g"


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    """The one SparkSession of the test run: starting the JVM takes seconds, so tests share it. Its heap is
    larger than a command's default (2 GiB): this JVM holds the session-scoped fixtures' cached replays of
    every real log, simulated story and Kafka cluster for the whole run, where a command holds one. Under
    pytest-xdist, the first worker to start it claims the run's session; another worker asking for one fails."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        claim = run_dir(tmp_path_factory) / "spark-session-worker"
        try:
            with claim.open("x", encoding="utf-8") as claimed:
                claimed.write(worker)
        except FileExistsError:
            owner = claim.read_text(encoding="utf-8")
            if owner != worker:
                pytest.fail(f"a second Spark session of the run, on {worker} ({owner} has the first): every test "
                            f"on the session must be in the xdist group {SESSION_GROUP!r}")
    session = get_spark(SparkOptions(master="local[2]", shuffle_partitions=4, driver_memory=TEST_DRIVER_MEMORY))
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


# --- Replays shared by several test modules ------------------------------------------------------
# Each is computed ONCE per run, whichever of the modules that read it run: the tests mirror the replay modules
# they test (one test module per product module), so these fixtures must not be per module.


@pytest.fixture(scope="session")
def compared(spark: SparkSession) -> dict[str, Any]:
    """ONE Spark replay of every log of tests/replay_vs_reference_support.py, and the reference fold of each."""
    from tests import replay_vs_reference_support

    return replay_vs_reference_support.compared(spark)


@pytest.fixture(scope="session")
def repeated(spark: SparkSession) -> dict[str, Any]:
    """The Spark replay and the reference fold of a log that repeats replica ids (tests/bad_inputs_support.py)."""
    from tests import replay_vs_reference_support

    return replay_vs_reference_support.repeated(spark)


@pytest.fixture(scope="session")
def image_parts(spark: SparkSession) -> dict[str, Any]:
    """ONE Spark replay of the image parts' hand-built logs (tests/image_parts_support.py): table → rows."""
    from tests import image_parts_support

    return image_parts_support.image_parts(spark)


@pytest.fixture(scope="session")
def stories() -> dict[str, Any]:
    """The stories of tests/state_machines_support.py, by cluster id."""
    from tests import state_machines_support

    return state_machines_support.stories()


@pytest.fixture(scope="session")
def state_machine_lake(spark: SparkSession, stories: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
                       ) -> Lake:
    """The stories, every one a cluster of ONE lake, replayed once (history and derived tables)."""
    from tests import state_machines_support

    return state_machines_support.lake(spark, stories, tmp_path_factory)


@pytest.fixture(scope="session")
def lake(state_machine_lake: Lake) -> Lake:
    """The lake a test gets when it asks for ``lake``: the stories' (the state machines, the election audit,
    incidents, what-if and the controller's states all read it). A module with a lake of its own defines its own
    ``lake``, which wins over this one."""
    return state_machine_lake


@pytest.fixture(scope="session")
def increments(spark: SparkSession, stories: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
               ) -> dict[str, Any]:
    """The stories replayed in three increments into a lake of their own, and what each increment left."""
    from tests import state_machines_support

    return state_machines_support.increments(spark, stories, tmp_path_factory)


@pytest.fixture(scope="session")
def image_log() -> Any:
    """The log of every image part (tests/image_lake_support.py)."""
    from tests import image_lake_support

    return image_lake_support.image_log()


@pytest.fixture(scope="session")
def image_lake(spark: SparkSession, image_log: Any, tmp_path_factory: pytest.TempPathFactory) -> Lake:
    """That log replayed (tests/image_lake_support.py)."""
    from tests import image_lake_support

    return image_lake_support.lake(spark, image_log, tmp_path_factory)


@pytest.fixture(scope="session")
def audit_stories() -> dict[str, Any]:
    """The stories of tests/audit_support.py (the audit by the configs in force), by cluster id."""
    from tests import audit_support

    return audit_support.stories()


@pytest.fixture(scope="session")
def audit_lake(spark: SparkSession, audit_stories: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
               ) -> Lake:
    """The audit stories, every one a cluster of ONE lake, with config_history, replayed once."""
    from tests import audit_support

    return audit_support.lake(spark, audit_stories, tmp_path_factory)
