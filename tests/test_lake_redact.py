"""lakehouse.lake_redact (`kraft-replay lake redact`): a lake written before secrets were redacted — its rows as
the ingest of then wrote them, with delta-rs, without the secret_fingerprint column — is rewritten so that no
file under it holds a secret any more, the fingerprints are those ingest now stores, and a second run does
nothing. Without Spark: the migration needs none."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake
from typer.testing import CliRunner

from kraft_replay.cli import app
from lakehouse.fingerprint_key import FINGERPRINT_KEY_ENV, fingerprint_key
from lakehouse.lake import Lake
from lakehouse.lake_redact import redact_lake, require_redacted_lake
from lakehouse.lake_root import LakeError
from lakehouse.tables import INGEST_REJECTS, METADATA_LOG, SCHEMAS, SNAPSHOTS
from records.avro_codec import encode_payload, schema_id
from records.kafka_json import dumps_compact, struct_to_json
from records.model import LogEntry, MetadataRecord
from records.redaction import REDACTED, redact
from tests.secrets_support import BROKER, TOPIC, config, scram

CLUSTER = "OldLakeCluster00000000A"
NOW = datetime(2026, 1, 1, tzinfo=UTC)
SECRETS = [b"s3cret-old-keystore", b"s3cret-old-snapshot", b"s3cret-old-conflict", b"s3cret-old-raw",
           b"SALT-old", b"STOREDKEY-old", b"SERVERKEY-old"]


def _old_schema(name: str) -> pa.Schema:
    return pa.schema([column for column in SCHEMAS[name] if column.name != "secret_fingerprint"])


def _old_row(offset: int, record: MetadataRecord, **extra: Any) -> dict[str, Any]:
    """A metadata_log row as ingest wrote it before redaction: the record as it is in the log."""
    return {"cluster_id": CLUSTER, "offset": offset, "batch_base_offset": offset, "raft_leader_epoch": 1,
            "append_time_ms": 1_700_000_000_000 + offset, "append_time": NOW, "api_key": record.api_key,
            "control_type": None, "record_version": record.version, "record_type": record.type_name,
            "control": False, "read_mode": "exact", "schema_id": schema_id(record.type_name),
            "payload": encode_payload(record), "notes": None, "source_file": "old.log", "source_position": offset,
            "payload_json": dumps_compact(struct_to_json(record.definition.body, record.layout_version,
                                                         record.data)),
            "ingest_id": "old-ingest", "ingest_time": NOW, **extra}


def _raw_row(offset: int) -> dict[str, Any]:
    """A ConfigRecord whose bytes did not fit: stored raw, secret and all."""
    return {**_old_row(offset, config(BROKER, "1", "x", "y")), "read_mode": "raw", "schema_id": None,
            "payload": b"\x01\x04\x00bytes-holding-s3cret-old-raw", "payload_json": None}


def _write(root: Path, name: str, rows: list[dict[str, Any]], mode: str = "append") -> None:
    write_deltalake(str(root / name), pa.Table.from_pylist(rows, schema=_old_schema(name)), mode=mode)


def _old_lake(root: Path) -> None:
    """metadata_log in two commits (the second file holds no secret) and one overwrite (a file that held secrets,
    no longer referenced, still on disk); snapshots; ingest_rejects with a conflict's payload; a killed ingest's
    staged rows."""
    keystore = config(BROKER, "1", "ssl.keystore.password", "s3cret-old-keystore")
    first = [_old_row(0, config(TOPIC, "orders", "retention.ms", "1000")), _old_row(1, keystore),
             _old_row(2, scram("alice", 1, "old")), _raw_row(3)]
    _write(root, METADATA_LOG, first)
    _write(root, METADATA_LOG, first, mode="overwrite")
    _write(root, METADATA_LOG, [_old_row(4, config(BROKER, "1", "num.io.threads", "8"))])
    snapshot = {"snapshot_end_offset": 4, "snapshot_epoch": 1}
    _write(root, SNAPSHOTS, [_old_row(1, config(BROKER, "", "sasl.jaas.config", "s3cret-old-snapshot"), **snapshot)])
    conflict = config(BROKER, "1", "ssl.keystore.password", "s3cret-old-conflict")
    reject = {"cluster_id": CLUSTER, "kind": "conflict", "offset": 1, "end_offset": 1, "record_type": "ConfigRecord",
              "record_version": 0, "payload": encode_payload(conflict), "reason": "offset already stored",
              "source_file": "other.log", "source_position": 1, "ingest_id": "old-ingest", "ingest_time": NOW}
    gap = {**reject, "kind": "gap", "offset": 5, "end_offset": 9, "record_type": None, "payload": None}
    _write(root, INGEST_REJECTS, [reject, gap])
    staged = root / "_staging" / "killed-ingest" / "segments-00001"
    staged.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([_old_row(1, keystore)], schema=_old_schema(METADATA_LOG)),
                   staged / "part-00000.parquet")


def _needles() -> list[bytes]:
    return SECRETS + [base64.b64encode(raw) for raw in SECRETS[4:]]


def _secrets_left(root: Path) -> list[str]:
    """Every file under the lake holding a secret: its raw bytes, and for Parquet every value read back."""
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        values = json.dumps(pq.read_table(path).to_pylist(), default=lambda v: repr(v)).encode() + b"".join(
            value for row in pq.read_table(path).to_pylist() for value in row.values() if isinstance(value, bytes)
        ) if path.suffix == ".parquet" else b""
        if any(needle in data or needle in values for needle in _needles()):
            found.append(str(path.relative_to(root)))
    return found


@pytest.fixture
def key_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(FINGERPRINT_KEY_ENV, raising=False)
    return tmp_path / "lake.fingerprint-key"


def test_redact_rewrites_an_old_lake_and_leaves_no_secret_on_disk(tmp_path: Path, key_file: Path) -> None:
    root = tmp_path / "lake"
    _old_lake(root)
    lake = Lake(root)
    assert len(_secrets_left(root)) >= 5  # the two metadata_log files, snapshots, rejects, staging, Delta log
    with pytest.raises(LakeError, match=r"metadata_log was written before secrets were redacted .* lake redact"):
        require_redacted_lake(lake)

    key = fingerprint_key(str(root))
    summary = redact_lake(lake, key)
    assert summary.columns_added == ["metadata_log.secret_fingerprint", "snapshots.secret_fingerprint"]
    assert summary.rows_redacted == {METADATA_LOG: 3, SNAPSHOTS: 1, INGEST_REJECTS: 1}
    assert summary.files_rewritten == {METADATA_LOG: 1, SNAPSHOTS: 1, INGEST_REJECTS: 1}
    assert len([p for p in summary.files_deleted if "/metadata_log/" in p]) == 2  # rewritten + overwritten one
    assert any("_staging/killed-ingest" in p for p in summary.files_deleted)
    assert _secrets_left(root) == []
    require_redacted_lake(lake)

    rows = {row["offset"]: row for row in DeltaTable(str(root / METADATA_LOG)).to_pyarrow_table().to_pylist()}
    assert sorted(rows) == [0, 1, 2, 3, 4]
    keystore = redact(LogEntry(1, config(BROKER, "1", "ssl.keystore.password", "s3cret-old-keystore")), key)
    assert json.loads(rows[1]["payload_json"])["value"] == REDACTED
    assert rows[1]["secret_fingerprint"] == keystore.secret_fingerprint  # what ingest stores with the same key
    assert rows[1]["payload"] == encode_payload(keystore.record)
    assert json.loads(rows[2]["payload_json"])["salt"] == ""
    assert rows[2]["secret_fingerprint"] == redact(LogEntry(2, scram("alice", 1, "old")), key).secret_fingerprint
    assert rows[3]["payload"] == b"" and "raw bytes withheld" in rows[3]["notes"]
    assert rows[0]["secret_fingerprint"] is None and json.loads(rows[0]["payload_json"])["value"] == "1000"
    assert rows[4]["secret_fingerprint"] is None
    snapshot = DeltaTable(str(root / SNAPSHOTS)).to_pyarrow_table().to_pylist()
    assert json.loads(snapshot[0]["payload_json"])["value"] == REDACTED and snapshot[0]["secret_fingerprint"]
    rejects = {row["kind"]: row for row in DeltaTable(str(root / INGEST_REJECTS)).to_pyarrow_table().to_pylist()}
    assert b"s3cret" not in rejects["conflict"]["payload"] and rejects["gap"]["payload"] is None

    again = redact_lake(lake, key)
    assert not again.changed and again.rows_redacted == {METADATA_LOG: 0, SNAPSHOTS: 0, INGEST_REJECTS: 0}


def test_the_command_says_what_it_did(tmp_path: Path, key_file: Path) -> None:
    root = tmp_path / "lake"
    _old_lake(root)
    result = CliRunner().invoke(app, ["lake", "redact", "--lake", str(root)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[:5] == ["added column metadata_log.secret_fingerprint", "added column snapshots.secret_fingerprint",
                         f"{METADATA_LOG}: 3 record(s) redacted in 1 file(s) (version 4)",
                         f"{SNAPSHOTS}: 1 record(s) redacted in 1 file(s) (version 2)",
                         f"{INGEST_REJECTS}: 1 record(s) redacted in 1 file(s) (version 1)"]
    assert lines[-1] == f"fingerprint key: {key_file}"
    assert key_file.exists() and not (root / key_file.name).exists()
    again = CliRunner().invoke(app, ["lake", "redact", "--lake", str(root)])
    assert again.stdout.splitlines()[-1] == "nothing to do: the lake holds no secret"
