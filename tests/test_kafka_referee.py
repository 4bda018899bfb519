"""Kafka itself as the referee: Kafka's own metadata fold (its ``MetadataBatchLoader``, ``MetadataDelta`` and
``MetadataImage``, releases 4.4.0 and 3.9.2) against our reference fold, at every offset Kafka publishes an
image (every batch end), on the real logs in ../shared, hand-built logs of every refusal and simulated logs of
every scenario. The Spark replay is tested equal to the reference fold (tests/test_replay_vs_reference.py), so
Kafka referees both. Kafka must accept every simulated record; where it refuses a hand-built one, we must too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from lakehouse.jars import KAFKA_VERSIONS
from records.kafka_json import make_record
from records.model import LogEntry, MetadataRecord
from records.sources import read_entries
from records.writer import write_segments, write_snapshot
from replay.reference.fold import Image, image_at, reference_histories
from simulator import SCENARIOS, ScenarioOptions, SimulationError, run_scenario
from simulator.output import METADATA_DIR, write_log
from tests.conftest import SUMMARY
from tests.image_snapshot_support import image_snapshot_records
from tests.referee import (
    KEYS,
    Comparison,
    KafkaRun,
    RefereeUnavailable,
    compare,
    compiled,
    kafka_fold,
    scenario_options,
)
from tests.referee.dump_log import kafka_record_versions

pytestmark = pytest.mark.kafka

REAL = ("ldi-poc", "nurlan-3broker-pre33", "gani-guru-kafka42")
# metadata.version 4.0 (and the ELR records) is newer than Kafka 3.9 knows: its loader refuses the level
NEWER_THAN_KAFKA_3 = "No MetadataVersion with feature level"
# A record Kafka refuses: its replay throws, or (one record per batch) the image cannot be built after it
REFUSED = re.compile(r"Error loading metadata log record from offset (\d+)"
                     r"|Error generating new metadata image from metadata delta between offset -?\d+ and (\d+)")

# (log name, Kafka version) -> what was compared; printed once at the end of the module
TALLY: dict[tuple[str, str], Comparison] = {}


@pytest.fixture(scope="module", params=KAFKA_VERSIONS)
def kafka(request: pytest.FixtureRequest) -> str:
    """A Kafka version whose jars are fetched and against which KafkaFold.java compiles (else: skip, saying why)."""
    version: str = request.param
    try:
        compiled(version)
    except RefereeUnavailable as reason:
        pytest.skip(f"Kafka {version} as referee: {reason}")
    return version


@pytest.fixture(scope="module", autouse=True)
def tally(request: pytest.FixtureRequest) -> Iterator[None]:
    """The counts compared, one line per Kafka version at the end of the run."""
    yield
    lines = request.config.stash.setdefault(SUMMARY, [])
    for version in sorted({v for _, v in TALLY}, reverse=True):
        done = [c for (_, v), c in TALLY.items() if v == version]
        lines.append(f"Kafka {version} as referee: {len(done)} logs, {sum(c.offsets for c in done)} offsets (batch "
                     f"ends) and {sum(c.records for c in done)} records compared with the reference fold, field by "
                     "field")


def _check(name: str, version: str, log_dir: Path, entries: list[LogEntry],
           base_snapshot: tuple[int, Sequence[MetadataRecord]] | None = None) -> tuple[Comparison, KafkaRun]:
    comparison, run = compare(version, log_dir, entries, base_snapshot)
    if version.startswith("3.") and any(NEWER_THAN_KAFKA_3 in f["fault"] for f in run.faults):
        pytest.skip(f"{name} has a metadata.version Kafka {version} does not know: {run.faults[0]['fault']}")
    shown = [f"offset {offset}: {problem}" for offset, problems in list(comparison.mismatches.items())[:5]
             for problem in problems[:3]]
    assert not comparison.mismatches, (f"{name}: Kafka {version} and the reference fold differ at "
                                       f"{len(comparison.mismatches)} of {comparison.offsets} offsets:\n"
                                       + "\n".join(shown))
    assert comparison.offsets > 0 and comparison.offsets == run.end["published"]
    TALLY[(name, version)] = comparison
    return comparison, run


@pytest.mark.real_logs
@pytest.mark.parametrize("name", REAL)
def test_real_logs(kafka: str, real_log: Callable[[str], Path], name: str) -> None:
    log_dir = real_log(name) / "__cluster_metadata-0"
    _comparison, run = _check(f"real/{name}", kafka, log_dir, list(read_entries(log_dir)))
    assert not run.faults, run.faults[:3]


def test_hand_built_logs_refused_where_kafka_refuses(kafka: str, tmp_path: Path) -> None:
    """Every refusal and transaction rule of the reference fold, one record per batch: Kafka publishes after every
    record, and the records its loader refuses are the ones we refuse."""
    from tests.bad_inputs_support import REPEATED, repeated_replicas_log
    from tests.replay_vs_reference_support import _hand_built

    try:
        known = kafka_record_versions(kafka)
    except RefereeUnavailable as exc:
        pytest.skip(f"Kafka {kafka} as referee: {exc}")
    compared = 0
    for name, entries in {**_hand_built(), REPEATED: repeated_replicas_log()}.items():
        if _newer_than(entries, known):
            continue  # e.g. ClearElrRecord (Kafka 4.0+) before Kafka 3.9: its loader cannot read them at all
        compared += 1
        log_dir = tmp_path / name
        write_segments(entries, log_dir, max_batch_records=1)
        back = list(read_entries(log_dir))
        _comparison, run = _check(f"hand/{name}", kafka, log_dir, back)
        kafka_refused = {int(m.group(1) or m.group(2)) for f in run.faults if (m := REFUSED.search(f["fault"]))}
        ours = {a["offset"] for a in reference_histories(back, name)["replay_anomalies"] if a["kind"] == "refused"}
        assert kafka_refused == ours, f"{name}: Kafka refused {sorted(kafka_refused)}, we {sorted(ours)}"
    assert compared >= 6, f"only {compared} hand-built logs are readable by Kafka {kafka}"


def test_hand_built_image_parts(kafka: str, tmp_path: Path) -> None:
    """Every branch of the other image parts' rules (tests/reference_fold_support.py's ``image_parts_log``), one
    record per batch and then in batches of five: Kafka's ConfigurationsImage, ClientQuotasImage, AclsImage,
    ScramImage, DelegationTokenImage, ProducerIdsImage (and 3.9's ZK migration state) are ours at every batch end,
    and Kafka refuses the records we refuse."""
    from tests.reference_fold_support import ACL1S, ACL3S, image_parts_log

    for batch in (1, 5):
        log_dir = tmp_path / f"image-parts-{batch}"
        write_segments(image_parts_log(), log_dir, max_batch_records=batch)
        back = list(read_entries(log_dir))
        _comparison, run = _check(f"hand/image-parts-{batch}", kafka, log_dir, back)
        kafka_refused = {int(m.group(1)) for f in run.faults if (m := REFUSED.search(f["fault"])) and m.group(1)}
        ours = {a["offset"] for a in reference_histories(back, "parts")["replay_anomalies"] if a["kind"] == "refused"}
        assert kafka_refused == ours == {15, 26}
    assert run.changes[29]["features"].get("zkMigrationState") == (3 if kafka.startswith("3.") else None)
    *_, (end, image) = run.images()
    assert end == 32
    assert sorted((c["resourceType"], c["resourceName"], c["name"], c["value"]) for c in image["configs"].values()) == [
        (0, "r", "x", "y"), (2, "orders", "retention.ms", "1"), (4, "", "min.insync.replicas", "2")]
    assert list(image["clientQuotas"].values()) == [
        {"entity": [{"entityType": "user", "entityName": None}], "key": "consumer_byte_rate", "value": 2048.0}]
    assert {key: (a["operation"], a["permissionType"]) for (key,), a in image["acls"].items()} == {
        ACL1S: (3, 3), ACL3S: (0, 0)}
    assert sorted(image["scramCredentials"]) == [("alice", 2), ("carol", 0)]
    assert [(t["tokenId"], t["expirationTimestamp"], t["renewers"]) for t in image["delegationTokens"].values()] == [
        ("tok1", 7000, ["User:bob"])]
    assert image["producerIds"] == {(): {"nextProducerId": 2000}}


def test_zk_migration_state_as_kafka_39_keeps_it(kafka: str, tmp_path: Path) -> None:
    """ZkMigrationStateRecord: Kafka 3.9's FeaturesDelta keeps the state (``ZkMigrationState.of`` refuses a value it
    does not know), 4.4's MetadataDelta ignores the record. The reference fold keeps 3.9's state and refusal; both
    Kafkas' images are ours at every offset (4.4's without the state)."""
    from tests.reference_fold_support import entries, zk_migration

    log_dir = tmp_path / "zk-migration"
    write_segments(entries(zk_migration(2), zk_migration(9), zk_migration(0), zk_migration(4)), log_dir,
                   max_batch_records=1)
    back = list(read_entries(log_dir))
    _comparison, run = _check("hand/zk-migration", kafka, log_dir, back)
    ours = {a["offset"]: a["reason"] for a in reference_histories(back, "zk")["replay_anomalies"]}
    assert ours == {1: "Value 9 is not a valid Zk migration state"}
    kafka_refused = {int(m.group(1)) for f in run.faults if (m := REFUSED.search(f["fault"])) and m.group(1)}
    states = [run.changes[offset]["features"].get("zkMigrationState") for offset in range(4)]
    if kafka.startswith("3."):
        assert kafka_refused == {1} and states == [2, 2, None, 4]
    else:
        assert kafka_refused == set() and states == [None] * 4


@pytest.mark.real_logs
@pytest.mark.parametrize("name", REAL)
def test_real_logs_image_parts(kafka: str, real_log: Callable[[str], Path], name: str) -> None:
    """Kafka's configs and next producer id at the end of each real log: the values the reference fold gives
    (tests/test_reference_fold.py::test_real_logs_configs_and_producer_ids)."""
    from tests.reference_fold_support import REAL_IMAGE_PARTS

    *_, (_end, image) = kafka_fold(kafka, real_log(name) / "__cluster_metadata-0").images()
    configs, next_producer_id = REAL_IMAGE_PARTS[name]
    assert sorted((c["resourceType"], c["resourceName"], c["name"], c["value"])
                  for c in image["configs"].values()) == configs
    assert [p["nextProducerId"] for p in image["producerIds"].values()] == (
        [] if next_producer_id is None else [next_producer_id])
    assert not (image["clientQuotas"] or image["acls"] or image["scramCredentials"] or image["delegationTokens"])


def _newer_than(entries: list[LogEntry], known: dict[str, int]) -> list[str]:
    """The record types and versions of ``entries`` that a Kafka knowing ``known`` cannot read."""
    return sorted({f"{e.record.type_name} v{e.record.version}" for e in entries
                   if isinstance(e.record, MetadataRecord) and not e.is_control
                   and known.get(e.record.type_name, -1) < e.record.version})


SIMULATED: list[tuple[str, str, ScenarioOptions]] = [
    *[(name, "3.9", scenario_options("3.9", 1)) for name in SCENARIOS],
    *[(name, "4.0", scenario_options("4.0", 2)) for name in SCENARIOS],  # ELR records (PartitionRecord v2)
    # old metadata versions: no directories (reassignments add MIGRATING replicas), no transactions before 3.6,
    # Fence/UnfenceBrokerRecord and no NoOp at 3.0
    *[(name, mv, scenario_options(mv, 3)) for mv in ("3.0", "3.3", "3.6")
      for name in ("random", "reassignment-under-failure", "rolling-restart")],
    ("random-large", "3.9", scenario_options("3.9", 7, brokers=9, topics=6, partitions_per_topic=12, events=1500,
                                     max_records_per_batch=40)),
    ("random-large", "4.0", scenario_options("4.0", 8, brokers=9, topics=6, partitions_per_topic=12, events=1500,
                                     max_records_per_batch=40)),
]


@pytest.mark.parametrize(("scenario", "mv", "options"), SIMULATED,
                         ids=[f"{name}-{mv}" for name, mv, _ in SIMULATED])
def test_simulated_logs(kafka: str, tmp_path: Path, scenario: str, mv: str, options: ScenarioOptions) -> None:
    """Kafka's loader accepts every record the simulator writes, and its image is ours at every batch end."""
    if kafka.startswith("3.") and mv == "4.0":
        pytest.skip(f"metadata.version {mv} is newer than Kafka {kafka}")
    try:
        run = run_scenario(scenario.removesuffix("-large"), options)
        entries = list(run.entries())  # the scenario's refusal of these options surfaces while it runs
        write_log(entries, tmp_path, "segments", cluster_id=run.sim.cluster_id, node_id=3000)
    except SimulationError as exc:
        pytest.skip(f"{scenario} does not run at metadata.version {mv}: {exc}")
    log_dir = tmp_path / METADATA_DIR
    _comparison, kafka_run = _check(f"sim/{scenario}-{mv}", kafka, log_dir, list(read_entries(log_dir)))
    assert not kafka_run.faults, kafka_run.faults[:3]


def test_snapshot_of_every_image_part(kafka: str, tmp_path: Path) -> None:
    """A ``.checkpoint`` holding every image part, then the log after it: Kafka's loader starts from it as our fold
    does from a base snapshot."""
    from tests.reference_fold_support import image_parts_log

    log = image_parts_log()
    end = 30  # the snapshot holds offsets 0-29; RemoveTopicRecord and the re-created topic follow it
    records = image_snapshot_records(image_at(log, end - 1))
    log_dir = tmp_path / "parts-snapshot"
    write_segments(log, log_dir, max_batch_records=1)
    write_snapshot(records, log_dir, end_offset=end, epoch=1, last_contained_log_timestamp=1_700_000_000_000)
    comparison, run = _check("snapshot/image-parts", kafka, log_dir, list(read_entries(log_dir)),
                             base_snapshot=(end, records))
    assert not run.faults and run.end["snapshotEndOffset"] == end
    assert comparison.offsets == 4  # 29 (the snapshot), 30, 31, 32


@pytest.mark.parametrize("mv", ["3.9", "4.0"])
def test_snapshot_then_log(kafka: str, tmp_path: Path, mv: str) -> None:
    """A ``.checkpoint`` in the log directory: Kafka's loader starts from it (it replaces the image) and applies
    the batches after it, as our fold does from a base snapshot."""
    if kafka.startswith("3.") and mv == "4.0":
        pytest.skip(f"metadata.version {mv} is newer than Kafka {kafka}")
    run = run_scenario("random", scenario_options(mv, 5, events=400))
    write_log(run.entries(), tmp_path, "segments", cluster_id=run.sim.cluster_id, node_id=3000)
    log_dir = tmp_path / METADATA_DIR
    entries = list(read_entries(log_dir))
    # the snapshot ends at a batch boundary in the middle of the log, outside any metadata transaction
    depth, end = 0, None
    for entry in entries:
        if entry.offset > len(entries) // 2 and depth == 0 and entry.offset == entry.batch_base_offset:
            end = entry.offset
            break
        depth += {"BeginTransactionRecord": 1, "EndTransactionRecord": -1,
                  "AbortTransactionRecord": -1}.get(entry.type_name, 0)
    assert end is not None
    records = image_snapshot_records(image_at(entries, end - 1))
    write_snapshot(records, log_dir, end_offset=end, epoch=1, last_contained_log_timestamp=1_700_000_000_000)
    comparison, kafka_run = _check(f"snapshot/random-{mv}", kafka, log_dir, entries, base_snapshot=(end, records))
    assert not kafka_run.faults, kafka_run.faults[:3]
    assert kafka_run.end["snapshotEndOffset"] == end and min(kafka_run.changes) == end - 1
    assert comparison.records == len([e for e in entries if not e.is_control])


def test_abort_followed_in_its_batch_is_a_kafka_loader_quirk_we_do_not_follow(kafka: str, tmp_path: Path) -> None:
    """Kafka's broker-side ``MetadataBatchLoader`` discards an aborted transaction only when it flushes right
    after the ``AbortTransactionRecord``: a record after it in the same batch turns the state back to "no
    transaction" and the aborted records are published with it. Kafka's controller reverts them
    (``OffsetControlManager.replay(AbortTransactionRecord)``), and so do we. A controller writes the Abort as
    the first record of its activation batch, usually alone (the simulator too: its aborts end their batch,
    and there the two agree). If this test fails, Kafka changed its loader: look again."""
    from tests.reference_fold_support import change, marker, partition, topic

    records = [topic(), partition(), marker("BeginTransactionRecord"), change(leader=2),
               make_record("AbortTransactionRecord", 0, reason="controller failover"), change(isr=[1, 3])]
    for abort_ends_its_batch in (True, False):
        bases = [0, 0, 2, 2, 2, 5 if abort_ends_its_batch else 2]
        entries = [LogEntry(offset=i, record=r, append_time_ms=1000 + i, batch_base_offset=b)
                   for i, (r, b) in enumerate(zip(records, bases, strict=True))]
        log_dir = tmp_path / f"abort-alone-{abort_ends_its_batch}"
        write_segments(entries, log_dir)
        comparison, run = compare(kafka, log_dir, list(read_entries(log_dir)))
        assert not run.faults
        if abort_ends_its_batch:
            assert not comparison.mismatches
        else:
            assert list(comparison.mismatches) == [5]
            assert "leader: kafka 2 ours 1" in comparison.mismatches[5][0]


def test_scram_credentials_lost_in_one_catch_up_delta_is_a_kafka_bug_we_do_not_follow(kafka: str,
                                                                                          tmp_path: Path) -> None:
    """Kafka's ``ScramDelta.apply`` walks a mechanism's changed users and drops the mechanism's map as soon as a
    removal leaves it empty; the users it walks after that are put into the dropped map. A broker restarted before
    alice's and bob's SCRAM-SHA-256 credentials were written and bob's removed reads them back from its log in one
    delta (``KafkaFold --catch-up``, as ``MetadataLoader.handleCommit`` loads one reader) and, "bob" iterating
    before "alice" in a HashMap, loses alice's: the image it serves to DescribeUserScramCredentials lacks a
    credential the log holds. Published after every batch (the controller's own ``ScramControlManager`` too) she
    keeps it, and so do we. Seen on a live Kafka 4.4.0 cluster (tests/test_kafka_clusters.py). If this test fails,
    Kafka fixed ScramDelta: look again."""
    from tests.reference_fold_support import remove_scram, scram

    records = [scram("alice", 1, 4096), scram("bob", 1, 4096), scram("alice", 2, 4096), scram("bob", 2, 4096),
               remove_scram("bob", 1)]
    bases = [0, 0, 2, 2, 4]  # one AlterUserScramCredentials request a batch, as the cluster test's script writes
    entries = [LogEntry(offset=i, record=r, append_time_ms=1000 + i, batch_base_offset=b)
               for i, (r, b) in enumerate(zip(records, bases, strict=True))]
    log_dir = tmp_path / "scram-catch-up"
    write_segments(entries, log_dir)
    comparison, run = compare(kafka, log_dir, list(read_entries(log_dir)))
    assert not comparison.mismatches and not run.faults
    *_, (end, per_batch) = run.images()
    assert (end, sorted(per_batch["scramCredentials"])) == (4, [("alice", 1), ("alice", 2), ("bob", 2)])
    caught_up = kafka_fold(kafka, log_dir, catch_up=True)
    assert not caught_up.faults and caught_up.end["published"] == 1
    *_, (end, one_delta) = caught_up.images()
    assert (end, sorted(one_delta["scramCredentials"])) == (4, [("alice", 2), ("bob", 2)])
    assert image_at(entries, 4).scram.keys() == {("alice", 1), ("alice", 2), ("bob", 2)}


@pytest.fixture(scope="module")
def replayed_lake(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A simulated log at metadata.version 3.3 (reassignments before JBOD: MIGRATING directories) as segments,
    ingested and replayed by Spark into a lake: (log directory, lake root)."""
    from lakehouse.lake import Lake
    from lakehouse.log_rows import entries_frame
    from replay.store.runs import run_replay

    spark = request.getfixturevalue("spark")
    root = tmp_path_factory.mktemp("referee-lake")
    run = run_scenario("reassignment-under-failure", scenario_options("3.3", 3, events=200))
    write_log(run.entries(), root / "log", "segments", cluster_id=run.sim.cluster_id, node_id=3000)
    lake = Lake(root / "lake")
    lake.write(entries_frame(spark, read_entries(root / "log" / METADATA_DIR), None), "metadata_log", "overwrite")
    run_replay(spark, lake)
    return root / "log" / METADATA_DIR, root / "lake"


@pytest.mark.spark
def test_spark_state_is_kafkas_image(kafka: str, replayed_lake: tuple[Path, Path]) -> None:
    """The Spark replay's ``kraft-replay state --format json`` at a few batch ends is Kafka's image there."""
    import json

    from typer.testing import CliRunner

    from kraft_replay.replay_commands import standalone_app

    log_dir, lake = replayed_lake
    run = kafka_fold(kafka, log_dir)
    offsets = sorted(run.changes)
    wanted: dict[int, dict[str, list[dict[str, Any]]]] = {}
    picks = {offsets[len(offsets) * k // 4] for k in range(1, 4)} | {offsets[-1]}
    reassigning = False
    for offset, image in run.images():
        # also the first batch end with a reassignment under way (more replicas than the replication factor)
        first_reassigning = not reassigning and any(len(p["replicas"]) > 3 for p in image["partitions"].values())
        reassigning = reassigning or first_reassigning
        if offset in picks or first_reassigning:
            wanted[offset] = {section: [v for _, v in sorted(image[section].items())]
                              for section in ("brokers", "topics", "partitions")}
    assert reassigning and len(wanted) >= 4
    for offset, expected in wanted.items():
        result = CliRunner().invoke(standalone_app(), ["state", "--offset", str(offset), "--format", "json",
                                                       "--lake", str(lake)])
        assert result.exit_code == 0, result.output
        state = json.loads(result.stdout)
        for b in state["brokers"]:
            for name in ("endPoints", "features"):
                b[name] = sorted(b[name], key=lambda item: item["name"])
        for section, key_fields in KEYS.items():
            if section in expected:
                got = sorted(state[section], key=lambda item, k=key_fields: tuple(item[f] for f in k))
                assert got == expected[section], f"{section} at offset {offset}"


def test_fold_to_the_end_as_the_benchmark_runs_it(kafka: str, tmp_path: Path) -> None:
    """``KafkaFold --end`` (bench/bench_kafka_fold.py) folds as the referee does and prints only its end: the same
    counts and final image as the reference fold, the time and the heap."""
    import json
    import os
    import subprocess

    from replay.reference.fold import fold
    from tests.referee import kafka_classpath

    run = run_scenario("random", scenario_options("3.9", 11, events=300))
    write_log(run.entries(), tmp_path, "segments", cluster_id=run.sim.cluster_id, node_id=3000)
    log_dir = tmp_path / METADATA_DIR
    classpath = os.pathsep.join([str(compiled(kafka)), kafka_classpath(kafka).classpath])
    result = subprocess.run(["java", "-cp", classpath, "KafkaFold", str(log_dir), "--end"], capture_output=True,
                            text=True, timeout=300, check=True)
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(lines) == 1, lines[:3]
    end = lines[0]
    entries = list(read_entries(log_dir))
    image = Image()
    for commit in fold(iter(entries), None):
        image = commit.image
    assert (end["brokers"], end["topics"], end["partitions"]) == (len(image.brokers), len(image.topics),
                                                                 len(image.partitions))
    assert end["records"] == sum(1 for e in entries if not e.is_control) and end["faults"] == 0
    assert end["lastOffset"] == entries[-1].offset and end["published"] == kafka_fold(kafka, log_dir).end["published"]
    assert end["seconds"] > 0 and 0 < end["heapAfterGcBytes"] <= end["heapMaxBytes"] and end["heapPeakBytes"] > 0
