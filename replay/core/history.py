"""Event states → history intervals ``[valid_from_offset, valid_to_offset)``.

An entity gets one version per visible offset (the records of a transaction become visible
together, so only the state after the last of them is ever seen); a removal (tombstone row) closes
the open version and adds none. ``collapse`` merges consecutive versions that do not differ, for
entities where a record can leave the state unchanged (fencing a fenced broker).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.window import WindowSpec


def lives_after(offset: Column, interval: str = "") -> Column:
    """The version (of alias ``interval`` when given) is still valid after ``offset``: not closed, or closed later."""
    valid_to = F.col(f"{interval}.valid_to_offset" if interval else "valid_to_offset")
    return valid_to.isNull() | (valid_to > offset)


def holds_at(offset: Column, interval: str = "") -> Column:
    """The version (of alias ``interval`` when given) is the one valid at ``offset``: the model's as-of rule
    (``replay.query.rules.as_of_sql`` as SQL text) as a Column."""
    valid_from = F.col(f"{interval}.valid_from_offset" if interval else "valid_from_offset")
    return (valid_from <= offset) & lives_after(offset, interval)


def to_intervals(states: DataFrame, keyed: tuple[str, ...], value_columns: tuple[str, ...],
                 tombstone: str = "is_tombstone") -> DataFrame:
    """``states``: one row per applied event (``visible_offset``, ``visible_time_ms``, ``offset``,
    ``record_type`` and the entity's state after it) plus tombstone rows (``tombstone`` true)."""
    # One window in apply order: the last row at each visible offset is the version (only the state after
    # the last record of a transaction is ever seen), and the next row's visible offset ends it.
    in_apply_order = Window.partitionBy(*keyed).orderBy("visible_offset", "offset", "seq")
    versions = (states
                .withColumn("valid_to_offset", F.lead("visible_offset").over(in_apply_order))
                .withColumn("valid_to_time_ms", F.lead("visible_time_ms").over(in_apply_order))
                .where((F.col("valid_to_offset").isNull() | (F.col("valid_to_offset") != F.col("visible_offset")))
                       & ~F.coalesce(F.col(tombstone), F.lit(False))))
    return as_versions(versions, keyed, value_columns)


def as_versions(versions: DataFrame, keyed: tuple[str, ...], value_columns: tuple[str, ...]) -> DataFrame:
    """Rows that are versions (the state after an event: its ``visible_offset``, ``visible_time_ms``, ``offset``,
    ``record_type``, the values, and the version's end ``valid_to_offset``/``valid_to_time_ms``) in the columns of
    a history table."""
    return versions.select(
        *keyed, *value_columns,
        F.col("visible_offset").alias("valid_from_offset"), "valid_to_offset",
        F.col("visible_time_ms").alias("valid_from_time_ms"), "valid_to_time_ms",
        F.col("offset").alias("cause_offset"), F.col("record_type").alias("cause_type"))


def touches_before(by_start: WindowSpec) -> Column:
    """The version starts where the one before it (``by_start``: its key's versions by start) ends; false for the
    first: a run of touching versions is one life of the entity."""
    return F.coalesce(F.lag("valid_to_offset").over(by_start) == F.col("valid_from_offset"), F.lit(False))


def collapse(history: DataFrame, keyed: tuple[str, ...], value_columns: tuple[str, ...],
             restart: str | None = None) -> DataFrame:
    """Merge consecutive, touching versions whose values are equal; the merged version keeps the
    cause of its first part. ``restart``: a boolean column that always starts a new version."""
    by_start = Window.partitionBy(*keyed).orderBy("valid_from_offset")
    values = F.struct(*value_columns)
    same = (F.lag(values).over(by_start) == values) & touches_before(by_start)
    if restart is not None:
        same = same & ~F.col(restart)
    # Every window below has the same spec, so Spark sorts the rows once: a merged version starts at a row
    # that does not continue its predecessor and ends where the last row of its run ends.
    starts = history.withColumn("_new", ~F.coalesce(same, F.lit(False)))
    edges = (starts.withColumn("_last", F.coalesce(F.lead("_new").over(by_start), F.lit(True)))
             .where(F.col("_new") | F.col("_last")))
    merged = (edges
              .withColumn("_to", F.when(F.col("_last"), F.col("valid_to_offset"))
                          .otherwise(F.lead("valid_to_offset").over(by_start)))
              .withColumn("_to_time", F.when(F.col("_last"), F.col("valid_to_time_ms"))
                          .otherwise(F.lead("valid_to_time_ms").over(by_start)))
              .where(F.col("_new"))
              .withColumn("valid_to_offset", F.col("_to"))
              .withColumn("valid_to_time_ms", F.col("_to_time")))
    return merged.drop("_new", "_last", "_to", "_to_time")
