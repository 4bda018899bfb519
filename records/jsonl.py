"""JSON lines: one log entry per line, Kafka's JSON form plus its place in the log.

A line is ``{"offset": N, ["appendTimeMs": T,] ["raftLeaderEpoch": E,] ["batchBaseOffset": B,]
["control": true,] "type": …, "version": …, "data": {…}}``. Control records carry
``"control": true`` so tools can skip them; a record kept raw carries ``"raw"`` (base64) and
``"readMode"``. The writer's output is canonical, so reading and writing it again gives the same
bytes.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

from records.definitions import by_json_type_name
from records.errors import RecordValidationError
from records.kafka_json import dumps_compact, record_from_json, record_to_json
from records.model import LogEntry, RawRecord, ReadMode
from records.validation import FieldProblem

_PLACEMENT_FIELDS = ("appendTimeMs", "raftLeaderEpoch", "batchBaseOffset")
_KNOWN_KEYS = {"offset", "control", "type", "version", "data", "readMode", "notes", "raw",
               "apiKey", "controlType", "reason", "clusterId", *_PLACEMENT_FIELDS}


def entry_to_line(entry: LogEntry) -> str:
    obj: dict[str, Any] = {"offset": entry.offset}
    if entry.append_time_ms is not None:
        obj["appendTimeMs"] = entry.append_time_ms
    if entry.raft_leader_epoch is not None:
        obj["raftLeaderEpoch"] = entry.raft_leader_epoch
    if entry.batch_base_offset is not None and entry.batch_base_offset != entry.offset:
        obj["batchBaseOffset"] = entry.batch_base_offset
    if entry.is_control:
        obj["control"] = True
    obj.update(record_to_json(entry.record))
    if entry.read_mode is not ReadMode.EXACT:
        obj["readMode"] = str(entry.read_mode)
    notes = [n for n in entry.notes if not (isinstance(entry.record, RawRecord)
                                           and n == entry.record.reason)]
    if notes:
        obj["notes"] = notes
    return dumps_compact(obj)


def write_jsonl(entries: Iterable[LogEntry], out: TextIO) -> int:
    count = 0
    for entry in entries:
        out.write(entry_to_line(entry))
        out.write("\n")
        count += 1
    return count


def _int_field(obj: dict[str, Any], name: str, *, required: bool = False) -> int | None:
    value = obj.get(name)
    if value is None:
        if required:
            raise FieldProblem(name, f"missing: every line needs {name!r} (the record's log offset)")
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise FieldProblem(name, f"expected an integer, got {value!r}")
    return value


def line_to_entry(obj: Any) -> LogEntry:
    """One parsed JSON line → entry; raises :class:`FieldProblem` naming the field."""
    if not isinstance(obj, dict):
        raise FieldProblem("", "expected a JSON object per line")
    offset = _int_field(obj, "offset", required=True)
    assert offset is not None
    unknown = sorted(set(obj) - _KNOWN_KEYS)
    if unknown:
        raise FieldProblem(unknown[0], "unknown key on the line (expected offset, appendTimeMs, "
                                       "raftLeaderEpoch, batchBaseOffset, control, type, version, data)")
    read_mode = ReadMode(obj.get("readMode", "exact")) if obj.get("readMode") in (
        None, "exact", "best-effort", "raw") else None
    if read_mode is None:
        raise FieldProblem("readMode", f"expected exact, best-effort or raw, got {obj['readMode']!r}")
    notes = tuple(obj.get("notes", ()))
    if "raw" in obj:
        record: Any = _raw_from_line(obj)
        notes = (record.reason, *notes)
    else:
        record = record_from_json(obj, best_effort=read_mode is ReadMode.BEST_EFFORT)
    control = obj.get("control", False)
    if control is not record.is_control:
        expected = "true" if record.is_control else "absent or false"
        raise FieldProblem("control", f"{obj.get('type')} is "
                                      f"{'a control' if record.is_control else 'not a control'} record: "
                                      f"expected control {expected}")
    return LogEntry(
        offset=offset,
        record=record,
        batch_base_offset=_int_field(obj, "batchBaseOffset") if "batchBaseOffset" in obj else offset,
        raft_leader_epoch=_int_field(obj, "raftLeaderEpoch"),
        append_time_ms=_int_field(obj, "appendTimeMs"),
        read_mode=read_mode,
        notes=notes,
    )


def _raw_from_line(obj: dict[str, Any]) -> RawRecord:
    try:
        value = base64.b64decode(obj["raw"], validate=True)
    except (binascii.Error, ValueError, TypeError):
        raise FieldProblem("raw", "expected base64 bytes") from None
    known = by_json_type_name().get(obj.get("type", ""))
    api_key = _int_field(obj, "apiKey")
    control_type = _int_field(obj, "controlType")
    if known is not None:
        api_key = known.api_key if api_key is None else api_key
        control_type = known.control_type if control_type is None else control_type
    version = _int_field(obj, "version", required=True)
    assert version is not None
    return RawRecord(api_key, control_type, version, value, str(obj.get("reason", "kept raw")))


def read_jsonl(stream: TextIO, source: str) -> Iterator[LogEntry]:
    """Entries of a JSON-lines stream, offsets strictly increasing; errors name file, line, offset."""
    previous: tuple[int, int] | None = None  # (offset, line)
    for number, text in enumerate(stream, start=1):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise RecordValidationError(
                f"not valid JSON: {exc.msg} at column {exc.colno}; expected one JSON object "
                "per line", source=source, line=number) from None
        offset = obj.get("offset") if isinstance(obj, dict) else None
        offset = offset if isinstance(offset, int) and not isinstance(offset, bool) else None
        try:
            entry = line_to_entry(obj)
        except FieldProblem as exc:
            raise RecordValidationError(exc.problem, source=source, line=number, offset=offset,
                                        path=exc.path or None) from None
        if previous is not None and entry.offset <= previous[0]:
            raise RecordValidationError(
                f"offset {entry.offset} does not increase (line {previous[1]} has offset "
                f"{previous[0]}); expected offsets in strictly increasing order",
                source=source, line=number, offset=entry.offset)
        previous = (entry.offset, number)
        yield entry


def read_jsonl_file(path: Path) -> Iterator[LogEntry]:
    with path.open("r", encoding="utf-8") as stream:
        yield from read_jsonl(stream, str(path))
