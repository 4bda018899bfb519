"""A partition's edges: where a replica's life can start or end.

A life of a partition is a run of touching versions (its creation to its deletion). A replica's life can start as its
partition's, at a version that starts a life (no version touches it before), and a replica's membership can end
where the partition's replica set differs from the version before's (the record that ended it). The replica states
(``replay.audit.state_machines``) read these edges, few next to all the versions every replica of the partition would
otherwise read. One pass per partition in the JVM (``replay/jvm``: ``kraftreplay.core.PartitionEdges``): in a full
replay beside the replicas' cut, which reads each partition's versions anyway (``replay.fold.replicas``); elsewhere
from the partition versions (``partition_edges``).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakehouse.tables import PARTITION_KEY
from replay.core.jvm_functions import INTERVAL, JvmFunction, array_of_structs, jvm_call, typed_fields

# What the pass reads of a partition version, and the edge it gives: the version's interval and whether it starts a
# life of the partition.
EDGE_INPUT = (*INTERVAL, ("replicas", "array<int>"))
PARTITION_EDGE = (*INTERVAL, ("starts_life", "boolean"))
PARTITION_EDGES = JvmFunction("kraft_partition_edges", "kraftreplay.core.PartitionEdges",
                              array_of_structs(PARTITION_EDGE))
SPANS = "_spans"  # the column of a partition's (or its replica's) edges, in offset order


def partition_edges(partition_history: DataFrame) -> DataFrame:
    """Each partition's edges (``PARTITION_KEY``, ``_spans``: an array of ``PARTITION_EDGE`` in offset order), from
    rows of ``partition_history``."""
    grouped = partition_history.groupBy(*PARTITION_KEY).agg(
        F.collect_list(F.struct(*typed_fields(EDGE_INPUT))).alias("_versions"))
    return grouped.select(*PARTITION_KEY, jvm_call(
        partition_history.sparkSession, PARTITION_EDGES, F.col("_versions")).alias(SPANS))
