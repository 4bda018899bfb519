"""`kraft-replay demo | run | report`: the demo's answers and plots, for a simulated incident or your cluster.

`demo` runs the whole job on a simulated incident. `run PATH` ingests a `__cluster_metadata-0` directory (or
the Kafka data directory holding it) into a lake, replays it and prints what happened, then writes the
report; everything goes under one folder of the working directory (`./kraft-run/<name>/`), printed at the
end. Re-running is safe: the ingest adds only what is new and the replay is deterministic. `report` writes
the plots and the HTML page of a lake already replayed.

Register with ``for command, epilog in RUN_COMMANDS: app.command(epilog=epilog)(command)`` and
``app.command(epilog=DEMO_EPILOG)(demo)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from kraft_replay.formatting import format_replay_summary
from kraft_replay.plumbing import (
    ClusterOption,
    IngestSkipCorruptOption,
    LakeOption,
    MasterOption,
    QuietOption,
    RemoteOption,
    SourceClusterOption,
    guarded_command,
    query_command,
    spark_with_progress,
)

RUN_ROOT = Path("kraft-run")

RUN_EPILOG = ("Examples:\n\n"
              "  kraft-replay run /var/lib/kafka/data\n\n"
              "  kraft-replay run /var/lib/kafka/data/__cluster_metadata-0 --out /tmp/incident-42\n\n"
              "  kraft-replay run ../shared/data/real/ldi-poc --lake ./kraft-lake --no-report --quiet\n\n"
              "  kraft-replay run /var/lib/kafka/data --remote sc://spark-connect:15002")
REPORT_EPILOG = ("Without --topic/--partition the timeline shows the partition whose leader changed most.\n\n"
                 "Examples:\n\n"
                 "  kraft-replay report --out ./report\n\n"
                 "  kraft-replay report --out ./report --from 4800 --to 4928 --lake ./kraft-lake\n\n"
                 "  kraft-replay report --out ./report --topic orders --partition 7")


def run_name(source: Path) -> str:
    """The folder name for a source: the data directory's name (not `__cluster_metadata-0`), made safe."""
    path = source.resolve()
    name = path.parent.name if path.name.startswith("__cluster_metadata") else path.name
    if path.is_file():
        name = path.stem
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "cluster"


@query_command
def run(
    source: Annotated[Path, typer.Argument(
        exists=True, help="A Kafka data directory, its __cluster_metadata-0 directory, or any input `ingest` "
                          "reads")],
    out: Annotated[Path | None, typer.Option(
        "--out", help="Folder for the lake and the report (default ./kraft-run/<name of the data dir>)",
        show_default=False)] = None,
    lake: Annotated[str | None, typer.Option(
        "--lake", help="Lake root to use instead of <out>/lake: a directory or an object-store URI",
        show_default=False)] = None,
    cluster_id: SourceClusterOption = None,
    skip_corrupt: IngestSkipCorruptOption = False,
    report: Annotated[bool, typer.Option("--report/--no-report", help="Write the plots and index.html")] = True,
    master: MasterOption = None,
    remote: RemoteOption = None,
    quiet: QuietOption = False,
) -> None:
    """Ingest, replay and explain your own cluster's metadata log: offline partitions, fences, elections."""
    from kraft_replay.summary import summarize
    from lakehouse.ingest import IngestOptions, ingest, plan_source
    from lakehouse.lake import Lake
    from replay.store.checkpoints import replayed_version
    from replay.store.runs import run_replay

    plan = plan_source(source, cluster_id)  # a wrong path fails here, before Spark starts
    root = (out if out is not None else RUN_ROOT / run_name(source)).resolve()
    target = Lake(lake if lake is not None else root / "lake")
    echo: Callable[[str], None] = typer.echo
    with spark_with_progress(quiet, master, remote) as (stages, spark):
        echo(f"1/4 ingesting {source} into the Delta lake at {target.root}")
        ingested = ingest(spark, target, source, IngestOptions(cluster_id=cluster_id, skip_corrupt=skip_corrupt),
                          plan=plan, progress=stages)
        echo(f"    {ingested.records_added:,} records added, {ingested.records_skipped:,} already present"
             + (f", {ingested.conflicts:,} conflicts" if ingested.conflicts else ""))
        for note in ingested.notes:
            echo(f"    note: {note}")
        cluster = ingested.cluster_ids[0] if len(ingested.cluster_ids) == 1 else cluster_id
        echo("2/4 replaying with Spark")
        up_to_date = replayed_version(spark, target) if not ingested.records_added else None
        if up_to_date is None:
            replayed = run_replay(spark, target, progress=stages)
            echo("\n".join(f"    {line}" for line in format_replay_summary(replayed)))
            last_offset = replayed.last_offset
        else:
            echo(f"    up to date: metadata_log v{up_to_date} is already replayed (`kraft-replay replay --full` "
                 "rebuilds it)")
            last_offset = 0
        echo("3/4 what happened")
        stages("summarizing what happened")
        told = summarize(spark, target, cluster)
        echo("\n".join(told.lines))
        written = None
        if report:
            from kraft_replay.report import write_report  # matplotlib: imported only when plots are drawn

            echo(f"4/4 writing the report (plots and one HTML page) to {root / 'report'}")
            written = write_report(spark, target, root / "report", cluster_id=cluster, summary=told,
                                   progress=stages)
            for note in written.notes:
                echo(f"    {note}")
        else:
            echo("4/4 report skipped (--no-report)")
    where = f"Everything is under {root}: the lake in {target.root}"
    echo(where + (f", the report in {written.html}." if written is not None else "."))
    offset = told.focus[2] if told.focus else last_offset
    echo(f"Try: kraft-replay state --lake {target.root} --offset {offset}")


@query_command
def report(
    out: Annotated[Path, typer.Option("--out", help="Folder for the PNG plots and index.html (created)")],
    lake: LakeOption = None,
    from_offset: Annotated[int | None, typer.Option(
        "--from", min=0, help="First offset plotted (default: the log's first)")] = None,
    to_offset: Annotated[int | None, typer.Option(
        "--to", min=0, help="Last offset plotted (default: the log's last)")] = None,
    topic: Annotated[str | None, typer.Option("--topic", help="The partition timeline's topic")] = None,
    partition: Annotated[int | None, typer.Option(
        "--partition", min=0, help="The partition timeline's partition id (with --topic)")] = None,
    cluster_id: ClusterOption = None,
    master: MasterOption = None,
    remote: RemoteOption = None,
    quiet: QuietOption = False,
) -> None:
    """Plot a replayed lake: a partition's timeline, cluster health, broker fencing; all in one HTML page."""
    from kraft_replay.report import write_report
    from lakehouse.lake import Lake

    with spark_with_progress(quiet, master, remote) as (stages, spark):
        written = write_report(spark, Lake(lake), out, cluster_id=cluster_id, from_offset=from_offset,
                               to_offset=to_offset, topic=topic, partition=partition, progress=stages)
    typer.echo("\n".join(written.lines()))


DEMO_EPILOG = ("Examples:\n\n  kraft-replay demo\n\n  kraft-replay demo --out /tmp/demo --master local[2]\n\n"
               "  kraft-replay demo --quiet > demo.txt")


@guarded_command
def demo(
    out: Annotated[Path, typer.Option(help="Folder for everything the demo makes (log, lake, report).")]
    = Path("kraft-demo"),
    master: MasterOption = None,
    remote: RemoteOption = None,
    quiet: QuietOption = False,
) -> None:
    """The main job: simulate an incident, ingest it into a local Delta lake, replay it, explain it, plot it."""
    from kraft_replay.demo import run_demo

    with spark_with_progress(quiet, master, remote) as (stages, spark):
        run_demo(spark, out, typer.echo, progress=stages)


RUN_COMMANDS: list[tuple[Callable[..., None], str]] = [(run, RUN_EPILOG), (report, REPORT_EPILOG)]

__all__ = ["DEMO_EPILOG", "RUN_COMMANDS", "RUN_ROOT", "demo", "report", "run", "run_name"]
