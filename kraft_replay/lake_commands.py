"""`kraft-replay ingest` and `kraft-replay lake …`: the lakehouse commands.

Register with ``app.command(epilog=INGEST_EPILOG)(ingest)`` and ``app.add_typer(lake_app, name="lake")``.
Run standalone with ``python -m kraft_replay.lake_commands ingest …`` (used by the multi-process tests).
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer

from kraft_replay.formatting import format_ingest_summary
from kraft_replay.plumbing import (
    IngestSkipCorruptOption,
    LakeOption,
    MasterOption,
    QuietOption,
    RemoteOption,
    SourceClusterOption,
    command_group,
    guarded_command,
    spark_session,
    spark_with_progress,
)
from kraft_replay.plumbing import standalone_app as commands_app

INGEST_EPILOG = (
    "Examples:\n\n"
    "  kraft-replay ingest /var/lib/kafka/data --lake ./kraft-lake\n\n"
    "  kraft-replay ingest metadata.jsonl --cluster-id q1w2e3r4t5y6u7i8o9p0\n\n"
    "  kraft-replay ingest --follow /var/lib/kafka/data/__cluster_metadata-0 --interval 30"
)

lake_app = command_group(
    "lake",
    "Inspect and maintain the Delta lake (history, tables, optimize, vacuum, redact).\n\n"
    "Example: kraft-replay lake history metadata_log --lake ./kraft-lake",
)


@guarded_command
def ingest(
    source: Annotated[Path, typer.Argument(help="Kafka data dir, __cluster_metadata-0 dir, a .log segment, a "
                                           ".checkpoint snapshot, JSON lines, kafka-dump-log text or Avro")],
    lake: LakeOption = None,
    cluster_id: SourceClusterOption = None,
    skip_corrupt: IngestSkipCorruptOption = False,
    follow: Annotated[bool, typer.Option("--follow", help="Keep watching SOURCE (a live log directory) and "
                                         "ingest new segments and snapshots until SIGINT/SIGTERM")] = False,
    interval: Annotated[float, typer.Option("--interval", min=0.1, help="Seconds between --follow rounds")] = 10.0,
    master: MasterOption = None,
    remote: RemoteOption = None,
    quiet: QuietOption = False,
) -> None:
    """Store a KRaft metadata log in the lake, exactly once (re-ingesting adds nothing)."""
    from lakehouse.follow import follow as follow_log
    from lakehouse.ingest import IngestOptions, IngestSummary
    from lakehouse.ingest import ingest as ingest_source
    from lakehouse.lake import Lake

    target = Lake(lake)
    options = IngestOptions(cluster_id=cluster_id, skip_corrupt=skip_corrupt)
    if not follow:
        with spark_with_progress(quiet, master, remote) as (stages, spark):
            summary = ingest_source(spark, target, source, options, progress=stages)
        typer.echo("\n".join(format_ingest_summary(summary)))
        return
    if not source.is_dir():
        raise typer.BadParameter("--follow needs a directory (the live __cluster_metadata-0 or its data dir)")
    spark = spark_session(master, remote)
    stop = threading.Event()

    def request_stop(signum: int, _frame: FrameType | None) -> None:
        typer.echo(f"{signal.Signals(signum).name}: stopping after the current round", err=True)
        stop.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}

    def report(summary: IngestSummary) -> None:
        typer.echo("\n".join(format_ingest_summary(summary)), nl=True)

    try:
        typer.echo(f"following {source} into {target.root} every {interval:g}s (SIGINT/SIGTERM stops)")
        rounds = follow_log(spark, target, source, options, interval=interval, stop=stop,
                            on_round=report)
        typer.echo(f"stopped after {rounds} ingest round(s)")
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@lake_app.command("tables", epilog="Example: kraft-replay lake tables --lake ./kraft-lake")
@guarded_command
def tables(lake: LakeOption = None) -> None:
    """List the lake's tables with their version, file count, rows and size."""
    import pyarrow as pa

    from lakehouse.lake import Lake

    target = Lake(lake)
    names = target.table_names()
    if not names:
        typer.echo(f"no tables in {target.root}")
        return
    typer.echo(f"{'table':<16} {'version':>7} {'files':>6} {'rows':>12} {'MB':>9}")
    for name in names:
        table = target.delta_table(name)
        files = pa.table(table.get_add_actions(flatten=True))
        rows = sum(n or 0 for n in files.column("num_records").to_pylist()) if files.num_rows else 0
        size = sum(files.column("size_bytes").to_pylist()) if files.num_rows else 0
        typer.echo(f"{name:<16} {table.version():>7} {files.num_rows:>6} {rows:>12,} {size / 2**20:>9.1f}")


def _delta_spark_session(master: str | None, remote: str | None) -> None:
    """Start the session Delta's own engine needs for ``lake history``/``vacuum`` when it is there (the jars,
    not ``KRAFT_REPLAY_ENGINE=delta-rs``); delta-rs needs none, so without jars no JVM is started."""
    from lakehouse.jars import installed
    from lakehouse.spark import DELTA_RS, requested_engine

    if remote or os.environ.get("SPARK_REMOTE") or (installed() is not None and requested_engine() != DELTA_RS):
        spark_session(master, remote)


@lake_app.command("history", epilog="Example: kraft-replay lake history metadata_log --limit 20")
@guarded_command
def history(
    table: Annotated[str, typer.Argument(help="metadata_log, snapshots, ingest_rejects, avro_schemas, …")],
    lake: LakeOption = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Newest N versions only")] = None,
    master: MasterOption = None,
    remote: RemoteOption = None,
) -> None:
    """List a table's versions (newest first): time, operation, rows added, ingest id, engine."""
    from lakehouse.lake import Lake, LakeError

    target = Lake(lake)
    if not target.table_exists(table):  # before any JVM starts: a typo answers at once
        raise typer.BadParameter(f"no table {table!r} in the lake at {target.root}; "
                                 "`kraft-replay lake tables` lists the tables")
    _delta_spark_session(master, remote)
    try:
        entries = target.history(table, limit)
    except LakeError as exc:
        raise typer.BadParameter(f"{exc}; `kraft-replay lake tables` lists the tables") from None
    typer.echo(f"{'version':>7}  {'timestamp (UTC)':<23}  {'operation':<18} {'rows added':>12}  "
               f"{'ingest id':<31}  engine")
    for entry in entries:
        rows = f"{entry.rows_added:,}" if entry.rows_added is not None else "-"
        typer.echo(f"{entry.version:>7}  {entry.timestamp:%Y-%m-%d %H:%M:%S.%f}"[:-3] + "  "
                   f"{entry.operation:<18} {rows:>12}  {entry.ingest_id or '':<31}  "
                   f"{entry.engine_info or ''}".rstrip())


@lake_app.command("optimize", epilog="Example: kraft-replay lake optimize --lake ./kraft-lake")
@guarded_command
def optimize(
    lake: LakeOption = None,
    table: Annotated[list[str] | None, typer.Option("--table", help="Only these tables (repeatable)")] = None,
    master: MasterOption = None,
    remote: RemoteOption = None,
) -> None:
    """Compact small files (metadata_log and snapshots stay sorted by offset) and checkpoint the Delta log."""
    from lakehouse.lake import Lake

    results = Lake(lake).optimize(spark_session(master, remote), table or None)
    for name, result in results.items():
        typer.echo(f"{name}: {result['files_removed']} files compacted into {result['files_added']}")


@lake_app.command("vacuum", epilog="Example: kraft-replay lake vacuum --retention-hours 336 --dry-run")
@guarded_command
def vacuum(
    lake: LakeOption = None,
    retention_hours: Annotated[float, typer.Option("--retention-hours", min=0, help="Keep files older "
                                                   "versions needed within this many hours")] = 168.0,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only list what would be deleted")] = False,
    master: MasterOption = None,
    remote: RemoteOption = None,
) -> None:
    """Delete data files no longer referenced within the retention (default 7 days; never current files)."""
    from lakehouse.lake import Lake

    _delta_spark_session(master, remote)

    for name, files in Lake(lake).vacuum(retention_hours, dry_run).items():
        typer.echo(f"{name}: {len(files)} file(s) {'would be ' if dry_run else ''}deleted")


@lake_app.command("redact", epilog="Example: kraft-replay lake redact --lake ./kraft-lake")
@guarded_command
def redact(lake: LakeOption = None) -> None:
    """Rewrite a lake written before secrets were redacted: every sensitive config value and SCRAM salt and key
    in metadata_log, snapshots and ingest_rejects becomes (redacted) with its keyed fingerprint, and the files
    that held them are deleted from disk (time travel to before this no longer reaches them). Idempotent."""
    from lakehouse.fingerprint_key import fingerprint_key, key_path
    from lakehouse.lake import Lake
    from lakehouse.lake_redact import redact_lake

    target = Lake(lake)
    summary = redact_lake(target, fingerprint_key(target.root))
    for column in summary.columns_added:
        typer.echo(f"added column {column}")
    for name, rows in summary.rows_redacted.items():
        version = summary.versions.get(name)
        typer.echo(f"{name}: {rows} record(s) redacted in {summary.files_rewritten.get(name, 0)} file(s)"
                   + (f" (version {version})" if version is not None else ""))
    typer.echo(f"{len(summary.files_deleted)} file(s) that held secrets deleted; "
               f"{len(summary.log_files_cleaned)} Delta log file(s) cleaned of their statistics")
    typer.echo(f"fingerprint key: {key_path(target.root)}" if summary.changed
               else "nothing to do: the lake holds no secret")


def standalone_app() -> typer.Typer:
    """`ingest` and `lake` without the rest of the CLI (for subprocesses and before registration)."""
    app = commands_app([(ingest, INGEST_EPILOG)])
    app.add_typer(lake_app, name="lake")
    return app


if __name__ == "__main__":
    standalone_app()()
