"""Kafka's own ``kafka-dump-log --cluster-metadata-decoder`` (``DumpLogSegments``) run on files, and its text read
back with a parser of its own, kept apart from ``records.dumplog``: the test compares our ``dump`` with Kafka's
output through this parser and then checks ``records.dumplog`` on the same text, so one parser never vouches for
itself.

The tool is ``kafka.tools.DumpLogSegments`` in ``kafka_2.13`` up to 3.9 (Scala) and
``org.apache.kafka.tools.DumpLogSegments`` in ``kafka-tools`` from 4.0 (Java), so 4.x needs the ``kafka-tools-<v>``
jar set (``python -m lakehouse.jars fetch kafka-tools-4.4.0``).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lakehouse.jars import kafka_tools_jars
from tests.referee import RefereeUnavailable, fetched, kafka_classpath

# What DumpLogSegments prints before a control record's JSON (its ControlRecordType name is in the second column).
CONTROL_LABELS = {"LeaderChange": "LEADER_CHANGE", "SnapshotHeader": "SNAPSHOT_HEADER",
                  "SnapshotFooter": "SNAPSHOT_FOOTER", "KRaftVersion": "KRAFT_VERSION", "KRaftVoters": "KRAFT_VOTERS"}
_RECORD = re.compile(r"^\| offset: (?P<offset>-?\d+) (?P<tstype>CreateTime|LogAppendTime|NoTimestampType): "
                     r"(?P<ts>-?\d+) keySize: (?P<key>-?\d+) valueSize: (?P<value>-?\d+) sequence: (?P<seq>-?\d+) "
                     r"headerKeys: \[(?P<headers>[^\]]*)\](?P<rest>.*)$")
_CONTROL = re.compile(r"^ (?P<label>" + "|".join(CONTROL_LABELS) + r"):? (?P<json>\{.*)$")
_CONTROL_TYPE = re.compile(r"^ controlType: (?P<name>\w+)\((?P<id>-?\d+)\)$")
_FIELD = re.compile(r"(\w+): (\S+)")


def tool_class(version: str) -> str:
    """DumpLogSegments' class in this Kafka release."""
    scala = version.startswith(("2.", "3."))
    return "kafka.tools.DumpLogSegments" if scala else "org.apache.kafka.tools.DumpLogSegments"


def dump_log_classpath(version: str) -> str:
    """The ``java -cp`` that runs Kafka ``version``'s DumpLogSegments (else RefereeUnavailable, saying why)."""
    if shutil.which("java") is None:
        raise RefereeUnavailable("java not found (Kafka's DumpLogSegments runs on a JRE 17+)")
    if tool_class(version).startswith("kafka."):
        return kafka_classpath(version).classpath
    return fetched(kafka_tools_jars(version)).classpath


def _run(version: str, paths: Sequence[Path]) -> subprocess.CompletedProcess[str]:
    args = ["java", "-Xmx512m", "-cp", dump_log_classpath(version), tool_class(version), "--cluster-metadata-decoder",
            "--files", ",".join(str(p) for p in paths)]
    return subprocess.run(args, capture_output=True, text=True, timeout=900, check=False)


def _sections(version: str, stdout: str) -> dict[Path, str]:
    sections: dict[Path, list[str]] = {}
    current: list[str] | None = None
    for line in stdout.splitlines():
        if line.startswith("Dumping "):
            current = sections.setdefault(Path(line[len("Dumping "):]), [])
        if current is None:
            raise AssertionError(f"Kafka {version}'s DumpLogSegments printed {line!r} before any 'Dumping' line")
        current.append(line)
    return {path: "\n".join(lines) + "\n" for path, lines in sections.items()}


def kafka_dump_log(version: str, files: Sequence[Path]) -> tuple[dict[Path, str], dict[Path, str]]:
    """Kafka ``version``'s ``kafka-dump-log --cluster-metadata-decoder --files f1,f2,...``: the stdout section of
    each file (from its ``Dumping`` line), and the files the tool failed on (-> the end of its stderr). One JVM for
    all files; when it fails, one per file, so that a file Kafka cannot read does not hide the others."""
    paths = [p.resolve() for p in files]
    result = _run(version, paths)
    if result.returncode == 0:
        dumps, failed = _sections(version, result.stdout), {}
    else:
        dumps, failed = {}, {}
        for path in paths:
            one = _run(version, [path])
            if one.returncode == 0:
                dumps.update(_sections(version, one.stdout))
            else:
                failed[path] = one.stderr.strip()[-1500:]
    missing = [p for p in paths if p not in dumps and p not in failed]
    assert not missing, f"Kafka {version}'s DumpLogSegments printed nothing for {missing}"
    return dumps, failed


def kafka_record_versions(version: str) -> dict[str, int]:
    """The highest version of each metadata record Kafka ``version`` knows (``HIGHEST_SUPPORTED_VERSION`` of its
    generated classes, read with ``javap``); a record type missing here is one it does not know at all."""
    from records.definitions import definitions

    if shutil.which("javap") is None:
        raise RefereeUnavailable("javap not found (a JDK 17+ reads which record versions a Kafka release knows)")
    names = sorted(m.name for m in definitions().values() if not m.is_control)
    result = subprocess.run(["javap", "-constants", "-cp", dump_log_classpath(version),
                             *[f"org.apache.kafka.common.metadata.{n}" for n in names]],
                            capture_output=True, text=True, timeout=300, check=False)
    known: dict[str, int] = {}
    current = None
    for line in result.stdout.splitlines():
        declared = re.match(r"public class org\.apache\.kafka\.common\.metadata\.(\w+) ", line)
        if declared:
            current = declared[1]
        highest = re.search(r"static final short HIGHEST_SUPPORTED_VERSION = (\d+);", line)
        if highest and current is not None:
            known[current] = int(highest[1])
            current = None
    assert known, f"javap found no metadata record classes in Kafka {version}'s jars: {result.stderr[-500:]}"
    return known


@dataclass
class KafkaRecord:
    """One record line: its metadata and what the tool printed of its content."""

    offset: int
    timestamp: int
    key_size: int
    value_size: int
    kind: str  # "payload" (a metadata record's JSON), "control" (label + JSON), "control-type", "error"
    type: str | None = None  # the metadata type, or the control record's ControlRecordType name
    json: dict[str, Any] | None = None
    text: str = ""  # the JSON (or error) exactly as printed


@dataclass
class KafkaBatch:
    """One batch line (every field by name, as strings) and its record lines."""

    fields: dict[str, str]
    records: list[KafkaRecord] = field(default_factory=list)

    def int(self, name: str) -> int:
        return int(self.fields[name])


@dataclass
class KafkaFile:
    """One ``Dumping`` section."""

    header: list[str]
    lines: list[str]  # every line, as printed
    batches: list[KafkaBatch] = field(default_factory=list)
    trailer: list[str] = field(default_factory=list)


def parse_dump(text: str) -> KafkaFile:
    """Kafka's text for one file, strictly: any line this does not know fails the test, so nothing is compared
    by accident."""
    lines = text.splitlines()
    assert lines and lines[0].startswith("Dumping "), lines[:1]
    out = KafkaFile(header=[lines[0]], lines=lines)
    for line in lines[1:]:
        if line.startswith("baseOffset: "):
            out.batches.append(KafkaBatch(dict(_FIELD.findall(line))))
        elif line.startswith("| offset: "):
            assert out.batches, f"a record line before any batch line: {line!r}"
            out.batches[-1].records.append(_record(line))
        elif not out.batches and (line.startswith(("Log starting offset: ", "Snapshot end offset: "))
                                  or line == "KRaft bootstrap snapshot"):
            out.header.append(line)
        elif line.startswith("Found ") and " invalid bytes at the end of " in line:
            out.trailer.append(line)
        else:
            raise AssertionError(f"unknown line in Kafka's dump: {line!r}")
    return out


def _record(line: str) -> KafkaRecord:
    match = _RECORD.match(line)
    assert match is not None, f"unknown record line: {line!r}"
    record = KafkaRecord(int(match["offset"]), int(match["ts"]), int(match["key"]), int(match["value"]), kind="")
    rest = match["rest"]
    control = _CONTROL.match(rest)
    typed = _CONTROL_TYPE.match(rest)
    if rest.startswith(" payload: Error at "):
        record.kind, record.text = "error", rest[len(" payload: "):]
    elif rest.startswith(" payload: "):
        record.kind, record.text = "payload", rest[len(" payload: "):]
        record.json = json.loads(record.text)
        record.type = record.json["type"]
    elif control is not None:
        record.kind, record.text = "control", control["json"]
        record.type, record.json = CONTROL_LABELS[control["label"]], json.loads(control["json"])
    elif typed is not None:
        record.kind, record.type = "control-type", typed["name"]
    else:
        raise AssertionError(f"unknown record content: {line!r}")
    return record
