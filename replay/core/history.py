"""Event states → history intervals ``[valid_from_offset, valid_to_offset)``.

An entity gets one version per visible offset (the records of a transaction become visible
together, so only the state after the last of them is ever seen); a removal (tombstone row) closes
the open version and adds none. ``collapse`` merges consecutive versions that do not differ, for
entities where a record can leave the state unchanged (fencing a fenced broker).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F


def lives_after(offset: Column, interval: str = "") -> Column:
    """The version (of alias ``interval`` when given) is still valid after ``offset``: not closed, or closed later."""
    valid_to = F.col(f"{interval}.valid_to_offset" if interval else "valid_to_offset")
    return valid_to.isNull() | (valid_to > offset)


def holds_at(offset: Column, interval: str = "") -> Column:
    """The version (of alias ``interval`` when given) is the one valid at ``offset``: the model's as-of rule
    (``replay.query.rules.as_of_sql`` as SQL text) as a Column."""
    valid_from = F.col(f"{interval}.valid_from_offset" if interval else "valid_from_offset")
    return (valid_from <= offset) & lives_after(offset, interval)


def _sql_name(column: str) -> str:
    """A column as Spark SQL text, read as ``F.col`` reads it (a dot reaches into a struct)."""
    return ".".join(f"`{part}`" for part in column.split("."))


def _over(keyed: tuple[str, ...], *order: str) -> str:
    """A window's SQL text: each key's rows in ``order``."""
    return f"OVER (PARTITION BY {', '.join(map(_sql_name, keyed))} ORDER BY {', '.join(order)})"


# The steps below are written as SQL text (``selectExpr``, ``where``): a column built with ``F`` costs a py4j round trip
# per function, name and list element, and a small replay builds these steps for every entity kind, so their round
# trips were a fifth of a small replay's (issue 42, BENCHMARKS.md).
_VERSION_END = ("valid_to_offset", "valid_to_time_ms")


def to_intervals(states: DataFrame, keyed: tuple[str, ...], value_columns: tuple[str, ...],
                 tombstone: str = "is_tombstone") -> DataFrame:
    """``states``: one row per applied event (``visible_offset``, ``visible_time_ms``, ``offset``,
    ``record_type`` and the entity's state after it, no ``valid_to_*`` column yet) plus tombstone rows (``tombstone``
    true)."""
    # One window in apply order: the last row at each visible offset is the version (only the state after
    # the last record of a transaction is ever seen), and the next row's visible offset ends it.
    in_apply_order = _over(keyed, "visible_offset", "offset", "seq")
    versions = (states.selectExpr("*", f"lead(visible_offset) {in_apply_order} AS valid_to_offset",
                                  f"lead(visible_time_ms) {in_apply_order} AS valid_to_time_ms")
                .where(f"(valid_to_offset IS NULL OR valid_to_offset != visible_offset) "
                       f"AND NOT coalesce({_sql_name(tombstone)}, false)"))
    return as_versions(versions, keyed, value_columns)


def as_versions(versions: DataFrame, keyed: tuple[str, ...], value_columns: tuple[str, ...]) -> DataFrame:
    """Rows that are versions (the state after an event: its ``visible_offset``, ``visible_time_ms``, ``offset``,
    ``record_type``, the values, and the version's end ``valid_to_offset``/``valid_to_time_ms``) in the columns of
    a history table."""
    return versions.selectExpr(
        *map(_sql_name, (*keyed, *value_columns)),
        "visible_offset AS valid_from_offset", "valid_to_offset",
        "visible_time_ms AS valid_from_time_ms", "valid_to_time_ms",
        "offset AS cause_offset", "record_type AS cause_type")


def collapse(history: DataFrame, keyed: tuple[str, ...], value_columns: tuple[str, ...],
             restart: str | None = None) -> DataFrame:
    """Merge consecutive, touching versions whose values are equal; the merged version keeps the
    cause of its first part. ``restart``: a boolean column that always starts a new version."""
    by_start = _over(keyed, "valid_from_offset")
    values = f"struct({', '.join(map(_sql_name, value_columns))})"
    # the version starts where the one before it ends (false for the first): a run of touching versions is one life
    touches_before = f"coalesce(lag(valid_to_offset) {by_start} = valid_from_offset, false)"
    same = f"lag({values}) {by_start} = {values} AND {touches_before}"
    if restart is not None:
        same = f"{same} AND NOT {_sql_name(restart)}"
    # Every window below has the same spec, so Spark sorts the rows once: a merged version starts at a row
    # that does not continue its predecessor and ends where the last row of its run ends.
    # (``withColumns`` keeps each replaced column in its place without asking for the plan's columns: over Spark
    # Connect that would be a request to the server)
    starts = history.selectExpr("*", f"NOT coalesce({same}, false) AS _new")
    edges = starts.selectExpr("*", f"coalesce(lead(_new) {by_start}, true) AS _last").where("_new OR _last")
    merged = edges.withColumns({name: F.expr(f"CASE WHEN _last THEN {name} ELSE lead({name}) {by_start} END")
                                for name in _VERSION_END}).where("_new")
    return merged.drop("_new", "_last")
