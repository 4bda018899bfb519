"""`kraft-replay lake redact`: a lake written before secrets were redacted, rewritten so that none is left on disk.

Ingest redacts every record as it decodes it (``lakehouse.log_rows.entry_row``), so only a lake written before
that holds secrets: sensitive ConfigRecord values and SCRAM salts and keys in ``metadata_log`` and ``snapshots``
(both the Avro ``payload`` and ``payload_json``) and in the payload of ``ingest_rejects`` rows. This migration

1. adds the ``secret_fingerprint`` column to ``metadata_log`` and ``snapshots`` where it is missing;
2. rewrites every data file that holds a secret with its records redacted and fingerprinted as ingest does
   (``records.redaction.redact`` with the lake's key), in one Delta commit per table;
3. deletes those files from disk (Delta keeps removed files for time travel: these must go), and any file of an
   older version or a killed ingest's staging directory that still holds a secret;
4. drops the column statistics those files left in the Delta log (a file's min/max ``payload_json`` can be a
   whole record) and the checkpoints older than a new one taken now.

It reads and writes with pyarrow and delta-rs, without Spark: only files with a record of a secret-bearing type
are read whole. Running it again finds nothing to do. Time travel to a version before it no longer works for the
files it deleted: that is the point.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError
from deltalake.schema import Field, PrimitiveType
from deltalake.transaction import AddAction, RemoveAction

from lakehouse.delta_commit import commit_at_version, removed_file, staged_add_actions
from lakehouse.lake import Lake
from lakehouse.lake_commit import CONFLICT, OPERATION_KEY, ROWS_KEY, Conflict
from lakehouse.lake_root import STAGING_DIR, LakeError
from lakehouse.parquet_files import arrow_filesystem
from lakehouse.tables import INGEST_REJECTS, METADATA_LOG, SCHEMAS, SNAPSHOTS, spark_schema
from records.avro_codec import decode_payload, encode_payload, schema_id
from records.definitions import definitions
from records.kafka_json import dumps_compact, record_from_json, struct_to_json
from records.model import LogEntry, MetadataRecord, RawRecord, ReadMode
from records.redaction import RAW_WITHHELD_NOTE, SECRET_RECORD_TYPES, redact

FINGERPRINT_COLUMN = "secret_fingerprint"
LOG_TABLES = (METADATA_LOG, SNAPSHOTS)
REDACTED_TABLES = (*LOG_TABLES, INGEST_REJECTS)
_DELTA_LOG = "_delta_log"
_PAYLOAD_STATS = ("payload", "payload_json")  # the columns whose min/max may quote a record


@dataclass
class RedactSummary:
    """What the migration did, table by table."""

    columns_added: list[str] = field(default_factory=list)
    rows_redacted: dict[str, int] = field(default_factory=dict)
    files_rewritten: dict[str, int] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)
    files_deleted: list[str] = field(default_factory=list)
    log_files_cleaned: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.columns_added or any(self.rows_redacted.values()) or self.files_deleted
                    or self.log_files_cleaned)


def require_redacted_lake(lake: Lake) -> None:
    """Refuse to ingest into a lake written before secrets were redacted: its rows would mix with redacted ones."""
    for name in LOG_TABLES:
        if lake.table_exists(name) and FINGERPRINT_COLUMN not in lake.delta_table(name).schema().to_arrow().names:
            raise LakeError(f"{lake.path(name)} was written before secrets were redacted (no {FINGERPRINT_COLUMN} "
                            f"column): run `kraft-replay lake redact` once, then ingest")


def _entry(row: dict[str, Any], name: str) -> LogEntry | None:
    """The row's record as ingest read it (None unless it is of a secret-bearing type)."""
    type_name = row.get("record_type")
    if type_name not in SECRET_RECORD_TYPES or row.get("payload") is None:
        return None
    version = row["record_version"]
    if row.get("read_mode") == ReadMode.RAW:
        record: MetadataRecord | RawRecord = RawRecord(definitions()[type_name].api_key, None, version,
                                                       row["payload"], "read as raw bytes")
    elif row.get("payload_json") is not None:  # Kafka's JSON form: the same whatever Avro schema wrote the payload
        record = record_from_json({"type": definitions()[type_name].json_type_name, "version": version,
                                   "data": json.loads(row["payload_json"])}, best_effort=True)
    else:
        try:
            record = decode_payload(type_name, version, row["payload"])
        except Exception:  # a rejected record's bytes that do not decode: keep none of them
            record = RawRecord(definitions()[type_name].api_key, None, version, row["payload"], "undecodable")
    return LogEntry(offset=row.get("offset") or 0, record=record, notes=())


def _redacted_row(row: dict[str, Any], name: str, key: bytes) -> dict[str, Any] | None:
    """The row with its record redacted as ingest would store it, or None when it holds no secret."""
    entry = _entry(row, name)
    if entry is None:
        return None
    redacted = redact(entry, key)
    if redacted is entry:
        return None
    out = dict(row)
    record = redacted.record
    if isinstance(record, RawRecord):
        out["payload"] = record.value
        if "notes" in out:
            out["notes"] = "; ".join(filter(None, [row.get("notes"), RAW_WITHHELD_NOTE]))
    else:
        out["payload"] = encode_payload(record)
        if name in LOG_TABLES:
            out["payload_json"] = dumps_compact(struct_to_json(record.definition.body, record.layout_version,
                                                               record.data))
            out["schema_id"] = schema_id(record.type_name)
    if name in LOG_TABLES:
        out[FINGERPRINT_COLUMN] = redacted.secret_fingerprint
    return out


def _read(filesystem: pafs.FileSystem, path: str, columns: list[str] | None = None) -> pa.Table:
    with filesystem.open_input_file(path) as handle:
        parquet = pq.ParquetFile(handle)
        present = set(parquet.schema_arrow.names)
        return parquet.read(columns=[c for c in columns if c in present] if columns is not None else None)


def _has_candidates(filesystem: pafs.FileSystem, path: str) -> bool:
    """Whether the file holds a record of a secret-bearing type (the only files worth reading whole)."""
    types = _read(filesystem, path, ["record_type"])
    return "record_type" in types.column_names and any(
        value in SECRET_RECORD_TYPES for value in types.column("record_type").unique().to_pylist())


def _rewritten(filesystem: pafs.FileSystem, path: str, name: str, key: bytes) -> tuple[list[dict[str, Any]], int]:
    """The file's rows with every secret redacted, and how many rows changed."""
    rows = _read(filesystem, path).to_pylist()
    changed = 0
    for index, row in enumerate(rows):
        redacted = _redacted_row(row, name, key)
        if redacted is not None:
            rows[index] = redacted
            changed += 1
    return rows, changed


def _holds_secret(filesystem: pafs.FileSystem, path: str, name: str) -> bool:
    if not _has_candidates(filesystem, path):
        return False
    return any(_redacted_row(row, name, b"\0" * 32) is not None for row in _read(filesystem, path).to_pylist())


def _add_fingerprint_column(lake: Lake, name: str, summary: RedactSummary) -> None:
    table = lake.delta_table(name)
    if FINGERPRINT_COLUMN not in table.schema().to_arrow().names:
        table.alter.add_columns(Field(FINGERPRINT_COLUMN, PrimitiveType("string"), nullable=True))
        summary.columns_added.append(f"{name}.{FINGERPRINT_COLUMN}")


def _rewrite_table(lake: Lake, name: str, key: bytes, summary: RedactSummary) -> list[str]:
    """One commit replacing every file of the table that holds a secret; returns the replaced files' paths."""
    root = lake.path(name)
    filesystem, base = arrow_filesystem(root)
    schema = SCHEMAS[name]
    replaced: list[str] = []

    def attempt(table: DeltaTable, _number: int) -> int | Conflict:
        replaced.clear()
        actions: list[AddAction | RemoveAction] = []
        staging = f"redacted-{uuid.uuid4().hex}"
        rows_changed = 0
        files = pa.table(table.get_add_actions(flatten=True))
        for path, size in zip(files.column("path").to_pylist(), files.column("size_bytes").to_pylist(),
                              strict=True):
            if not _has_candidates(filesystem, f"{base}/{path}"):
                continue
            rows, changed = _rewritten(filesystem, f"{base}/{path}", name, key)
            if not changed:
                continue
            rows_changed += changed
            filesystem.create_dir(f"{base}/{staging}", recursive=True)
            pq.write_table(pa.Table.from_pylist(rows, schema=schema), f"{base}/{staging}/part-{len(replaced):05d}"
                           ".parquet", filesystem=filesystem)
            actions.append(removed_file(path, size, _now_ms()))
            replaced.append(path)
        if not replaced:
            return 0
        actions += staged_add_actions(spark_schema(name), root, staging)
        try:
            commit_at_version(table, actions, schema, {OPERATION_KEY: "redact", ROWS_KEY: "0"})
        except CommitFailedError:
            filesystem.delete_dir(f"{base}/{staging}")
            return CONFLICT
        return rows_changed

    rows = lake.commit_with_retry(name, attempt, gave_up=f"{name}: redact gave up: other writers keep committing")
    summary.rows_redacted[name] = rows
    summary.files_rewritten[name] = len(replaced)
    if replaced:
        version = int(lake.delta_table(name).version())
        summary.versions[name] = version
    return list(replaced)


def _now_ms() -> int:
    return int(time.time() * 1000)


def _data_files(filesystem: pafs.FileSystem, base: str) -> Iterator[str]:
    """Every Parquet data file under a table's directory (referenced or not), relative to it."""
    for info in filesystem.get_file_info(pafs.FileSelector(base, recursive=True, allow_not_found=True)):
        relative = info.path[len(base):].lstrip("/")
        if info.is_file and relative.endswith(".parquet") and not relative.startswith(_DELTA_LOG):
            yield relative


def _delete_secret_files(lake: Lake, name: str, replaced: list[str], summary: RedactSummary) -> set[str]:
    """Delete the replaced files and every other unreferenced file that still holds a secret."""
    root = lake.path(name)
    filesystem, base = arrow_filesystem(root)
    active = set(pa.table(lake.delta_table(name).get_add_actions(flatten=True)).column("path").to_pylist())
    doomed = set(replaced) | {path for path in _data_files(filesystem, base)
                              if path not in active and _holds_secret(filesystem, f"{base}/{path}", name)}
    for path in sorted(doomed):
        filesystem.delete_file(f"{base}/{path}")
        summary.files_deleted.append(f"{root}/{path}")
    return doomed


def _clean_delta_log(lake: Lake, name: str, doomed: set[str], summary: RedactSummary) -> None:
    """Drop the payload min/max statistics of the deleted files from the commits that added them, and every
    checkpoint older than a new one (checkpoints copy those statistics)."""
    if not doomed:
        return
    root = lake.path(name)
    filesystem, base = arrow_filesystem(root)
    version = int(lake.delta_table(name).version())
    lake.delta_table(name).create_checkpoint()
    log = f"{base}/{_DELTA_LOG}"
    for info in filesystem.get_file_info(pafs.FileSelector(log, allow_not_found=True)):
        if not info.is_file:
            continue
        stem = info.base_name.split(".", 1)[0]
        if info.base_name.endswith(".json") and stem.isdigit():
            with filesystem.open_input_stream(info.path) as stream:
                lines = stream.read().decode("utf-8").splitlines()
            cleaned = [_without_payload_stats(line, doomed) for line in lines]
            if cleaned != lines:
                with filesystem.open_output_stream(info.path) as stream:
                    stream.write(("\n".join(cleaned) + "\n").encode("utf-8"))
                summary.log_files_cleaned.append(f"{root}/{_DELTA_LOG}/{info.base_name}")
        elif ".checkpoint" in info.base_name and stem.isdigit() and int(stem) < version:
            filesystem.delete_file(info.path)
            summary.log_files_cleaned.append(f"{root}/{_DELTA_LOG}/{info.base_name}")


def _without_payload_stats(line: str, doomed: set[str]) -> str:
    """A Delta log line; an ``add`` of a deleted file loses the min/max of the payload columns."""
    if not line.strip():
        return line
    action = json.loads(line)
    add = action.get("add")
    if add is None or add.get("path") not in doomed or not add.get("stats"):
        return line
    stats = json.loads(add["stats"])
    touched = False
    for bound in ("minValues", "maxValues"):
        for column in _PAYLOAD_STATS:
            if column in stats.get(bound, {}):
                del stats[bound][column]
                touched = True
    if not touched:
        return line
    add["stats"] = json.dumps(stats, separators=(",", ":"))
    return json.dumps(action, separators=(",", ":"))


def _clean_staging(lake: Lake, summary: RedactSummary) -> None:
    """A killed ingest's staged rows (written before redaction) are deleted when they hold a secret."""
    filesystem, base = arrow_filesystem(f"{lake.root}/{STAGING_DIR}")
    for path in _data_files(filesystem, base):
        if _holds_secret(filesystem, f"{base}/{path}", METADATA_LOG):
            filesystem.delete_file(f"{base}/{path}")
            summary.files_deleted.append(f"{lake.root}/{STAGING_DIR}/{path}")


def redact_lake(lake: Lake, key: bytes) -> RedactSummary:
    """Redact every secret the lake holds (see the module's docstring); idempotent."""
    summary = RedactSummary()
    for name in REDACTED_TABLES:
        if not lake.table_exists(name):
            continue
        if name in LOG_TABLES:
            _add_fingerprint_column(lake, name, summary)
        replaced = _rewrite_table(lake, name, key, summary)
        doomed = _delete_secret_files(lake, name, replaced, summary)
        _clean_delta_log(lake, name, doomed, summary)
    _clean_staging(lake, summary)
    return summary


__all__ = ["RedactSummary", "redact_lake", "require_redacted_lake"]
