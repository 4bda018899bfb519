"""The ``kraft-replay`` command line.

Exit codes: 0 success, 1 unexpected failure, 2 bad usage, 3 bad input (the message names the
file, line or byte, and offset). Errors never print a traceback unless ``KRAFT_REPLAY_DEBUG=1``.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterator
from enum import StrEnum
from pathlib import Path
from typing import Annotated, TypeVar

import typer

from records.avro_codec import schema_id, schema_text, write_container
from records.avro_schema import ENVELOPE_NAME, record_schema, schema_json
from records.definitions import by_json_type_name, definitions
from records.errors import RecordsError
from records.jsonl import entry_to_line
from records.kafka_json import dumps_compact, record_to_json
from records.model import LogEntry
from records.sources import FORMATS, ReadOptions, ReadReport, read_entries

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_BAD_INPUT = 3

app = typer.Typer(
    name="kraft-replay",
    help="Replay Apache Kafka KRaft metadata logs: the cluster's state at any offset or time.\n\n"
         "Example: kraft-replay dump /var/lib/kafka/data/__cluster_metadata-0 --format table",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

T = TypeVar("T")


def _fail(message: str, code: int) -> typer.Exit:
    typer.secho(f"kraft-replay: {message}", err=True, fg=typer.colors.RED)
    return typer.Exit(code)


def guarded(action: Callable[[], T]) -> T:
    """Run a command body; turn input errors into a clear message and exit code, not a traceback."""
    try:
        return action()
    except typer.Exit:
        raise
    except typer.BadParameter as exc:  # a usage problem found while running: exit 2 with the message
        raise _fail(exc.message, EXIT_USAGE) from None
    except RecordsError as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from None
    except BrokenPipeError:
        # The reader (e.g. `head`) went away: stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise typer.Exit(0) from None
    except OSError as exc:
        raise _fail(f"{exc.filename or ''}: {exc.strerror or exc}", EXIT_BAD_INPUT) from None
    except KeyboardInterrupt:
        raise _fail("interrupted", 130) from None
    except Exception as exc:
        if os.environ.get("KRAFT_REPLAY_DEBUG") == "1":
            raise
        from lakehouse.spark import SparkUnavailableError  # late: pyspark is loaded by now, not at start-up

        if isinstance(exc, SparkUnavailableError):  # no JVM, no jars: one actionable line
            raise _fail(str(exc), EXIT_FAILURE) from None
        raise _fail(f"unexpected error: {type(exc).__name__}: {exc} (set KRAFT_REPLAY_DEBUG=1 "
                    "for the traceback, and please report it)", EXIT_FAILURE) from None


SkipCorruptOption = Annotated[bool, typer.Option(
    "--skip-corrupt", help="Skip damaged batches (each one is listed) instead of stopping.")]
ClusterIdOption = Annotated[str | None, typer.Option(help="Cluster id when meta.properties is absent.")]


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


@app.command(epilog="Examples:\n\n"
             "  kraft-replay dump /var/lib/kafka/data/__cluster_metadata-0\n\n"
             "  kraft-replay dump 00000000000000000000.log --format table | less\n\n"
             "  kraft-replay dump dump-log-output.txt > log.jsonl")
def dump(
    source: Annotated[Path, typer.Argument(help="A segment, snapshot, __cluster_metadata-0 or data "
                                                "directory, kafka-dump-log text, JSON lines or Avro file.")],
    fmt: Annotated[DumpFormat, typer.Option(
        "--format", help="jsonl: one Kafka-JSON line per record; table: for people.")] = DumpFormat.jsonl,
    input_format: Annotated[str | None, typer.Option(
        "--input-format", help=f"Skip auto-detection: one of {', '.join(FORMATS)}.")] = None,
    skip_corrupt: SkipCorruptOption = False,
    cluster_id: ClusterIdOption = None,
) -> None:
    """Print every record of SOURCE, one Kafka-JSON line per record (offset included)."""

    def run() -> None:
        report = ReadReport()
        entries = read_entries(source, ReadOptions(skip_corrupt=skip_corrupt, cluster_id=cluster_id),
                               report, fmt=input_format)
        lines = _table_lines(entries) if fmt is DumpFormat.table else map(entry_to_line, entries)
        out = sys.stdout
        for line in lines:
            out.write(line)
            out.write("\n")
        out.flush()
        for note in report.notes:
            typer.secho(f"note: {note}", err=True, fg=typer.colors.YELLOW)

    guarded(run)


@app.command(epilog="Examples:\n\n"
             "  kraft-replay export /var/lib/kafka/data/__cluster_metadata-0 --out metadata.avro\n\n"
             "  kraft-replay dump metadata.avro --format table")
def export(
    source: Annotated[Path, typer.Argument(help="Any input `dump` reads.")],
    out: Annotated[Path, typer.Option(help="The Avro object container file to write.")],
    codec: Annotated[str, typer.Option(help="Avro block codec: null, deflate, snappy or zstandard.")]
    = "deflate",
    skip_corrupt: SkipCorruptOption = False,
    cluster_id: ClusterIdOption = None,
) -> None:
    """Write every record of SOURCE to an Avro container file (schema MetadataLogEntry) for bulk import."""

    def run() -> None:
        report = ReadReport()
        entries = read_entries(source, ReadOptions(skip_corrupt=skip_corrupt, cluster_id=cluster_id), report)
        partial = out.with_name(out.name + ".partial")
        count = write_container(partial, entries, codec=codec)
        partial.replace(out)  # never leave a half-written file under the final name
        for note in report.notes:
            typer.secho(f"note: {note}", err=True, fg=typer.colors.YELLOW)
        typer.echo(f"wrote {count} records to {out}")

    guarded(run)


def _resolve_type(name: str) -> str:
    if name in definitions() or name == ENVELOPE_NAME:
        return name
    if name.lower() in ("envelope", "entry"):
        return ENVELOPE_NAME
    message = by_json_type_name().get(name.upper())
    if message is None:
        raise RecordsError(f"unknown record type {name!r}; `kraft-replay schemas` lists them")
    return message.name


@app.command(epilog="Examples:\n\n  kraft-replay schemas\n\n"
             "  kraft-replay schemas PartitionChangeRecord\n\n"
             "  kraft-replay schemas PARTITION_RECORD --version 0\n\n  kraft-replay schemas envelope")
def schemas(
    record_type: Annotated[str | None, typer.Argument(
        help="Kafka class name (PartitionChangeRecord), dump name (PARTITION_CHANGE_RECORD) or "
             "'envelope'. Without it: list every type.")] = None,
    version: Annotated[int | None, typer.Option(
        help="Print the shape of one Kafka version instead of the merged schema.")] = None,
) -> None:
    """Print the Avro schema of a record type, or list all types with their schema ids."""

    def run() -> None:
        if record_type is None:
            typer.echo(f"{'TYPE':<34} {'DUMP NAME':<36} {'API KEY':>7} {'VERSIONS':<8} SCHEMA ID")
            for message in sorted(definitions().values(), key=lambda m: (m.api_key is None,
                                                                          m.api_key or 0, m.name)):
                key = str(message.api_key) if message.api_key is not None else f"ctl {message.control_type}"
                typer.echo(f"{message.name:<34} {message.json_type_name:<36} {key:>7} "
                           f"{message.valid_versions!s:<8} {schema_id(message.name)}")
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

    guarded(run)


@app.command(epilog="Examples:\n\n  kraft-replay demo\n\n  kraft-replay demo --out /tmp/demo --master local[2]\n\n"
             "  kraft-replay demo --quiet > demo.txt")
def demo(
    out: Annotated[Path, typer.Option(help="Folder for everything the demo makes (log, lake, report).")]
    = Path("kraft-demo"),
    master: Annotated[str | None, typer.Option(help="Spark master URL (default local[*]).")] = None,
    remote: Annotated[str | None, typer.Option(
        help="Spark Connect URL, e.g. sc://host:15002 (default $SPARK_REMOTE).")] = None,
    quiet: Annotated[bool, typer.Option(
        "--quiet", "-q", help="No progress display (also hidden when the output is not a terminal).")] = False,
) -> None:
    """The main job: simulate an incident, ingest it into a local Delta lake, replay it, explain it, plot it."""

    def run() -> None:
        from kraft_replay.demo import run_demo
        from kraft_replay.progress import stage_progress
        from lakehouse.spark import SparkOptions, get_spark

        with stage_progress(quiet) as stages:
            stages("starting Spark")
            spark = stages.attach(get_spark(SparkOptions(master=master, remote=remote, announce=True)))
            run_demo(spark, out, typer.echo, progress=stages)

    guarded(run)


def _register_commands() -> None:
    from kraft_replay.lake_commands import INGEST_EPILOG, ingest, lake_app
    from kraft_replay.replay_commands import REPLAY_COMMANDS
    from kraft_replay.run_commands import RUN_COMMANDS
    from kraft_replay.simulate_command import SIMULATE_EPILOG, simulate

    app.command(epilog=SIMULATE_EPILOG)(simulate)
    app.command(epilog=INGEST_EPILOG)(ingest)
    app.add_typer(lake_app, name="lake")
    for command, epilog in [*REPLAY_COMMANDS, *RUN_COMMANDS]:
        app.command(epilog=epilog)(command)
    from kraft_replay.incident_commands import INCIDENT_COMMANDS

    for command, epilog in INCIDENT_COMMANDS:
        app.command(epilog=epilog)(command)


_register_commands()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
