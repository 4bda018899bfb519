"""The text ``kafka-dump-log.sh --cluster-metadata-decoder`` prints, read back into log entries.

Over 400 lines: one reader of one grammar (file headers, batch lines, record lines) whose parts share its state.

Operators often have only this text (pasted in a ticket, captured from a pod), not the segment
files, so it is a first-class input. The formats, as Kafka's ``DumpLogSegments`` prints them:

* file headers: ``Dumping <path>``, then ``Log starting offset: N`` for a ``.log`` segment,
  ``Snapshot end offset: N, epoch: E`` for a ``.checkpoint`` (Kafka 3.3+) or
  ``KRaft bootstrap snapshot`` for ``bootstrap.checkpoint`` (3.4+);
* one batch line per record batch: ``baseOffset: B lastOffset: L count: C baseSequence: -1
  lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: E isTransactional: false
  isControl: true deleteHorizonMs: OptionalLong.empty position: P CreateTime: T size: S magic: 2
  compresscodec: none crc: X isvalid: true`` (``deleteHorizonMs`` since 3.1; fields are read by
  name, so older or newer field sets work);
* one record line per record: ``| offset: O CreateTime: T keySize: K valueSize: V sequence: -1
  headerKeys: []`` followed by, for a metadata record, `` payload: {"type":…,"version":…,"data":…}``
  (2.8+), or ``payload: Error at O, skipping. <why>`` when Kafka could not decode it; for a control
  record `` SnapshotHeader {json}`` / `` SnapshotFooter {json}`` (3.3+), `` KRaftVersion {json}`` /
  `` KRaftVoters {json}`` (3.8+), `` LeaderChange: {json}`` (4.1+, KAFKA-19069) or
  `` controlType: NAME(id)`` for a control type that version does not print (LEADER_CHANGE before 4.1);
* with ``--skip-record-metadata`` the record line is `` payload: {json}`` (Scala tool, before 4.0)
  or ``| payload: {json}`` (Java tool, 4.0+), and a control record prints an empty line;
* ``Found N invalid bytes at the end of <file>`` after a segment with a partial tail.

Errors name the dump file, the line and the offset; records Kafka itself printed no content for
are listed as :class:`SkippedRecord`, never dropped silently.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

from records.definitions import definitions
from records.errors import RecordValidationError
from records.kafka_json import record_from_json
from records.model import LogEntry, MetadataRecord
from records.validation import FieldProblem, check_version, convert_struct, json_leaf

# What kafka-dump-log prints before a control record's JSON → the Kafka message it holds.
CONTROL_LABELS: dict[str, str] = {
    "LeaderChange": "LeaderChangeMessage",
    "SnapshotHeader": "SnapshotHeaderRecord",
    "SnapshotFooter": "SnapshotFooterRecord",
    "KRaftVersion": "KRaftVersionRecord",
    "KRaftVoters": "VotersRecord",
}

_TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime", "NoTimestampType")
_RECORD_RE = re.compile(
    r"^\| offset: (?P<offset>-?\d+) (?:CreateTime|LogAppendTime|NoTimestampType): (?P<ts>-?\d+)"
    r" keySize: (?P<key_size>-?\d+) valueSize: (?P<value_size>-?\d+)"
    r"(?: sequence: -?\d+ headerKeys: \[[^\]]*\])?(?: isValid: \S+ crc: \S+)?(?P<rest>.*)$")
_NO_METADATA_RE = re.compile(r"^(?:\| | )payload: (?P<payload>.*)$")
_CONTROL_RE = re.compile(r"^ (?P<label>" + "|".join(CONTROL_LABELS) + r"):? (?P<json>\{.*)$")
_CONTROL_TYPE_RE = re.compile(r"^ controlType: (?P<name>\w+)\((?P<id>-?\d+)\)$")
_FIELD_RE = re.compile(r"(\w+): (\S+)")
_SNAPSHOT_RE = re.compile(r"^Snapshot end offset: (?P<offset>-?\d+), epoch: (?P<epoch>-?\d+)$")
_TRAILING_RE = re.compile(r"^Found (?P<bytes>\d+) invalid bytes at the end of (?P<file>.+)$")
# Lines the tool prints on stderr, which a capture with 2>&1 interleaves: not records.
_STDERR_RE = re.compile(r"^(?:Non-consecutive offsets in .*|\s+-?\d+ is followed by -?\d+|"
                        r"Ignoring unknown file .*)$")

_NEEDS_CONTENT = ("run kafka-dump-log.sh --cluster-metadata-decoder --files <segment> (on Kafka "
                  "before 2.8: --deep-iteration --print-data-log) so that every record is printed")


@dataclass(frozen=True, slots=True)
class SkippedRecord:
    """A record the dump shows but holds no usable content for; listed so nothing vanishes unseen."""

    source: str
    line: int
    offset: int | None
    reason: str

    def __str__(self) -> str:
        offset = "" if self.offset is None else f", offset {self.offset}"
        return f"{self.source}, line {self.line}{offset}: skipped: {self.reason}"


@dataclass(slots=True)
class DumpedFile:
    """One ``Dumping <path>`` section: which Kafka file the following batches come from."""

    path: str
    line: int
    log_start_offset: int | None = None
    snapshot_end_offset: int | None = None
    snapshot_epoch: int | None = None
    bootstrap: bool = False


@dataclass(slots=True)
class _Batch:
    line: int
    base_offset: int
    last_offset: int
    count: int | None
    leader_epoch: int | None
    is_control: bool
    position: int | None
    max_timestamp: int | None
    seen: int = 0


def looks_like_dump_log(first_lines: list[str]) -> bool:
    """True when the first lines of a text are kafka-dump-log output (for format auto-detection)."""
    starts = ("Dumping ", "Log starting offset: ", "Snapshot end offset: ", "KRaft bootstrap snapshot",
              "baseOffset: ", "| offset: ")
    return any(line.lstrip("\ufeff").startswith(starts) for line in first_lines)


@dataclass
class DumpLogReader:
    """Streams the entries of one dump text; ``skipped`` and ``files`` fill in while iterating."""

    stream: Iterable[str]
    source: str
    cluster_id: str | None = None
    skip_unparsable: bool = False
    skipped: list[SkippedRecord] = field(default_factory=list)
    files: list[DumpedFile] = field(default_factory=list)
    _batch: _Batch | None = field(default=None, init=False)
    _previous: tuple[int, int] | None = field(default=None, init=False)  # (offset, line)
    _previous_file: int = field(default=0, init=False)

    def __iter__(self) -> Iterator[LogEntry]:
        number = 0
        for number, raw in enumerate(self.stream, start=1):
            text = raw.rstrip("\r\n")
            if number == 1:
                text = text.lstrip("\ufeff")
            entry = self._line(text, number)
            if entry is not None:
                yield entry
        self._finish_batch(number + 1)

    # -- errors -------------------------------------------------------------------------------

    def _error(self, problem: str, line: int, offset: int | None = None,
               path: str | None = None) -> RecordValidationError:
        return RecordValidationError(problem, source=self.source, line=line, offset=offset, path=path)

    def _unparsable(self, reason: str, line: int, offset: int | None) -> None:
        """Kafka printed a record kraft-replay cannot turn into a model: stop, or list it when asked."""
        if not self.skip_unparsable:
            raise self._error(f"{reason} (pass skip_unparsable=True / --skip-unparsable to list such "
                              "records as skipped and go on)", line, offset)
        self.skipped.append(SkippedRecord(self.source, line, offset, reason))

    # -- lines --------------------------------------------------------------------------------

    def _line(self, text: str, number: int) -> LogEntry | None:
        if not text.strip():
            batch = self._batch
            if batch is not None and batch.is_control and _inferring(batch):
                # --skip-record-metadata prints a control record as an empty line.
                offset = self._infer_offset(number)
                self.skipped.append(SkippedRecord(
                    self.source, number, offset, "control record printed as an empty line "
                    "(--skip-record-metadata prints no control record content)"))
            return None
        if text.startswith("| offset: "):
            return self._record_line(text, number)
        if text.startswith("baseOffset: "):
            self._finish_batch(number)
            self._batch = self._batch_line(text, number)
            return None
        no_metadata = _NO_METADATA_RE.match(text)
        if no_metadata:
            return self._payload_without_metadata(no_metadata.group("payload"), number)
        if text.startswith("Dumping "):
            self._finish_batch(number)
            self.files.append(DumpedFile(text[len("Dumping "):].strip(), number))
            return None
        self._header_or_other(text, number)
        return None

    def _header_or_other(self, text: str, number: int) -> None:
        section = self.files[-1] if self.files else None
        if text.startswith("Log starting offset: "):
            value = text[len("Log starting offset: "):].strip()
            if not _is_int(value):
                raise self._error(f"expected 'Log starting offset: <number>', got {text!r}", number)
            if section is not None:
                section.log_start_offset = int(value)
            return
        snapshot = _SNAPSHOT_RE.match(text)
        if snapshot:
            if section is not None:
                section.snapshot_end_offset = int(snapshot.group("offset"))
                section.snapshot_epoch = int(snapshot.group("epoch"))
            return
        if text == "KRaft bootstrap snapshot":
            if section is not None:
                section.bootstrap = True
            return
        trailing = _TRAILING_RE.match(text)
        if trailing:
            self._finish_batch(number)
            self.skipped.append(SkippedRecord(
                self.source, number, None,
                f"{trailing.group('bytes')} bytes at the end of {trailing.group('file')} are not a "
                "whole record batch (a partial tail, as a crashed writer leaves it); Kafka's log "
                "recovery truncates them"))
            return
        if _STDERR_RE.match(text):
            return
        if text.startswith("offset: ") and " magic: " in text:
            raise self._error("record batch of magic 0 or 1: KRaft metadata logs only hold magic 2 "
                              "batches; is this a dump of __cluster_metadata?", number)
        shown = text if len(text) <= 80 else text[:77] + "..."
        raise self._error(
            f"unrecognised line {shown!r}: expected a kafka-dump-log line (Dumping …, baseOffset: …, "
            "| offset: …)", number)

    def _batch_line(self, text: str, number: int) -> _Batch:
        fields = dict(_FIELD_RE.findall(text))
        missing = [name for name in ("baseOffset", "lastOffset", "isControl") if name not in fields]
        if missing:
            raise self._error(f"batch line lacks {', '.join(missing)}: expected 'baseOffset: B lastOffset: "
                              "L count: C … isControl: true|false … position: P'", number)
        base = _int_field(fields, "baseOffset")
        last = _int_field(fields, "lastOffset")
        if base is None or last is None or last < base:
            raise self._error(f"batch line has baseOffset {fields['baseOffset']} and lastOffset "
                              f"{fields['lastOffset']}: expected integers with lastOffset >= baseOffset",
                              number, base)
        if fields["isControl"] not in ("true", "false"):
            raise self._error(f"expected isControl: true or false, got {fields['isControl']!r}", number, base)
        magic = _int_field(fields, "magic")
        if magic is not None and magic < 2:
            raise self._error(f"record batch of magic {magic}: KRaft metadata logs only hold magic 2 "
                              "batches", number, base)
        timestamp = next((_int_field(fields, t) for t in _TIMESTAMP_TYPES if t in fields), None)
        return _Batch(
            line=number, base_offset=base, last_offset=last, count=_int_field(fields, "count"),
            leader_epoch=_int_field(fields, "partitionLeaderEpoch"),
            is_control=fields["isControl"] == "true", position=_int_field(fields, "position"),
            max_timestamp=timestamp if timestamp is not None and timestamp >= 0 else None)

    def _finish_batch(self, number: int) -> None:
        """A batch ends: it must have had as many record lines as it declares."""
        batch, self._batch = self._batch, None
        if batch is None:
            return
        expected = batch.count if batch.count is not None else batch.last_offset - batch.base_offset + 1
        if batch.seen == 0 and expected > 0:
            raise self._error(
                f"the batch at line {batch.line} (offsets {batch.base_offset}..{batch.last_offset}) has "
                f"no record lines, so the dump holds no record contents: {_NEEDS_CONTENT}",
                batch.line, batch.base_offset)
        if batch.seen != expected:
            raise self._error(
                f"the batch at line {batch.line} declares {expected} records (offsets "
                f"{batch.base_offset}..{batch.last_offset}) but {batch.seen} record lines follow it; "
                "expected one line per record (is the dump cut short or edited?)", number - 1,
                batch.base_offset)

    # -- records ------------------------------------------------------------------------------

    def _record_line(self, text: str, number: int) -> LogEntry | None:
        match = _RECORD_RE.match(text)
        if match is None:
            raise self._error("malformed record line: expected '| offset: N CreateTime: T keySize: K "
                              "valueSize: V sequence: S headerKeys: [] payload: {…}'", number)
        offset = int(match.group("offset"))
        self._place(offset, number)
        timestamp = int(match.group("ts"))
        return self._content(match.group("rest"), number, offset, timestamp if timestamp >= 0 else None,
                             notes=())

    def _payload_without_metadata(self, payload: str, number: int) -> LogEntry | None:
        batch = self._batch
        if batch is None:
            raise self._error("a record printed without its offset (--skip-record-metadata) and no batch "
                              "line before it: the offset cannot be known; dump without "
                              "--skip-record-metadata", number)
        offset = self._infer_offset(number)
        notes = ("offset and append time inferred from the batch: the dump was made with "
                 "--skip-record-metadata",)
        return self._content(" payload: " + payload, number, offset, batch.max_timestamp, notes)

    def _infer_offset(self, number: int) -> int:
        batch = self._batch
        assert batch is not None
        offset = batch.base_offset + batch.seen
        self._place(offset, number)
        return offset

    def _place(self, offset: int, number: int) -> None:
        """Checks the offset against its batch and the previous record, and counts it."""
        batch = self._batch
        if batch is not None:
            if not batch.base_offset <= offset <= batch.last_offset:
                raise self._error(f"offset {offset} lies outside its batch (line {batch.line}: offsets "
                                  f"{batch.base_offset}..{batch.last_offset})", number, offset)
            batch.seen += 1
        if self._previous is not None and offset <= self._previous[0]:
            hint = ""
            if len(self.files) > self._previous_file:
                hint = ("; this dump covers several files, whose offsets must increase from one to the "
                        "next: dump snapshots (.checkpoint) on their own")
            raise self._error(f"offset {offset} does not increase (line {self._previous[1]} has offset "
                              f"{self._previous[0]}); expected offsets in strictly increasing order{hint}",
                              number, offset)
        self._previous = (offset, number)
        self._previous_file = len(self.files)

    def _content(self, rest: str, number: int, offset: int, timestamp: int | None,
                 notes: tuple[str, ...]) -> LogEntry | None:
        if rest.startswith(" payload: "):
            record = self._metadata_payload(rest[len(" payload: "):], number, offset)
        elif rest.startswith(" key: "):
            raise self._error("the record has a key, which KRaft metadata records never have: is this a "
                              "dump of __cluster_metadata made with --cluster-metadata-decoder?",
                              number, offset)
        elif not rest.strip():
            raise self._error(f"the record line has no payload: {_NEEDS_CONTENT}", number, offset)
        else:
            record = self._control(rest, number, offset)
        if record is None:
            return None
        batch = self._batch
        if batch is not None and batch.is_control != record.is_control:
            kind = "a control" if record.is_control else "a metadata"
            raise self._error(f"{kind} record ({record.type_name}) in a batch whose line {batch.line} says "
                              f"isControl: {str(batch.is_control).lower()}", number, offset)
        section = self.files[-1] if self.files else None
        return LogEntry(
            offset=offset,
            record=record,
            batch_base_offset=batch.base_offset if batch is not None else None,
            raft_leader_epoch=batch.leader_epoch if batch is not None else None,
            append_time_ms=timestamp,
            cluster_id=self.cluster_id,
            source=section.path if section is not None else self.source,
            position=batch.position if batch is not None else None,
            notes=notes,
        )

    def _metadata_payload(self, payload: str, number: int, offset: int) -> MetadataRecord | None:
        if payload.startswith("Error at "):
            self._unparsable(f"kafka-dump-log could not decode this record and printed {payload!r}",
                             number, offset)
            return None
        if not payload.startswith("{"):
            raise self._error("the payload is not Kafka's JSON form of a metadata record: was the dump made "
                              "with --cluster-metadata-decoder?", number, offset)
        obj = self._json(payload, number, offset, "payload")
        try:
            return record_from_json(obj)
        except FieldProblem as exc:
            if exc.path == "type" or (exc.path == "version" and "unsupported version" in exc.problem):
                self._unparsable(f"field {exc.path}: {exc.problem}", number, offset)
                return None
            raise self._error(exc.problem, number, offset, exc.path or None) from None

    def _control(self, rest: str, number: int, offset: int) -> MetadataRecord | None:
        match = _CONTROL_RE.match(rest)
        if match is not None:
            message = definitions()[CONTROL_LABELS[match.group("label")]]
            obj = self._json(match.group("json"), number, offset, match.group("label"))
            if not isinstance(obj, dict):
                raise self._error(f"expected a JSON object after {match.group('label')}", number, offset)
            try:
                if "version" not in obj:
                    raise FieldProblem("version", f"missing: {message.name} JSON starts with its version")
                version = check_version(message, obj["version"])
                data = convert_struct(message.body, version, obj, "", json_leaf, require_all=False)
            except FieldProblem as exc:
                if exc.path == "version" and "unsupported version" in exc.problem:
                    self._unparsable(f"{message.name}: {exc.problem}", number, offset)
                    return None
                raise self._error(f"{message.name}: {exc.problem}", number, offset,
                                  exc.path or None) from None
            return MetadataRecord(message.name, version, data)
        typed = _CONTROL_TYPE_RE.match(rest)
        if typed is not None and typed.group("name") == "LEADER_CHANGE":
            # Kafka 3.0-4.0 print no content for LeaderChange; it carries no metadata state.
            self.skipped.append(SkippedRecord(
                self.source, number, offset, "LeaderChange control record printed without content "
                "('controlType: LEADER_CHANGE(2)', as kafka-dump-log before 4.1 prints it)"))
            return None
        if typed is not None:
            self._unparsable(f"control record of type {typed.group('name')}({typed.group('id')}), which "
                             "this kafka-dump-log printed without content", number, offset)
            return None
        if rest.startswith(" endTxnMarker: "):
            self._unparsable("transaction marker (endTxnMarker) control record: not a KRaft metadata "
                             "record; is this a dump of __cluster_metadata?", number, offset)
            return None
        shown = rest.strip()
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise self._error(f"unrecognised record content {shown!r}: expected 'payload: {{…}}' or a control "
                          f"record ({', '.join(CONTROL_LABELS)} followed by JSON)", number, offset)

    def _json(self, text: str, number: int, offset: int, what: str) -> Any:
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise self._error(f"the {what} is not valid JSON: {exc.msg} at column {exc.colno} of the {what}; "
                              "expected one JSON object (is the line cut short?)", number, offset) from None


def _inferring(batch: _Batch) -> bool:
    return batch.seen < batch.last_offset - batch.base_offset + 1


def _is_int(text: str) -> bool:
    return re.fullmatch(r"-?\d+", text) is not None


def _int_field(fields: dict[str, str], name: str) -> int | None:
    value = fields.get(name)
    return int(value) if value is not None and _is_int(value) else None


def read_dump_log(stream: TextIO | Iterable[str], source: str, *, cluster_id: str | None = None,
                  skip_unparsable: bool = False,
                  skipped: list[SkippedRecord] | None = None) -> Iterator[LogEntry]:
    """Entries of a kafka-dump-log text, streamed line by line; records shown without content go
    to ``skipped`` (pass a list to see them) and errors name the file, line and offset."""
    reader = DumpLogReader(stream, source, cluster_id=cluster_id, skip_unparsable=skip_unparsable,
                           skipped=skipped if skipped is not None else [])
    yield from reader


# -- writing ----------------------------------------------------------------------------------
