"""Cluster health series, the plots and the HTML report, on the demo's simulated incident (tests/incident_lake.py)."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from kraft_replay.cli import app
from kraft_replay.plots import COLORS, broker_fencing_figure, cluster_health_figure, save_png
from kraft_replay.report import write_report
from replay.audit.health import (
    BrokerSpan,
    HealthPoint,
    broker_spans,
    busiest_partition,
    collect_broker_spans,
    collect_health,
    collect_timeline,
    health_series,
    health_window,
    leader_changes,
    partition_timeline,
    peaks,
)
from replay.query.state import QueryError
from tests.incident_lake import IncidentLake, incident_lake

runner = CliRunner()


@pytest.fixture(scope="module")
def incident(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> IncidentLake:
    return incident_lake(spark, tmp_path_factory)


def _tables(spark: SparkSession, incident: IncidentLake) -> tuple:
    return incident.lake.read(spark, "partition_history"), incident.lake.read(spark, "broker_history")


def _value_at(points: list[HealthPoint], offset: int, metric: str) -> int:
    """The step series' value in force at ``offset`` (0 before the first point)."""
    value = 0
    for point in points:
        if point.offset > offset:
            break
        value = getattr(point, metric)
    return value


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from the PNG header (signature, then the IHDR chunk)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _has_color(path: Path, hex_color: str) -> bool:
    pixels = (imread(path)[:, :, :3] * 255).round().astype(int)
    rgb = [int(hex_color[i:i + 2], 16) for i in (1, 3, 5)]
    return bool(np.any(np.all(np.abs(pixels - rgb) <= 2, axis=-1)))


# --- the series --------------------------------------------------------------------------------


def test_offline_count_is_one_exactly_while_topic_0_0_has_no_leader(spark: SparkSession,
                                                                     incident: IncidentLake) -> None:
    partitions, brokers = _tables(spark, incident)
    points = collect_health(health_series(partitions, brokers))
    offline = {offset: _value_at(points, offset, "offline") for offset in range(0, 174)}
    assert [o for o, v in offline.items() if v == 1] == list(range(64, 131))  # leader -1 at 64, elected at 131
    assert set(offline.values()) == {0, 1}
    # The changing offsets of each count, with the value after them.
    assert [(p.offset, p.offline) for p in points if p.offset in (63, 64, 130, 131)] == [(64, 1), (131, 0)]
    assert [(p.offset, p.under_replicated) for p in points if p.offset in (37, 64, 65, 68, 131, 165, 169)] == [
        (37, 1), (64, 0), (65, 1), (68, 4), (131, 5), (165, 4), (169, 0)]
    fenced = [(p.offset, p.fenced_brokers) for p in points if p.offset <= 20 or p.offset in (69, 163, 164)]
    assert fenced == [(9, 1), (10, 2), (11, 3), (12, 4), (13, 5), (16, 4), (17, 3), (18, 2), (19, 1), (20, 0),
                      (69, 1), (163, 1), (164, 0)]
    assert points[0].time_ms == 1700000000020 and [p.time_ms for p in points if p.offset == 64] == [1700000014276]


def test_health_window_starts_at_the_counts_in_force(spark: SparkSession, incident: IncidentLake) -> None:
    partitions, brokers = _tables(spark, incident)
    series = health_series(partitions, brokers)
    inside = collect_health(health_window(series, 100, 165))
    assert inside[0] == HealthPoint(100, None, 1, 4, 1)  # carried from offset 69
    assert [(p.offset, p.offline, p.under_replicated, p.fenced_brokers) for p in inside[1:]] == [
        (131, 0, 5, 1), (142, 0, 5, 1), (163, 0, 5, 1), (164, 0, 5, 0), (165, 0, 4, 0)]
    assert collect_health(health_window(series, 64, 64)) == [HealthPoint(64, 1700000014276, 1, 0, 0)]


def test_long_series_are_bucketed_keeping_each_peak(spark: SparkSession, incident: IncidentLake) -> None:
    partitions, brokers = _tables(spark, incident)
    points = collect_health(health_series(partitions, brokers), max_points=4)
    assert len(points) <= 4
    assert max(p.offline for p in points) == 1
    assert max(p.under_replicated for p in points) == 5
    assert max(p.fenced_brokers for p in points) == 5


def test_peaks(spark: SparkSession, incident: IncidentLake) -> None:
    partitions, brokers = _tables(spark, incident)
    series = health_series(partitions, brokers)
    worst = peaks(series)
    assert (worst["offline"].value, worst["offline"].offset) == (1, 64)
    assert (worst["under_replicated"].value, worst["under_replicated"].offset) == (5, 131)
    assert (worst["fenced_brokers"].value, worst["fenced_brokers"].offset) == (5, 13)  # all fenced at registration
    # each peak's time is the time of the series' row at its offset (the first reaching it, not a later one)
    times = {r["offset"]: r["time_ms"] for r in series.collect()}
    assert all(times[p.offset] is not None and p.time_ms == times[p.offset] for p in worst.values())
    assert len({p.time_ms for p in worst.values()}) == 3


def test_partition_timeline_and_the_busiest_partition(spark: SparkSession, incident: IncidentLake) -> None:
    partitions, _ = _tables(spark, incident)
    assert busiest_partition(partitions) == ("topic-0", 0, 3)  # 5 → -1 → 4 → 5
    changes = {(r["topic_name"], r["partition_id"]): r["leader_changes"] for r in leader_changes(partitions).collect()}
    assert changes[("topic-1", 2)] == 2 and changes[("topic-0", 1)] == 0 and len(changes) == 12
    timeline = collect_timeline(partition_timeline(partitions, "topic-0", 0))
    assert [(p.offset, p.leader, p.leader_epoch, p.isr_size, p.replicas_size) for p in timeline] == [
        (22, 5, 0, 2, 2), (37, 5, 0, 1, 2), (64, -1, 1, 1, 2), (131, 4, 2, 1, 2), (142, 4, 2, 1, 2),
        (165, 4, 2, 2, 2), (170, 5, 3, 2, 2)]
    assert timeline[2].to_offset == 131 and timeline[-1].to_offset is None
    assert timeline[2].time_ms == 1700000014276 and timeline[0].cause_type == "PartitionRecord"
    clipped = collect_timeline(partition_timeline(partitions, "topic-0", 0), 100, 150)
    assert [p.offset for p in clipped] == [64, 131, 142]


def test_broker_spans_merge_equal_states(spark: SparkSession, incident: IncidentLake) -> None:
    _, brokers = _tables(spark, incident)
    spans = collect_broker_spans(broker_spans(brokers))
    five = [(s.state, s.from_offset, s.to_offset) for s in spans if s.broker_id == 5]
    # fenced at 69, re-registered fenced at 163 (one span), unfenced at 164
    assert five == [("fenced", 13, 20), ("unfenced", 20, 69), ("fenced", 69, 164), ("unfenced", 164, None)]
    assert [(s.state, s.from_offset, s.to_offset) for s in spans if s.broker_id == 1] == [
        ("fenced", 9, 16), ("unfenced", 16, None)]
    # At most 2 lanes: the most often fenced broker (5), then the first by id; drawn in id order.
    assert [s.broker_id for s in collect_broker_spans(broker_spans(brokers), max_brokers=2)] == [1, 1, 5, 5, 5, 5]


def test_broker_spans_show_controlled_shutdown_and_unregistration(spark: SparkSession) -> None:
    rows = [("c", 1, 5, False, False, 0, 10, 100, 200), ("c", 1, 5, False, True, 10, 12, 200, 220),
            ("c", 1, 5, True, True, 12, 15, 220, 250), ("c", 1, 30, True, False, 20, 21, 300, 310),
            ("c", 1, 30, False, False, 21, None, 310, None)]
    brokers = spark.createDataFrame(rows, "cluster_id STRING, broker_id INT, broker_epoch BIGINT, fenced BOOLEAN, "
                                    "in_controlled_shutdown BOOLEAN, valid_from_offset BIGINT, valid_to_offset BIGINT, "
                                    "valid_from_time_ms BIGINT, valid_to_time_ms BIGINT")
    spans = collect_broker_spans(broker_spans(brokers))
    assert [(s.state, s.from_offset, s.to_offset, s.from_time_ms, s.to_time_ms) for s in spans] == [
        ("unfenced", 0, 10, 100, 200), ("controlled shutdown", 10, 12, 200, 220), ("fenced", 12, 15, 220, 250),
        ("unregistered", 15, 20, 250, 300), ("fenced", 20, 21, 300, 310), ("unfenced", 21, None, 310, None)]


# --- plots and report --------------------------------------------------------------------------


def test_report_writes_three_non_trivial_pngs_and_one_page(spark: SparkSession, incident: IncidentLake,
                                                            tmp_path: Path) -> None:
    report = write_report(spark, incident.lake, tmp_path / "report")
    assert (report.topic, report.partition, report.from_offset, report.to_offset) == ("topic-0", 0, 0, 173)
    assert report.notes == ["partition timeline: topic-0-0, the partition with the most leader changes (3); "
                            "choose another with --topic and --partition"]
    sizes = {name: png_size(path) for name, path in report.images.items()}
    assert sizes == {"partition_timeline": (1100, 750), "cluster_health": (1100, 750), "broker_fencing": (1100, 345)}
    for path in report.images.values():
        assert path.stat().st_size > 20_000, path
    # The data is drawn: the offline series' color, broker 5's fenced span, the ISR line.
    assert _has_color(report.images["cluster_health"], COLORS["offline"])
    assert _has_color(report.images["broker_fencing"], COLORS["fenced"])
    assert _has_color(report.images["partition_timeline"], COLORS["isr"])
    page = report.html.read_text(encoding="utf-8")
    assert page.count('src="data:image/png;base64,') == 3
    assert "<h1>Cluster kRaFtRePlAyDeMoClUsTeR</h1>" in page
    assert "offsets 0 (2023-11-14T22:13:20.000Z) to 173 (2023-11-14T22:14:19.500Z)" in page
    assert "broker 5 (epoch 13) fenced at offset 69" in page
    assert "topic-0-0: broker 4 elected at offset 131, previous ISR [5]" in page


def test_report_of_a_range_and_a_chosen_partition(spark: SparkSession, incident: IncidentLake,
                                                  tmp_path: Path) -> None:
    report = write_report(spark, incident.lake, tmp_path, from_offset=60, to_offset=140, topic="topic-1",
                          partition=2)
    assert (report.topic, report.partition, report.from_offset, report.to_offset, report.notes) == (
        "topic-1", 2, 60, 140, [])
    assert all(png_size(p)[0] == 1100 for p in report.images.values())
    with pytest.raises(QueryError, match="no partition topic-9-0 in partition_history"):
        write_report(spark, incident.lake, tmp_path, topic="topic-9", partition=0)
    with pytest.raises(QueryError, match="give both --topic and --partition"):
        write_report(spark, incident.lake, tmp_path, topic="topic-1")
    with pytest.raises(QueryError, match="--from 150 is after --to 140"):
        write_report(spark, incident.lake, tmp_path, from_offset=150, to_offset=140)


def test_plots_without_data_are_still_pictures(tmp_path: Path) -> None:
    health = save_png(cluster_health_figure([], start=0, end=10), tmp_path / "h.png")
    lanes = save_png(broker_fencing_figure([], start=0, end=10), tmp_path / "b.png")
    assert png_size(health) == (1100, 750) and png_size(lanes) == (1100, 300)
    one = [BrokerSpan(7, "fenced", 5, None, None, None)]
    assert png_size(save_png(broker_fencing_figure(one, start=0, end=10), tmp_path / "one.png")) == (1100, 300)


def test_report_command(spark: SparkSession, incident: IncidentLake, tmp_path: Path) -> None:
    out = tmp_path / "r"
    result = runner.invoke(app, ["report", "--out", str(out), "--lake", incident.lake.root, "--from", "50"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[:2] == [
        "report of cluster kRaFtRePlAyDeMoClUsTeR, offsets 50..173",
        "  partition timeline: topic-0-0, the partition with the most leader changes (3); choose another with "
        "--topic and --partition"]
    assert f"  open {out.resolve() / 'index.html'}" in result.stdout
    assert sorted(p.name for p in out.iterdir()) == ["broker_fencing.png", "cluster_health.png", "index.html",
                                                     "partition_timeline.png"]
    assert "\x1b[" not in result.output  # no progress escape codes when not on a terminal
    bad = runner.invoke(app, ["report", "--out", str(out), "--lake", incident.lake.root, "--topic", "topic-0"])
    assert bad.exit_code == 2
    assert "give both --topic and --partition, or neither" in bad.stderr
    missing = runner.invoke(app, ["report", "--out", str(out), "--lake", str(tmp_path / "nothing")])
    assert missing.exit_code == 2
    assert (f"no table metadata_log in the lake at {tmp_path / 'nothing'}: run `kraft-replay ingest` first"
            in missing.stderr)
