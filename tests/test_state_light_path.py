"""replay/query/light_state.py and the switch in replay/query/state_answer.py: a fresh `state --offset N` or `history`
read without a JVM (delta-rs) prints byte for byte what the Spark path prints (``KRAFT_REPLAY_QUERY_PATH=spark``),
on a simulated cluster that deletes a topic, makes it again and leaves partitions without a leader, and on the lake
of every image part (tests/image_lake_support.py); errors read the same on both paths."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from kraft_replay.state_commands import PARTITION_COLUMNS
from lakehouse.lake import Lake
from lakehouse.light_reader import DELTA_RS, DELTA_SPARK, ENGINE_ENV
from lakehouse.log_rows import entries_frame
from lakehouse.tables import METADATA_LOG
from replay.query.light_state import java_double, light_state
from replay.query.rules import iso_ms
from replay.query.state_answer import QUERY_PATH_ENV, SPARK_PATH, light_path_serves
from replay.store.runs import run_replay
from simulator import ControllerSimulator
from simulator.controller import SimConfig
from tests.image_lake_support import ImageLog

pytestmark = pytest.mark.spark

CLUSTER = "light-path"
NARROWED = [(), ("--topic", "orders"), ("--topic", "orders", "--partition", "1"), ("--brokers",),
            ("--section", "acls,configs"), ("--topic", "solo", "--section", "partitions,configs")]


@dataclass
class Story:
    """The replayed lake and its offsets by what happened there."""

    lake: Lake
    key: dict[str, int]


@pytest.fixture(scope="module")
def story(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Story:
    """Three brokers; ``orders`` (3 partitions, 2 replicas), ``doomed`` deleted, ``solo`` (one replica each), whose
    partitions on broker 2 lose their leader when it is fenced; then broker 2 is back and a fourth joins."""
    sim = ControllerSimulator(SimConfig(seed=7, metadata_version="3.9"))
    for broker in (1, 2, 3):
        sim.register_broker(broker)
    for broker in (1, 2, 3):
        sim.unfence(broker)
    sim.create_topic("orders", 3, 2)
    sim.create_topic("doomed", 2, 2)
    sim.create_topic("solo", 6, 1)
    key = {"configured": sim.set_topic_config("doomed", "retention.ms", "1000")}
    sim.set_topic_config("orders", "cleanup.policy", "compact")
    key["before-delete"] = sim.next_offset - 1
    key["deleted"] = sim.delete_topic("doomed")
    key["leaderless"] = sim.fence(2)
    sim.unfence(2)
    sim.register_broker(4)
    key["last"] = sim.next_offset - 1
    sim.create_topic("doomed", 1, 3)  # the name again, a new topic id (after "last": TopicRecord, PartitionRecord)
    lake = Lake(tmp_path_factory.mktemp("light-path-lake"))
    lake.write(entries_frame(spark, sim.entries(), CLUSTER), METADATA_LOG, "append")
    run_replay(spark, lake)
    return Story(lake, key)


def _run(lake: Lake, path: str, *args: str, command: str = "state") -> Any:
    from typer.testing import CliRunner

    from kraft_replay.cli import app

    return CliRunner().invoke(app, [command, *args, "--lake", str(lake.root)],
                              env={"COLUMNS": "250", QUERY_PATH_ENV: path})


def _same(lake: Lake, *args: str, command: str = "state") -> str:
    """The stdout of both paths, asserted byte-identical (and the light path quiet: no Spark announced itself)."""
    light, spark = _run(lake, "", *args, command=command), _run(lake, SPARK_PATH, *args, command=command)
    assert light.exit_code == 0 == spark.exit_code, (light.output, spark.output)
    assert light.stdout_bytes == spark.stdout_bytes, args
    assert "lake engine" not in light.stderr
    return str(light.stdout)


def test_the_switch(story: Story, monkeypatch: pytest.MonkeyPatch) -> None:
    root = str(story.lake.root)
    assert light_path_serves(root, None, None)
    assert not light_path_serves(root, "local[1]", None)
    assert not light_path_serves(root, None, "sc://localhost:15002")
    assert not light_path_serves("s3://bucket/lake", None, None)
    monkeypatch.setenv(ENGINE_ENV, DELTA_SPARK)  # Delta's Spark engine asked for by name: Spark answers
    assert not light_path_serves(root, None, None)
    monkeypatch.setenv(ENGINE_ENV, DELTA_RS)
    assert light_path_serves(root, None, None)
    monkeypatch.setenv(QUERY_PATH_ENV, SPARK_PATH)
    assert not light_path_serves(root, None, None)


@pytest.mark.parametrize("fmt", ["table", "json"])
@pytest.mark.parametrize("moment", ["configured", "before-delete", "deleted", "leaderless", "last"])
def test_every_section_as_spark_prints_it(story: Story, moment: str, fmt: str) -> None:
    out = _same(story.lake, "--offset", str(story.key[moment]), "--format", fmt)
    if fmt == "json":
        doc = json.loads(out)
        topics = [topic["name"] for topic in doc["topics"]]
        assert ("doomed" in topics) == (moment in ("configured", "before-delete"))
        assert any(p["leader"] == -1 for p in doc["partitions"]) == (moment == "leaderless")
        assert len(doc["brokers"]) == (4 if moment == "last" else 3)


@pytest.mark.parametrize("fmt", ["table", "json"])
@pytest.mark.parametrize("narrowed", NARROWED)
def test_narrowed_as_spark_prints_it(story: Story, narrowed: tuple[str, ...], fmt: str) -> None:
    for moment in ("configured", "leaderless"):
        _same(story.lake, "--offset", str(story.key[moment]), "--format", fmt, *narrowed)


def test_beyond_the_log(story: Story) -> None:
    out = _same(story.lake, "--offset", str(story.key["last"] + 100))
    assert "not an offset of the stored log" in out.splitlines()[0]


def test_a_table_reads_only_the_partition_columns_it_shows(story: Story) -> None:
    """`state` as a table decodes the partitions' shown columns (and their order's) only: directories, times and
    the rest stay on disk; the rows it gives are the whole answer's, column for column."""
    root, offset = str(story.lake.root), story.key["leaderless"]
    shown = light_state(root, offset, ("partitions",), columns={"partitions": PARTITION_COLUMNS})
    whole = light_state(root, offset, ("partitions",)).sections["partitions"]
    table = shown.sections["partitions"]
    assert table.column_names == ["topic_name", "partition_id", "topic_id", *PARTITION_COLUMNS[2:]]
    assert "directories" in whole.column_names
    assert table == whole.select(table.column_names)
    rows = shown.rows("partitions")
    assert [(row["topic_name"], row["partition_id"]) for row in rows][:3] == [("orders", 0), ("orders", 1),
                                                                              ("orders", 2)]
    solo = [row for row in rows if row["topic_name"] == "solo"]
    assert len(solo) == 6
    assert [row["leader"] == -1 for row in solo] == [row["replicas"] == [2] for row in solo]
    assert any(row["leader"] == -1 for row in solo)
    assert dict(rows[0]) == whole.slice(0, 1).select(table.column_names).to_pylist()[0]


def test_times_and_batches_as_spark_resolves_them(story: Story, spark: SparkSession) -> None:
    """`--time T` (the last offset appended at or before T) and `--batch-aligned` (the end of the offset's record
    batch) resolve on the light path as on Spark's: the fence's batch (its partition changes, then the fence) is
    one append time, so T at it means the fence, a millisecond earlier the record before the batch."""
    fence = story.lake.read(spark, METADATA_LOG).where(F.col("offset") == story.key["leaderless"]).first()
    base, appended = fence["batch_base_offset"], fence["append_time_ms"]
    assert base < story.key["leaderless"]
    for asked, meant in ((("--time", iso_ms(appended)), story.key["leaderless"]),
                         (("--time", iso_ms(appended - 1)), base - 1),
                         (("--offset", str(base), "--batch-aligned"), story.key["leaderless"]),
                         (("--time", iso_ms(appended - 1), "--batch-aligned"), base - 1)):
        out = _same(story.lake, *asked, "--topic", "solo")
        assert out.splitlines()[0].startswith(f"cluster {CLUSTER} as of offset {meant} "), asked
        _same(story.lake, *asked, "--format", "json")
    for wrong in (("--time", "2000-01-01T00:00:00Z"), ("--time", "yesterday"),
                  ("--offset", str(story.key["last"] + 100), "--batch-aligned")):
        light, spark_run = _run(story.lake, "", *wrong), _run(story.lake, SPARK_PATH, *wrong)
        assert light.exit_code == 2 == spark_run.exit_code, wrong
        assert light.stderr.splitlines()[-1] == spark_run.stderr.splitlines()[-1], wrong
        assert "lake engine" not in light.stderr


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_every_image_part_as_spark_prints_it(image_lake: Lake, image_log: ImageLog, fmt: str) -> None:
    last = max(image_log.key.values())
    for offset in (0, image_log.key["pids-1"], image_log.key["acl-removed"], last):
        _same(image_lake, "--offset", str(offset), "--format", fmt)
    for narrowed in NARROWED[:2] + NARROWED[4:5]:
        _same(image_lake, "--offset", str(image_log.key["quota-alice-2"]), "--format", fmt, *narrowed)


@pytest.mark.parametrize("question", [("--cluster-id", "nope"), ("--section", "quotas")])
def test_errors_read_the_same(story: Story, question: tuple[str, ...], tmp_path: Any) -> None:
    light, spark = _run(story.lake, "", "--offset", "3", *question), _run(story.lake, SPARK_PATH, "--offset", "3",
                                                                         *question)
    assert light.exit_code == 2 == spark.exit_code
    assert light.stderr.splitlines()[-1] == spark.stderr.splitlines()[-1]
    assert light.stderr.splitlines()[-1].startswith("kraft-replay: ")
    empty = Lake(tmp_path / "no-lake")
    light, spark = _run(empty, "", "--offset", "3"), _run(empty, SPARK_PATH, "--offset", "3")
    assert light.exit_code == 2 == spark.exit_code
    assert light.stderr.splitlines()[-1] == spark.stderr.splitlines()[-1]


@pytest.mark.parametrize("fmt", ["table", "json"])
@pytest.mark.parametrize("asked", [("orders", 1), ("doomed", 0), ("doomed", 1), ("solo", 0), ("solo", 1)])
def test_a_partitions_history_as_spark_prints_it(story: Story, asked: tuple[str, int], fmt: str) -> None:
    topic, partition = asked
    out = _same(story.lake, "--topic", topic, "--partition", str(partition), "--format", fmt, command="history")
    if fmt == "table":
        return
    versions = [json.loads(line) for line in out.splitlines()]
    starts = [version["validFromOffset"] for version in versions]
    assert starts == sorted(starts) and {version["topicName"] for version in versions} == {topic}
    spans = [(version["validFromOffset"], version["validToOffset"], version["replicas"]) for version in versions]
    if topic == "doomed":  # deleted, then its name made again (one partition, 3 replicas) under a new topic id
        old = [spans[0]] if partition == 1 else [spans[0], (story.key["last"] + 2, None, [1, 3, 2])]
        assert spans == old and spans[0][1] == story.key["deleted"]
        assert len({version["topicId"] for version in versions}) == len(old)
    else:
        assert spans[-1][1] is None
    if topic == "solo":  # one replica: on broker 2, no leader from the fence's PartitionChangeRecord to the unfence
        leaders = [version["leader"] for version in versions]
        assert leaders == ([2, -1, 2] if spans[0][2] == [2] else spans[0][2])
        assert leaders[1:2] != [-1] or spans[1][0] < story.key["leaderless"] < spans[1][1]


def test_a_history_with_its_transitions_and_its_errors(story: Story) -> None:
    """`--states` adds the state machines (from Spark) under the light path's versions; a partition the lake never
    had and an unknown cluster read the same on both paths."""
    light, spark = (_run(story.lake, path, "--topic", "solo", "--partition", "0", "--states", command="history")
                    for path in ("", SPARK_PATH))
    assert light.exit_code == 0 == spark.exit_code, (light.output, spark.output)
    assert light.stdout_bytes == spark.stdout_bytes
    assert "state-machine transitions" in light.stdout
    for question in (("--topic", "nope", "--partition", "0"), ("--topic", "orders", "--partition", "0",
                                                             "--cluster-id", "nope")):
        light, spark = (_run(story.lake, path, *question, command="history") for path in ("", SPARK_PATH))
        assert light.exit_code == 2 == spark.exit_code
        assert light.stderr.splitlines()[-1] == spark.stderr.splitlines()[-1]
        assert light.stderr.splitlines()[-1].startswith("kraft-replay: ")
        assert "lake engine" not in light.stderr


PART_QUESTIONS = [("--config", "TOPIC:orders"), ("--config", "BROKER:"), ("--config", "BROKER:1"),
                  ("--config", "TOPIC:missing"), ("--acl",), ("--acl", "--principal", "User:alice"),
                  ("--acl", "--resource", "TOPIC:payments"), ("--acl", "--resource", "GROUP:payments"),
                  ("--user", "alice"), ("--user", "bob"), ("--quota",), ("--token",), ("--producer-ids",)]


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_every_part_history_as_spark_prints_it(image_lake: Lake, image_log: ImageLog, fmt: str) -> None:
    """`history --config`, `--acl`, `--user`… read by delta-rs print Spark's bytes (a secret's fingerprint, a
    quota's double, a default quota entity the user filter must not take)."""
    answers = {question: _same(image_lake, *question, "--format", fmt, command="history")
               for question in PART_QUESTIONS}
    key = image_log.key
    if fmt == "table":
        assert answers[("--config", "TOPIC:orders")].startswith("configs of TOPIC:orders: 2 version(s)")
        assert answers[("--config", "TOPIC:missing")] == ("configs of TOPIC:missing: 0 version(s); TO empty = still "
                                                          "current\n")
        return
    parsed = {question: [json.loads(line) for line in out.splitlines()] for question, out in answers.items()}
    retention = parsed[("--config", "TOPIC:orders")]
    assert [(v["validFromOffset"], v["validToOffset"], v["value"]) for v in retention] == [
        (key["retention-1"], key["retention-2"], "604800000"), (key["retention-2"], None, "86400000")]
    quotas = [v for v in parsed[("--user", "alice")] if v["part"] == "clientQuotas"]
    assert [(v["validFromOffset"], v["validToOffset"], v["value"]) for v in quotas] == [
        (key["quota-alice-1"], key["quota-alice-2"], 1048576.0), (key["quota-alice-2"], key["quota-alice-removed"],
                                                                 2097152.0)]
    assert len(parsed[("--quota",)]) == 3  # alice's two and the default user's
    assert {v["part"] for v in parsed[("--user", "bob")]} == {"acls"}
    assert [v["validFromOffset"] for v in parsed[("--acl", "--principal", "User:alice")]] == [key["acl-write"]]
    assert parsed[("--acl", "--resource", "GROUP:payments")] == []
    assert [v["nextProducerId"] for v in parsed[("--producer-ids",)]] == [1000, 2000]
    credentials = [v for v in parsed[("--user", "alice")] if v["part"] == "scramCredentials"]
    assert [v["iterations"] for v in credentials] == [4096, 8192]
    assert all("salt" not in v and "storedKey" not in v for v in credentials)


def test_a_part_historys_errors_read_the_same(image_lake: Lake) -> None:
    for question in (("--config", "QUEUE:x"), ("--config", "orders"), ("--acl", "--resource", "BROKER:1"),
                     ("--quota", "--cluster-id", "nope")):
        light, spark = (_run(image_lake, path, *question, command="history") for path in ("", SPARK_PATH))
        assert light.exit_code == 2 == spark.exit_code, question
        assert light.stderr.splitlines()[-1] == spark.stderr.splitlines()[-1], question
        assert light.stderr.splitlines()[-1].startswith("kraft-replay: ")
        assert "lake engine" not in light.stderr


def test_doubles_as_java_writes_them(spark: SparkSession) -> None:
    values = [0.0, -0.0, 0.5, 0.001, 0.0001, 1.5e-5, 123456.789, 1048576.0, 9999999.0, 1e7, 2097152e3, 1.0e22,
              -3.25, 1 / 3]
    rows = spark.createDataFrame([(index, value) for index, value in enumerate(values)], "i INT, v DOUBLE")
    written = [row["j"] for row in rows.orderBy("i").select(F.to_json(F.struct("v")).alias("j")).collect()]
    assert [f'{{"v":{java_double(value)}}}' for value in values] == written
