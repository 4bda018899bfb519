"""`kraft-replay dump | export | schemas`: read a metadata log and its record types, without Spark.

Register with ``for command, epilog in LOG_COMMANDS: app.command(epilog=epilog)(command)``.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Iterator
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from kraft_replay.plumbing import KeepSecretsOption, SkipCorruptOption, SourceClusterOption, guarded_command
from records.avro_codec import schema_id, schema_text, write_container
from records.avro_schema import ENVELOPE_NAME, record_schema, schema_json
from records.definitions import by_json_type_name, definitions
from records.errors import RecordsError
from records.jsonl import entry_to_line
from records.kafka_json import dumps_compact, record_to_json
from records.model import LogEntry
from records.redaction import redact
from records.sources import FORMATS, ReadOptions, ReadReport, read_entries

SECRETS_WARNING = ("warning: --keep-secrets: the output holds secrets from the log (sensitive config values, SCRAM "
                   "salts and keys); keep it as safe as the log itself")


def _readable(entries: Iterator[LogEntry], keep_secrets: bool) -> Iterator[LogEntry]:
    """The entries as Kafka's tools show them: secrets redacted (records.redaction), unless the user asked."""
    if keep_secrets:
        typer.secho(SECRETS_WARNING, err=True, fg=typer.colors.RED)
        return entries
    return (redact(entry, None) for entry in entries)

LOG_COMMANDS: list[tuple[Callable[..., None], str]] = []


def _command(epilog: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """List a command with its epilog, in the order the app shows them."""

    def register(command: Callable[..., None]) -> Callable[..., None]:
        LOG_COMMANDS.append((command, epilog))
        return command

    return register


class DumpFormat(StrEnum):
    jsonl = "jsonl"
    table = "table"


def _summary(entry: LogEntry, width: int) -> str:
    obj = record_to_json(entry.record)
    data = obj.get("data", obj.get("raw", ""))
    text = dumps_compact(data) if not isinstance(data, str) else data
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def _table_lines(entries: Iterator[LogEntry]) -> Iterator[str]:
    columns = shutil.get_terminal_size((160, 24)).columns
    header = f"{'OFFSET':>10} {'EPOCH':>5} {'APPEND TIME (ms)':>16} {'TYPE':<34} {'V':>2} DATA"
    yield header
    fixed = len(header) - len("DATA")
    for entry in entries:
        kind = entry.type_name + ("*" if entry.is_control else "")
        epoch = "" if entry.raft_leader_epoch is None else str(entry.raft_leader_epoch)
        when = "" if entry.append_time_ms is None else str(entry.append_time_ms)
        flag = "" if entry.read_mode == "exact" else f"[{entry.read_mode}] "
        yield (f"{entry.offset:>10} {epoch:>5} {when:>16} {kind:<34} {entry.version:>2} "
               f"{flag}{_summary(entry, max(columns - fixed - len(flag), 20))}")


@_command(epilog="Examples:\n\n"
             "  kraft-replay dump /var/lib/kafka/data/__cluster_metadata-0\n\n"
             "  kraft-replay dump 00000000000000000000.log --format table | less\n\n"
             "  kraft-replay dump dump-log-output.txt > log.jsonl")
@guarded_command
def dump(
    source: Annotated[Path, typer.Argument(help="A segment, snapshot, __cluster_metadata-0 or data "
                                                "directory, kafka-dump-log text, JSON lines or Avro file.")],
    fmt: Annotated[DumpFormat, typer.Option(
        "--format", help="jsonl: one Kafka-JSON line per record; table: for people.")] = DumpFormat.jsonl,
    input_format: Annotated[str | None, typer.Option(
        "--input-format", help=f"Skip auto-detection: one of {', '.join(FORMATS)}.")] = None,
    skip_corrupt: SkipCorruptOption = False,
    cluster_id: SourceClusterOption = None,
    keep_secrets: KeepSecretsOption = False,
) -> None:
    """Print every record of SOURCE, one Kafka-JSON line per record (offset included); secrets read (redacted)."""
    report = ReadReport()
    entries = _readable(read_entries(source, ReadOptions(skip_corrupt=skip_corrupt, cluster_id=cluster_id),
                                     report, fmt=input_format), keep_secrets)
    lines = _table_lines(entries) if fmt is DumpFormat.table else map(entry_to_line, entries)
    out = sys.stdout
    for line in lines:
        out.write(line)
        out.write("\n")
    out.flush()
    for note in report.notes:
        typer.secho(f"note: {note}", err=True, fg=typer.colors.YELLOW)


@_command(epilog="Examples:\n\n"
             "  kraft-replay export /var/lib/kafka/data/__cluster_metadata-0 --out metadata.avro\n\n"
             "  kraft-replay dump metadata.avro --format table")
@guarded_command
def export(
    source: Annotated[Path, typer.Argument(help="Any input `dump` reads.")],
    out: Annotated[Path, typer.Option(help="The Avro object container file to write.")],
    codec: Annotated[str, typer.Option(help="Avro block codec: null, deflate, snappy or zstandard.")]
    = "deflate",
    skip_corrupt: SkipCorruptOption = False,
    cluster_id: SourceClusterOption = None,
    keep_secrets: KeepSecretsOption = False,
) -> None:
    """Write every record of SOURCE to an Avro container file (schema MetadataLogEntry) for bulk import; secrets
    read (redacted)."""
    report = ReadReport()
    entries = _readable(read_entries(source, ReadOptions(skip_corrupt=skip_corrupt, cluster_id=cluster_id),
                                     report), keep_secrets)
    partial = out.with_name(out.name + ".partial")
    count = write_container(partial, entries, codec=codec)
    partial.replace(out)  # never leave a half-written file under the final name
    for note in report.notes:
        typer.secho(f"note: {note}", err=True, fg=typer.colors.YELLOW)
    typer.echo(f"wrote {count} records to {out}")


def _resolve_type(name: str) -> str:
    if name in definitions() or name == ENVELOPE_NAME:
        return name
    if name.lower() in ("envelope", "entry"):
        return ENVELOPE_NAME
    message = by_json_type_name().get(name.upper())
    if message is None:
        raise RecordsError(f"unknown record type {name!r}; `kraft-replay schemas` lists them")
    return message.name


@_command(epilog="Examples:\n\n  kraft-replay schemas\n\n"
             "  kraft-replay schemas PartitionChangeRecord\n\n"
             "  kraft-replay schemas PARTITION_RECORD --version 0\n\n  kraft-replay schemas envelope")
@guarded_command
def schemas(
    record_type: Annotated[str | None, typer.Argument(
        help="Kafka class name (PartitionChangeRecord), dump name (PARTITION_CHANGE_RECORD) or "
             "'envelope'. Without it: list every type.")] = None,
    version: Annotated[int | None, typer.Option(
        help="Print the shape of one Kafka version instead of the merged schema.")] = None,
) -> None:
    """Print the Avro schema of a record type, or list all types with their schema ids."""
    if record_type is None:
        typer.echo(f"{'TYPE':<34} {'DUMP NAME':<36} {'API KEY':>7} {'VERSIONS':<8} SCHEMA ID")
        for definition in sorted(definitions().values(), key=lambda m: (m.api_key is None, m.api_key or 0, m.name)):
            key = str(definition.api_key) if definition.api_key is not None else f"ctl {definition.control_type}"
            typer.echo(f"{definition.name:<34} {definition.json_type_name:<36} {key:>7} "
                       f"{definition.valid_versions!s:<8} {schema_id(definition.name)}")
        return
    name = _resolve_type(record_type)
    if version is None:
        typer.echo(schema_text(name), nl=False)
        return
    message = definitions().get(name)
    if message is None or version not in message.valid_versions:
        known = message.valid_versions if message else "none"
        raise RecordsError(f"{name} has no version {version} (versions {known})")
    typer.echo(schema_json(record_schema(message, version)), nl=False)
