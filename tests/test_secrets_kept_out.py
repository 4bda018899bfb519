"""The test that proves secrets are kept out (issue 19, item 6): a log with secrets in every place a log can hold
them (tests/secrets_support.py: password-type broker and topic configs, an unknown key, cluster-default BROKER
configs, GROUP and CLIENT_METRICS configs, SCRAM credentials of both mechanisms, in segments, in a snapshot,
inside a transaction, in a record ingest rejects) is ingested — decoded by the driver into one lake (delta-rs),
by Spark's executors into another (Delta's own Spark engine) — and replayed; then no file under either lake
holds a secret (raw bytes, and every Parquet value read back), no output of dump, export, state, history, diff,
sql or report shows one, and the fingerprints are the keyed HMACs ingest promises."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from kraft_replay.cli import app
from lakehouse.fingerprint_key import FINGERPRINT_KEY_ENV, fingerprint_key
from lakehouse.ingest import IngestOptions, ingest
from lakehouse.lake import Lake
from lakehouse.spark import DELTA_RS, DELTA_SPARK, has_delta_spark
from lakehouse.tables import INGEST_REJECTS, METADATA_LOG, SNAPSHOTS
from records.redaction import REDACTED, redact
from records.sources import ReadOptions, ReadReport, read_entries
from tests.secrets_support import CLUSTER_ID, SecretsLog, write_secrets_log

runner = CliRunner()


def _secrets_in(root: Path, log: SecretsLog) -> list[str]:
    """Files under ``root`` that hold a secret: in their bytes, or in any value of a Parquet file read back."""
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        blobs = [path.read_bytes()]
        if path.suffix == ".parquet":
            rows = pq.read_table(path).to_pylist()
            blobs.append(json.dumps(rows, default=repr).encode())
            blobs += [value for row in rows for value in row.values() if isinstance(value, bytes)]
        if any(needle in blob for needle in log.needles() for blob in blobs):
            found.append(str(path.relative_to(root)))
    return found


def _cli(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def secrets_lakes(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> tuple[SecretsLog, Path, Path]:
    base = tmp_path_factory.mktemp("secrets")
    log = write_secrets_log(base / "log")
    driver, executors = base / "driver-lake", base / "executor-lake"
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(FINGERPRINT_KEY_ENV, raising=False)
        _cli("ingest", str(log.log_dir), "--lake", str(driver), "--quiet")
        _cli("ingest", str(log.conflicting), "--lake", str(driver), "--quiet")
        _cli("replay", "--lake", str(driver), "--quiet")
        forced = IngestOptions(spark_decode_min_bytes=0)  # every segment decoded by Spark's executors
        lake = Lake(executors, engine=DELTA_SPARK if has_delta_spark(spark) else DELTA_RS)  # the other engine
        ingest(spark, lake, log.log_dir, forced)
        ingest(spark, lake, log.conflicting, forced)
    return log, driver, executors


def test_no_file_of_either_lake_holds_a_secret(secrets_lakes: tuple[SecretsLog, Path, Path]) -> None:
    log, driver, executors = secrets_lakes
    assert _secrets_in(log.log_dir, log)  # the log itself holds them all: the check finds them
    for root in (driver, executors):
        assert _secrets_in(root, log) == []
        assert Path(f"{root}.fingerprint-key").is_file() and not list(root.rglob("*fingerprint-key*"))


def test_the_lake_keeps_redacted_records_and_their_fingerprints(secrets_lakes: tuple[SecretsLog, Path, Path]
                                                                ) -> None:
    log, driver, executors = secrets_lakes
    key = fingerprint_key(str(driver))
    expected = {entry.offset: redact(entry, key).secret_fingerprint
                for entry in read_entries(log.log_dir, ReadOptions(), ReadReport()) if not entry.is_control}
    for root in (driver, executors):
        rows = {row["offset"]: row for row in DeltaTable(str(root / METADATA_LOG)).to_pyarrow_table().to_pylist()}
        stored_key = fingerprint_key(str(root))
        fingerprints = {offset: row["secret_fingerprint"] for offset, row in rows.items()}
        assert sorted(offset for offset, value in fingerprints.items() if value) == log.sensitive_offsets
        if root == driver:
            assert fingerprints == {offset: expected.get(offset) for offset in rows}
        else:
            assert stored_key != key  # another lake, another key: other fingerprints of the same secrets
            assert fingerprints[2] != expected[2]
        assert [json.loads(rows[offset]["payload_json"]).get("value") for offset in log.sensitive_offsets[:7]] == [
            REDACTED] * 7
        assert json.loads(rows[12]["payload_json"])["salt"] == ""
        assert json.loads(rows[5]["payload_json"])["value"] == "17"  # what is not secret stays readable
        assert rows[17]["secret_fingerprint"] is None  # a deletion: nothing secret
        snapshot = DeltaTable(str(root / SNAPSHOTS)).to_pyarrow_table().to_pylist()
        by_type = {(row["record_type"], row["offset"]): row for row in snapshot}
        assert json.loads(by_type[("ConfigRecord", 2)]["payload_json"])["value"] == REDACTED
        assert by_type[("ConfigRecord", 2)]["secret_fingerprint"] is not None
        assert by_type[("UserScramCredentialRecord", 4)]["secret_fingerprint"] is not None
        rejects = [row for row in DeltaTable(str(root / INGEST_REJECTS)).to_pyarrow_table().to_pylist()
                   if row["kind"] == "conflict"]
        # the other keystore password at offset 2: a conflict although the redacted payloads are equal
        assert [(row["offset"], row["record_type"]) for row in rejects] == [(2, "ConfigRecord")]
        assert b"s3cret" not in rejects[0]["payload"]


def test_no_output_shows_a_secret(secrets_lakes: tuple[SecretsLog, Path, Path], tmp_path: Path) -> None:
    log, driver, _ = secrets_lakes
    lake = ["--lake", str(driver)]
    outputs = {
        "dump": _cli("dump", str(log.log_dir)),
        "dump snapshot": _cli("dump", str(log.snapshot), "--cluster-id", CLUSTER_ID),
        "state": _cli("state", *lake, "--offset", "18", "--format", "json"),
        "state table": _cli("state", *lake, "--offset", "18"),
        "diff": _cli("diff", *lake, "--from", "0", "--to", "17"),
        "sql log": _cli("sql", *lake, "--format", "json", "--limit", "0", "SELECT * FROM metadata_log"),
        "sql snapshots": _cli("sql", *lake, "--format", "json", "--limit", "0", "SELECT * FROM snapshots"),
        "sql rejects": _cli("sql", *lake, "--format", "json", "--limit", "0", "SELECT * FROM ingest_rejects"),
        "history": _cli("history", *lake, "--topic", "orders", "--partition", "0"),
    }
    _cli("export", str(log.log_dir), "--out", str(tmp_path / "log.avro"), "--codec", "null")
    _cli("report", *lake, "--out", str(tmp_path / "report"))
    needles = [needle.decode("latin-1") for needle in log.needles()]
    for name, text in outputs.items():
        assert not [needle for needle in needles if needle in text], name
    for path in [tmp_path / "log.avro", *(tmp_path / "report").iterdir()]:
        assert not [needle for needle in log.needles() if needle in path.read_bytes()], path
    assert outputs["sql log"].count(REDACTED) >= 8 and "secret_fingerprint" in outputs["sql log"]
    assert outputs["dump snapshot"].count(REDACTED) == 1

    kept = runner.invoke(app, ["dump", str(log.log_dir), "--keep-secrets"])
    assert kept.exit_code == 0 and "warning: --keep-secrets" in kept.stderr
    for value in log.secret_values[:-2]:  # the snapshot's and the conflicting one are in other files
        assert value in kept.stdout
    assert "--keep-secrets" not in _cli("ingest", "--help")  # ingest never stores them
