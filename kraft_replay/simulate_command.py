"""``kraft-replay simulate``: a synthetic ``__cluster_metadata`` log from the KRaft controller simulator.

Register with ``app.command(epilog=SIMULATE_EPILOG)(simulate)`` in ``kraft_replay/cli.py``.
"""

from __future__ import annotations

import time
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from kraft_replay.plumbing import guarded_command
from records.batch import Compression
from records.errors import RecordsError
from simulator import SCENARIOS, ScenarioOptions, SimulationError, run_scenario, write_log
from simulator.versions import SUPPORTED, MetadataVersion

SIMULATE_EPILOG = (
    "Examples:\n\n"
    "  kraft-replay simulate --out /tmp/sim --scenario lost-last-isr-unclean\n\n"
    "  kraft-replay simulate --out /tmp/big --brokers 1000 --topics 1000 --partitions-per-topic 100 "
    "--events 20000 --seed 7\n\n"
    "  kraft-replay simulate --out /tmp/old --metadata-version 3.3 --format jsonl "
    "--scenario rolling-restart\n\n"
    "  kraft-replay dump /tmp/sim/__cluster_metadata-0 --format table | less"
)


class SimFormat(StrEnum):
    segments = "segments"
    jsonl = "jsonl"


class SimCompression(StrEnum):
    none = "none"
    gzip = "gzip"
    snappy = "snappy"
    lz4 = "lz4"
    zstd = "zstd"


@guarded_command
def simulate(
    out: Annotated[Path, typer.Option(help="Output directory: meta.properties + __cluster_metadata-0/ "
                                           "(segments) or metadata.jsonl (jsonl).")],
    brokers: Annotated[int, typer.Option(min=1, help="Brokers in the cluster (ids 1..N).")] = 6,
    topics: Annotated[int, typer.Option(min=0, help="Topics created at the start.")] = 3,
    partitions_per_topic: Annotated[int, typer.Option(min=1, help="Partitions per initial topic.")] = 6,
    replication_factor: Annotated[int, typer.Option(min=1, help="Replicas per partition.")] = 3,
    events: Annotated[int, typer.Option(min=0, help="Random operations (scenario 'random').")] = 200,
    seed: Annotated[int, typer.Option(help="Seed: the same seed and options give byte-identical "
                                           "output.")] = 0,
    scenario: Annotated[str, typer.Option(help=f"One of: {', '.join(SCENARIOS)}.")] = "random",
    format: Annotated[SimFormat, typer.Option("--format", help="segments: Kafka's on-disk log; "
                                                               "jsonl: one Kafka-JSON line per record."
                                              )] = SimFormat.segments,
    metadata_version: Annotated[str, typer.Option(help=f"metadata.version: {', '.join(SUPPORTED)} or an "
                                                       "IV name (3.7-IV2); selects records and versions."
                                                  )] = "3.9",
    compression: Annotated[SimCompression, typer.Option(help="Batch compression for segments.")
                           ] = SimCompression.none,
    unclean: Annotated[bool, typer.Option(help="Cluster default unclean.leader.election.enable=true."
                                          )] = False,
    elr: Annotated[bool, typer.Option(help="Eligible leader replicas (KIP-966); needs --metadata-version 4.0."
                                      )] = False,
) -> None:
    """Simulate a KRaft controller and write its metadata log, with Kafka's records and batches."""
    if scenario not in SCENARIOS:
        raise RecordsError(f"unknown scenario {scenario!r} (expected one of {', '.join(SCENARIOS)})")
    try:
        MetadataVersion.parse(metadata_version)
    except ValueError as exc:
        raise RecordsError(str(exc)) from None
    options = ScenarioOptions(brokers=brokers, topics=topics, partitions_per_topic=partitions_per_topic,
                              replication_factor=replication_factor, events=events, seed=seed,
                              metadata_version=metadata_version, unclean=unclean, elr=elr)
    started = time.perf_counter()
    try:
        sim_run = run_scenario(scenario, options)
        count, paths = write_log(sim_run.entries(), out, str(format), cluster_id=sim_run.sim.cluster_id,
                                 node_id=sim_run.sim.config.controller_ids[0],
                                 compression=Compression[compression.name.upper()])
    except SimulationError as exc:
        raise RecordsError(f"simulation: {exc}") from None
    elapsed = time.perf_counter() - started
    facts = sim_run.facts
    typer.echo(f"Wrote {count} records ({scenario}, seed {seed}, metadata.version "
               f"{facts.metadata_version}, "
               f"cluster {sim_run.sim.cluster_id}) to {out} in {elapsed:.1f}s")
    typer.echo(f"  fenced {len(facts.fenced)}, leaderless {len(facts.leaderless)}, unclean elections "
               f"{len(facts.unclean_elections)}, failovers {len(facts.failovers)}, aborted transactions "
               f"{len(facts.aborted_transactions)}, files {len(paths)}")
    offsets = [(name.removesuffix("_offset"), value) for name, value in facts.key.items()
               if name.endswith("_offset")]
    if offsets:  # where the scenario's story happened, for the questions to ask of the log
        typer.echo("  offsets: " + ", ".join(f"{name} {value}" for name, value in offsets))
