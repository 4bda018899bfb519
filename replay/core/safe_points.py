"""Each replayed cluster's safe point C (``replay.fold.incremental``) beside the rows of its cluster, as a column.

An increment compares many tables' offsets with their cluster's C. Joining a one-row-per-cluster DataFrame for
that costs a broadcast, and every broadcast is a Spark job of its own: 126 of the 346 jobs of a 1 M-record
increment were such broadcasts. The clusters and their C are known on the driver (a handful), so C is a
literal ``CASE cluster_id WHEN … THEN C END`` instead: no job, the same rows and columns as the join.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

SAFE_POINT = "_c"


@dataclass(frozen=True)
class SafePoints:
    """cluster id → C, for the clusters an increment replays."""

    offsets: Mapping[str, int]

    def column(self) -> Column:
        """The row's cluster's C; null for a cluster not replayed."""
        if not self.offsets:
            return F.lit(None).cast("long")
        cluster = F.col("cluster_id")
        clusters = sorted(self.offsets.items())
        first, offset = clusters[0]
        safe_point = F.when(cluster == F.lit(first), F.lit(offset).cast("long"))
        for name, offset in clusters[1:]:
            safe_point = safe_point.when(cluster == F.lit(name), F.lit(offset).cast("long"))
        return safe_point

    def join(self, df: DataFrame, how: Literal["inner", "left"] = "inner") -> DataFrame:
        """``df`` with ``_c`` after its columns, the rows ``df.join(cluster_id, _c of these clusters, ["cluster_id"],
        how)`` gives: ``inner`` keeps only the rows of replayed clusters. (Its columns are not asked of Spark: on
        Spark Connect that is a request, and an increment makes some thirty of these joins.)"""
        rows = df.select("*", self.column().alias(SAFE_POINT))
        return rows.where(F.col(SAFE_POINT).isNotNull()) if how == "inner" else rows


__all__ = ["SAFE_POINT", "SafePoints"]
