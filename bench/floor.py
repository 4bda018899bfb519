"""The floor of a replay (issue 20): what Spark needs at the least to do the replay's I/O and its one sort, measured
on the same session and lake, so the replay's time can be read as a multiple of it, stage by stage.

The floor reads the ``metadata_log`` columns the replay reads (``replay.core.events.LOG_COLUMNS``, the payload columns
of the lake's shapes, ``secret_fingerprint`` where the log has it) of the record types the folds apply, decodes
the entity key the replay sorts the largest families by (``topicId``/``partitionId`` of Partition(Change)Records,
typed by the lake's shapes as the replay types them; null for the other records), sorts once by
``(cluster_id, record_type, topic_id, partition_id)`` and offset (one ``repartition`` + ``sortWithinPartitions``),
materialises that (``localCheckpoint``: read + decode + sort), then writes, per replay table, exactly as many of
those rows as the replay wrote to it (the sorted rows repeated with ``explode(sequence(...))`` and cut at the
count: the content differs, the count and the columns' kind do not) as a Delta table of a scratch lake, through
the lake's own commit path.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from bench.clock import timed
from lakehouse.lake import ROWS_PER_FILE, Lake
from lakehouse.spark_settings import spark_conf
from lakehouse.tables import METADATA_LOG
from replay.core.events import LOG_COLUMNS, STATE_TYPES, secret_fingerprint
from replay.core.shapes import lake_shapes
from replay.fold.engine import PARTITION_TYPES
from replay.store.table_writes import MAX_RECORDS_CONF, TABLES_APART, WRITING

KEY_FIELDS = ("topicId", "partitionId")
SORT_KEY = ("cluster_id", "record_type", "topic_id", "partition_id")
# monotonically_increasing_id(): the Spark partition in the upper 31 bits, the row within it in the lower 33
_ROW_BITS = 33
_ROW, _COPY = "_floor_row", "_floor_copy"


@dataclass(frozen=True)
class Floor:
    """The floor's times: read + decode + sort (materialised), then each table's write."""

    events: int  # the sorted rows
    sort_seconds: float
    write_seconds: dict[str, float]  # table → seconds of writing as many rows as the replay wrote to it

    @property
    def seconds(self) -> float:
        return self.sort_seconds + sum(self.write_seconds.values())

    def matching(self, stage: str) -> float | None:
        """The floor's seconds that match a replay stage: the writes of the tables of ``computing and writing T``
        (``T``: one table, or several written at once, ``A, B``); the sort for the fold and the derivation (both
        re-read and re-order the events); None when the floor did not write one of them."""
        if stage.startswith(WRITING):
            seconds = [self.write_seconds.get(t) for t in stage.removeprefix(WRITING).split(TABLES_APART)]
            return None if None in seconds else sum(s for s in seconds if s is not None)
        return self.sort_seconds


def sorted_events(spark: SparkSession, lake: Lake) -> tuple[DataFrame, int]:
    """The replay's input columns, keyed and sorted once, checkpointed, with a dense row number ``_floor_row``
    (0, 1, …: the per-partition counts are a handful of rows to the driver, never the table); and its rows."""
    log = lake.read(spark, METADATA_LOG)
    shapes = lake_shapes(spark, lake)
    events = log.where(F.col("record_type").isin(*STATE_TYPES)).select(
        *LOG_COLUMNS, *shapes.payload_columns(), secret_fingerprint(log))
    keyed = shapes.named(events, PARTITION_TYPES, KEY_FIELDS).withColumnRenamed(
        "topicId", "topic_id").withColumnRenamed("partitionId", "partition_id")
    ordered = (keyed.repartition(*SORT_KEY).sortWithinPartitions(*SORT_KEY, "offset")
               .withColumn("_floor_id", F.monotonically_increasing_id())
               .localCheckpoint(eager=True))
    part = F.shiftright(F.col("_floor_id"), _ROW_BITS)
    counts = sorted((int(row["part"]), int(row["rows"]))
                    for row in ordered.groupBy(part.alias("part")).agg(F.count(F.lit(1)).alias("rows")).collect())
    starts: list[Column] = []
    first = 0
    for index, rows in counts:
        starts += [F.lit(index).cast("long"), F.lit(first).cast("long")]
        first += rows
    start = F.element_at(F.create_map(*starts), part) if starts else F.lit(0).cast("long")
    within = F.col("_floor_id").bitwiseAND(F.lit((1 << _ROW_BITS) - 1))
    return ordered.withColumn(_ROW, start + within).drop("_floor_id"), first


def as_many_rows(events: DataFrame, total: int, wanted: int) -> DataFrame:
    """Exactly ``wanted`` rows from ``events`` (``total`` rows numbered ``_floor_row`` 0…total-1): the rows
    repeated ``ceil(wanted / total)`` times in their order, cut at the count (none when ``total`` is 0)."""
    copies = max(1, math.ceil(wanted / total)) if total else 1
    repeated = events.withColumn(_COPY, F.explode(F.sequence(F.lit(0), F.lit(copies - 1))))
    kept = repeated.where(F.col(_COPY) * F.lit(total) + F.col(_ROW) < F.lit(wanted))
    return kept.drop(_COPY, _ROW)


def measure_floor(spark: SparkSession, lake: Lake, rows: Mapping[str, int], scratch: Path) -> Floor:
    """Time the floor of a replay of ``lake`` that wrote ``rows`` (table → rows, ``ReplaySummary.rows``): the
    tables go to the lake ``scratch`` (replaced), on the replay lake's engine."""
    (events, total), sort_seconds = timed(lambda: sorted_events(spark, lake))
    floor_lake = Lake(scratch, engine=lake.engine(spark))
    write_seconds: dict[str, float] = {}
    with spark_conf(spark, MAX_RECORDS_CONF, str(ROWS_PER_FILE)):  # the replay's file size
        for name, wanted in rows.items():
            copies = as_many_rows(events, total, wanted)
            _, write_seconds[name] = timed(lambda df=copies, table=name: floor_lake.write(df, table, "overwrite"))
    return Floor(events=total, sort_seconds=sort_seconds, write_seconds=write_seconds)


def stage_lines(stages: list[tuple[str, float]], floor: Floor, replay_seconds: float) -> list[str]:
    """The stage-by-stage table (markdown): each replay stage's seconds, the floor's matching seconds and the
    multiple; then the whole replay against the whole floor."""
    lines = ["| replay stage | replay s | floor s | x floor |", "|---|---|---|---|"]
    for stage, seconds in stages:
        matched = floor.matching(stage)
        basis = "sort" if not stage.startswith(WRITING) else "write"
        if matched is None:
            lines.append(f"| {stage} | {seconds:.1f} | - | - |")
        else:
            lines.append(f"| {stage} | {seconds:.1f} | {matched:.1f} ({basis}) | {multiple(seconds, matched)} |")
    lines.append(f"| **whole replay** | {replay_seconds:.1f} | {floor.seconds:.1f} | "
                 f"{multiple(replay_seconds, floor.seconds)} |")
    return lines


def multiple(value: float, basis: float) -> str:
    """``value`` as a multiple of ``basis``: ``4.2x`` (``-`` for a basis of zero)."""
    return f"{value / basis:.1f}x" if basis > 0 else "-"


__all__ = ["Floor", "as_many_rows", "measure_floor", "multiple", "sorted_events", "stage_lines"]
