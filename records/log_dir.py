"""What is on disk: the KRaft metadata log's segments and snapshots, and why anything else is skipped.

Accepts a single file, the ``__cluster_metadata-0`` partition directory, or the Kafka data directory
(``log.dirs``) that holds it together with ``meta.properties`` and ``bootstrap.checkpoint``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from records.errors import RecordsError

__all__ = [
    "DELETED_SUFFIX",
    "METADATA_PARTITION",
    "LogFile",
    "LogLayout",
    "classify",
    "discover",
    "parse_properties",
    "read_quorum_state",
    "segment_renamed_for_deletion",
]

METADATA_PARTITION = "__cluster_metadata-0"

FileKind = Literal["segment", "snapshot", "bootstrap", "producer-state", "deleted", "index", "other"]

_SEGMENT = re.compile(r"(\d{20})\.log")
_SNAPSHOT = re.compile(r"(\d{20})-(\d{10})\.checkpoint")
DELETED_SUFFIX = ".deleted"  # Kafka's LogFileUtils.DELETED_FILE_SUFFIX
_PENDING_SUFFIXES = (DELETED_SUFFIX, ".cleaned", ".swap", ".part")
_INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")
_KNOWN_OTHER = frozenset({
    "quorum-state", "leader-epoch-checkpoint", "partition.metadata", "meta.properties",
    "recovery-point-offset-checkpoint", "replication-offset-checkpoint", "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint", ".lock", ".kafka_cleanshutdown",
})

_NOTES: dict[str, str] = {
    "producer-state": "producer-state snapshot (Kafka's *.snapshot files hold producer ids, not metadata); "
                      "skipped",
    "deleted": "marked for deletion or temporary (Kafka's *.deleted, *.cleaned, *.swap, *.part); skipped",
    "index": "offset/time/transaction index (Kafka rebuilds it; no metadata in it); skipped",
}


@dataclass(frozen=True)
class LogFile:
    """One file of a log directory and what its name says it holds."""

    path: Path
    kind: FileKind
    base_offset: int | None = None
    snapshot_end_offset: int | None = None
    snapshot_epoch: int | None = None


@dataclass
class LogLayout:
    """The metadata log's files in replay order, plus every file left out and why."""

    segments: list[LogFile] = field(default_factory=list)
    snapshots: list[LogFile] = field(default_factory=list)
    bootstrap: LogFile | None = None
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    meta_properties: dict[str, str] = field(default_factory=dict)
    cluster_id: str | None = None
    quorum_state: Path | None = None


def classify(path: str | Path) -> LogFile:
    """Classify a file by its name, the way Kafka's log layer does."""
    path = Path(path)
    name = path.name
    if match := _SEGMENT.fullmatch(name):
        return LogFile(path, "segment", base_offset=int(match[1]))
    if match := _SNAPSHOT.fullmatch(name):
        return LogFile(path, "snapshot", snapshot_end_offset=int(match[1]), snapshot_epoch=int(match[2]))
    if name == "bootstrap.checkpoint":
        return LogFile(path, "bootstrap")
    if name.endswith(_PENDING_SUFFIXES):
        return LogFile(path, "deleted")
    if name.endswith(".snapshot"):
        return LogFile(path, "producer-state")
    if name.endswith(_INDEX_SUFFIXES):
        return LogFile(path, "index")
    return LogFile(path, "other")


def segment_renamed_for_deletion(path: Path) -> Path | None:
    """The segment ``path`` was before Kafka renamed it to ``*.log.deleted`` (a segment a snapshot covers is renamed
    first and removed ``file.delete.delay.ms``, 60 s by default, later), or None for any other file."""
    if not path.name.endswith(DELETED_SUFFIX):
        return None
    original = path.with_name(path.name[:-len(DELETED_SUFFIX)])
    return original if _SEGMENT.fullmatch(original.name) else None


def _skip_note(log_file: LogFile) -> str:
    if log_file.kind in _NOTES:
        return _NOTES[log_file.kind]
    if log_file.path.name in _KNOWN_OTHER:
        return "Kafka bookkeeping file, not metadata records; skipped"
    return "not a file Kafka's metadata log writes; skipped"


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text (``#``/``!`` comments, ``=``/``:``/blank separators, escapes)."""
    result: dict[str, str] = {}
    logical = ""
    for raw in text.splitlines():
        line = raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:
            logical += line[:-1]
            continue
        logical += line
        key, value = _split_property(logical)
        result[key] = value
        logical = ""
    if logical:
        key, value = _split_property(logical)
        result[key] = value
    return result


def _split_property(line: str) -> tuple[str, str]:
    position = 0
    while position < len(line) and line[position] not in "=: \t\f":
        position += 2 if line[position] == "\\" else 1
    key = line[:position]
    rest = line[position:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return _unescape(key), _unescape(rest)


def _unescape(text: str) -> str:
    simple = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
    return re.sub(r"\\(u[0-9a-fA-F]{4}|.)",
                  lambda m: chr(int(m[1][1:], 16)) if len(m[1]) == 5 else simple.get(m[1], m[1]), text)


def discover(path: str | Path) -> LogLayout:
    """Find the metadata log's files under ``path`` (a file, the partition dir or the data dir)."""
    path = Path(path)
    if not path.exists():
        raise RecordsError(f"{path}: no such file or directory")
    layout = LogLayout()
    if path.is_file():
        _add(layout, classify(path))
        if not (layout.segments or layout.snapshots or layout.bootstrap):
            raise RecordsError(f"{path}: not a KRaft log segment (NNNNNNNNNNNNNNNNNNNN.log) or snapshot "
                               "(NNNNNNNNNNNNNNNNNNNN-NNNNNNNNNN.checkpoint, bootstrap.checkpoint)")
        return layout
    given_data_dir = (path / METADATA_PARTITION).is_dir()
    data_dir: Path | None
    if given_data_dir:
        data_dir, metadata_dir = path, path / METADATA_PARTITION
    else:
        metadata_dir = path
        data_dir = path.parent if path.name.startswith("__cluster_metadata-") else None
    for entry in sorted(metadata_dir.iterdir()):
        if entry.is_dir():
            layout.skipped.append((entry, "directory inside the metadata partition; skipped"))
        else:
            _add(layout, classify(entry))
    if data_dir is not None:
        _add_data_dir_files(layout, data_dir, metadata_dir, list_others=given_data_dir)
    layout.segments.sort(key=lambda f: f.base_offset or 0)
    layout.snapshots.sort(key=lambda f: (f.snapshot_end_offset or 0, f.snapshot_epoch or 0))
    if not (layout.segments or layout.snapshots or layout.bootstrap):
        raise RecordsError(f"{path}: no KRaft metadata log found: expected {METADATA_PARTITION}/ with "
                           "NNNNNNNNNNNNNNNNNNNN.log segments or .checkpoint snapshots")
    return layout


def _add_data_dir_files(layout: LogLayout, data_dir: Path, metadata_dir: Path, *, list_others: bool) -> None:
    """Take bootstrap.checkpoint and meta.properties from the data dir.

    The other files are listed as skipped only when the user named the data dir itself: the parent of a
    partition dir they named may be any directory.
    """
    for entry in sorted(data_dir.iterdir()):
        if entry == metadata_dir:
            continue
        if entry.name == "bootstrap.checkpoint":
            if layout.bootstrap is not None:
                raise RecordsError(f"two bootstrap.checkpoint files: {layout.bootstrap.path} and {entry}")
            layout.bootstrap = classify(entry)
        elif entry.name == "meta.properties":
            _merge_properties(layout, entry)
        elif list_others and entry.is_dir():
            layout.skipped.append((entry, "another partition's directory, not the metadata log; skipped"))
        elif list_others:
            layout.skipped.append((entry, _skip_note(classify(entry))))


def _merge_properties(layout: LogLayout, path: Path) -> None:
    try:
        properties = parse_properties(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordsError(f"{path}: cannot read meta.properties: {exc}") from None
    cluster_id = properties.get("cluster.id")
    if cluster_id and layout.cluster_id and cluster_id != layout.cluster_id:
        raise RecordsError(f"{path}: cluster.id {cluster_id} differs from {layout.cluster_id} in another "
                           "meta.properties of the same log")
    layout.meta_properties.update(properties)
    layout.cluster_id = cluster_id or layout.cluster_id


def _add(layout: LogLayout, log_file: LogFile) -> None:
    if log_file.kind == "segment":
        layout.segments.append(log_file)
    elif log_file.kind == "snapshot":
        layout.snapshots.append(log_file)
    elif log_file.kind == "bootstrap":
        layout.bootstrap = log_file
    elif log_file.path.name == "meta.properties":
        _merge_properties(layout, log_file.path)
    elif log_file.path.name == "quorum-state":
        layout.quorum_state = log_file.path
    else:
        layout.skipped.append((log_file.path, _skip_note(log_file)))


def read_quorum_state(path: str | Path) -> dict[str, Any]:
    """Read the Raft ``quorum-state`` file (JSON: leader, epoch, voters)."""
    path = Path(path)
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordsError(f"{path}: cannot read quorum-state: {exc}") from None
    if not isinstance(state, dict):
        raise RecordsError(f"{path}: quorum-state is not a JSON object")
    return state
