"""The derived tables (state machines, election audit) after an increment: only the partitions the new records
affect recomputed from their stored open rows (``replay.store.derived``), only the files of mutable rows replaced."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

from pyspark.sql import DataFrame, SparkSession

from lakehouse.concurrent_jobs import run_concurrently
from lakehouse.lake import Lake
from lakehouse.tables import BROKER_HISTORY, CONFIG_HISTORY, DERIVED_ORDER, DERIVED_TABLES
from replay.audit.effective_configs import configs_in_force
from replay.core.safe_points import SafePoints
from replay.store.derived import affected_partitions, refreshed_rows, resumed_partitions
from replay.store.layout import OPEN
from replay.store.table_writes import replace_open_versions, replaceable_rows


def refresh_derived(spark: SparkSession, lake: Lake, changed: Mapping[str, DataFrame],
                    history: Mapping[str, DataFrame], checkpoints: dict[str, int], records: int) -> dict[str, int]:
    """The derived tables after an increment of ``records`` new records: only the affected partitions recomputed
    (``replay.store.derived``), only the files of mutable rows replaced; name → version written. ``changed``: the
    rows the increment writes to each of ``GROWING_HISTORY`` (those of the files it replaces, with the new ones:
    every version live after C); ``history``: every history table after the increment; ``checkpoints``: cluster →
    C of the clusters with new records. The derived tables are the versions the last checkpoint wrote
    (``replay.store.increment_plan.incremental_plan`` checked). It reads nothing the increment writes, so it runs
    while the history tables are written."""
    cps = SafePoints(checkpoints)
    current = {name: int(lake.delta_table(name).version()) for name in DERIVED_TABLES}
    split = {name: lake.split_files(name, OPEN, current[name]) for name in DERIVED_TABLES}
    # a table not written split (by delta-spark, before the replay's commits went through delta-rs): every file is
    # replaced, settled rows too
    files = {name: lake.file_paths(name, current[name]) if paths is None else paths for name, paths in split.items()}
    stored = {name: replaceable_rows(spark, lake, name, files[name]) for name in DERIVED_TABLES}
    brokers = history[BROKER_HISTORY]
    affected = affected_partitions(dict(changed), brokers, stored, cps).localCheckpoint(eager=True)
    configs = configs_in_force(spark, lake, history[CONFIG_HISTORY])
    recomputed = resumed_partitions(dict(changed), brokers, stored, affected, cps, configs)
    return run_concurrently(spark, {name: partial(
        replace_open_versions, lake, refreshed_rows(name, stored[name], recomputed[name], affected, cps,
                                                    lake.columns(name)), name,
        DERIVED_ORDER[name], records, files[name], current[name]) for name in DERIVED_TABLES})


__all__ = ["refresh_derived"]
