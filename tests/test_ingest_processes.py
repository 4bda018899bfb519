"""Ingests as separate processes: two at once over overlapping sources, kill -9 at random moments then
re-run, and `ingest --follow` picking up a new segment then stopping on SIGTERM."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable

from lakehouse.lake import Lake
from lakehouse.tables import METADATA_LOG
from records.writer import write_segments
from simulator import ScenarioOptions, run_scenario
from tests.test_lake_support import CLUSTER, simulated, write_jsonl_file, write_log_dir

REPO = Path(__file__).resolve().parents[1]
# One JVM per process, small: the test machine has 2 cores for two processes.
SCRIPT = """
import json, sys
from lakehouse.ingest import IngestOptions, ingest
from lakehouse.lake import Lake
from lakehouse.spark import SparkOptions, get_spark
spark = get_spark(SparkOptions(master="local[1]", shuffle_partitions=2, driver_memory="512m"))
lake, chunk, sources = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
for source in sources:
    options = IngestOptions(cluster_id="CLUSTER_ID", chunk_bytes=chunk, spark_decode_min_bytes=0)
    s = ingest(spark, Lake(lake), source, options)
    print(json.dumps({"source": source, "added": s.records_added, "skipped": s.records_skipped,
                      "conflicts": s.conflicts, "retries": s.commit_retries}), flush=True)
""".replace("CLUSTER_ID", CLUSTER)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable}


def _start(lake: Path, sources: list[Path], chunk_bytes: int = 1 << 30) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", SCRIPT, str(lake), str(chunk_bytes), *map(str, sources)],
                            cwd=REPO, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # its own process group: the JVM dies with it on kill


def _offsets(lake: Path) -> list[int]:
    """The stored offsets; none while the table's directory exists but its first commit is still being written."""
    if not DeltaTable.is_deltatable(str(lake / METADATA_LOG)):
        return []
    table = DeltaTable(str(lake / METADATA_LOG)).to_pyarrow_table(columns=["offset"])
    return sorted(pa.table(table).column("offset").to_pylist())


def test_two_concurrent_ingests_never_duplicate_or_lose_an_offset(tmp_path: Path) -> None:
    entries = simulated()
    n = len(entries)
    # Process A: a JSON-lines prefix, then the whole log as segments; process B: overlapping slices.
    a_sources = [write_jsonl_file(tmp_path / "a1.jsonl", entries[: n // 2]),
                 write_log_dir(tmp_path / "log", entries, segment_bytes=32 * 1024)]
    b_sources = [write_jsonl_file(tmp_path / f"b{i}.jsonl", entries[i * n // 3: (i + 2) * n // 3]) for i in range(2)]
    lake = tmp_path / "lake"
    Lake(lake).ensure_tables()  # both then race on the same tables (creation is race-safe too)
    first, second = _start(lake, a_sources), _start(lake, b_sources)
    outputs = [process.communicate(timeout=240) for process in (first, second)]
    for process, (_out, err) in zip((first, second), outputs, strict=True):
        assert process.returncode == 0, err[-3000:]
    assert _offsets(lake) == list(range(n))  # each offset exactly once
    reports = [json.loads(line) for out, _ in outputs for line in out.splitlines() if line.startswith("{")]
    assert sum(r["added"] for r in reports) == n and sum(r["conflicts"] for r in reports) == 0
    print("commit retries:", sum(r["retries"] for r in reports))


def test_kill_9_mid_ingest_then_rerun_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    entries = list(run_scenario("random", ScenarioOptions(events=1500, topics=10, partitions_per_topic=10,
                                                          seed=7)).entries())
    log = write_log_dir(tmp_path / "log", entries, segment_bytes=256 * 1024)
    lake = tmp_path / "lake"
    rng = random.Random(11)
    kills = 0
    for delay in (rng.uniform(6, 9), rng.uniform(8, 12), rng.uniform(10, 15)):
        process = _start(lake, [log], 1536 * 1024)
        time.sleep(delay)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)  # the python driver and its JVM, mid-way
            kills += 1
        process.communicate(timeout=60)
        if (lake / METADATA_LOG).exists():
            stored = _offsets(lake)
            assert len(stored) == len(set(stored))  # consistent after every kill: never a duplicate
    assert kills >= 2
    final = _start(lake, [log], 1536 * 1024)
    _out, err = final.communicate(timeout=240)
    assert final.returncode == 0, err[-3000:]
    assert _offsets(lake) == list(range(len(entries)))
    history = Lake(lake).history(METADATA_LOG)
    assert sum(h.rows_added or 0 for h in history) == len(entries)


def test_follow_picks_up_a_new_segment_and_stops_on_sigterm(tmp_path: Path) -> None:
    entries = simulated()
    log = write_log_dir(tmp_path / "log", entries[:400])
    lake = tmp_path / "lake"
    command = [sys.executable, "-m", "kraft_replay.lake_commands", "ingest", "--follow", str(log),
               "--lake", str(lake), "--interval", "0.5", "--master", "local[1]"]
    process = subprocess.Popen(command, cwd=REPO, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (
                (lake / METADATA_LOG).exists() and len(_offsets(lake)) == 400):
            assert process.poll() is None, process.communicate()[1][-3000:]
            time.sleep(0.5)
        # Kafka rolls a new segment: it appears whole here (written beside, then renamed into the log), so the
        # follower takes it in one round, never a part of it in one and the rest in the next
        for segment in write_segments(entries[400:], tmp_path / "rolled"):
            segment.rename(log / "__cluster_metadata-0" / segment.name)
        while time.monotonic() < deadline and len(_offsets(lake)) < len(entries):
            time.sleep(0.5)
        assert _offsets(lake) == list(range(len(entries)))
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 0, err[-3000:]
    assert "stopped after 2 ingest round(s)" in out
