"""One broker timeline: each broker's intervals of one state, covering offsets 0 to infinity.

Everything that asks what a broker was at an offset reads it here: the replica versions (``replay.fold.replicas``), the
election audit (``replay.audit.elections``), the state machines (``replay.audit.state_machines``), the health report
(``replay.audit.health``) and the what-if (``replay.audit.whatif``). The state is a ``BrokerRegistration`` read as
Kafka's controller reads it (``ClusterControlManager``): no registration at all, ``fenced()``,
``inControlledShutdown()``, or neither — ``isActive``, the only state a leader may be elected on.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from replay.core.history import collapse

# The timeline's states, one vocabulary (the election audit stores them as they are in ``lost_leader_cause``;
# the health report shows them through its one mapping, ``replay.audit.health.BROKER_STATE_LABELS``).
ACTIVE = "active"  # ClusterControlManager.isActive: registered, neither fenced() nor inControlledShutdown()
CONTROLLED_SHUTDOWN = "controlled-shutdown"  # BrokerRegistration.inControlledShutdown(), not fenced()
FENCED = "fenced"  # BrokerRegistration.fenced()
UNREGISTERED = "unregistered"  # no BrokerRegistration: before the first RegisterBrokerRecord, or unregistered
BROKER_STATES = (ACTIVE, CONTROLLED_SHUTDOWN, FENCED, UNREGISTERED)
UNFENCED_STATES = (ACTIVE, CONTROLLED_SHUTDOWN)  # ClusterControlManager.isUnfenced

TIMELINE_KEY = ("cluster_id", "broker_id")
_INFINITY = 1 << 62


def open_end(column: str | Column) -> Column:
    """An interval's end with null (still open) read as infinity, for overlap and containment tests."""
    return F.coalesce(F.col(column) if isinstance(column, str) else column, F.lit(_INFINITY))


def broker_state(fenced: Column, in_controlled_shutdown: Column) -> Column:
    """The state of a registered broker (a ``broker_history`` version): fenced before in controlled shutdown,
    as a broker shutting down is fenced at the end of it (an absent ``inControlledShutdown`` is false)."""
    return (F.when(fenced, F.lit(FENCED))
            .when(F.coalesce(in_controlled_shutdown, F.lit(False)), F.lit(CONTROLLED_SHUTDOWN))
            .otherwise(F.lit(ACTIVE)))


def is_active(state: Column) -> Column:
    """``ClusterControlManager.isActive``: not fenced, not in controlled shutdown, registered."""
    return state == ACTIVE


def is_unfenced(state: Column) -> Column:
    """``ClusterControlManager.isUnfenced``: registered and not fenced (in controlled shutdown or not)."""
    return state.isin(*UNFENCED_STATES)


def broker_fenced(state: Column) -> Column:
    """``BrokerRegistration.fenced()``, null without a registration: ``replica_history.broker_fenced``."""
    return F.when(state != UNREGISTERED, state == FENCED)


def _with_causes(broker_history: DataFrame) -> DataFrame:
    """The history with ``cause_offset``/``cause_type``, null where it has none (a hand-made version list)."""
    for column, kind in (("cause_offset", "long"), ("cause_type", "string")):
        if column not in broker_history.columns:
            broker_history = broker_history.withColumn(column, F.lit(None).cast(kind))
    return broker_history


def broker_timeline(broker_history: DataFrame, before_registration: bool = True) -> DataFrame:
    """Per broker (``cluster_id``, ``broker_id``), its consecutive intervals of one ``state``, with the record that
    started each (``cause_offset``, ``cause_type``): the registered versions of ``broker_history``, the gaps
    after an UnregisterBrokerRecord (``UNREGISTERED`` until the next registration), and, unless
    ``before_registration`` is false, the offsets before its first registration (``UNREGISTERED``, no cause)."""
    by_broker = Window.partitionBy(*TIMELINE_KEY).orderBy("valid_from_offset")
    registered = _with_causes(broker_history).select(
        *TIMELINE_KEY, broker_state(F.col("fenced"), F.col("in_controlled_shutdown")).alias("state"),
        "valid_from_offset", "valid_to_offset", "valid_from_time_ms", "valid_to_time_ms", "cause_offset",
        "cause_type")
    unregistered = (registered.withColumn("next_from", F.lead("valid_from_offset").over(by_broker))
                    .withColumn("next_from_time", F.lead("valid_from_time_ms").over(by_broker))
                    .where(F.col("valid_to_offset").isNotNull()
                           & (F.col("next_from").isNull() | (F.col("next_from") > F.col("valid_to_offset"))))
                    .select(*TIMELINE_KEY, F.lit(UNREGISTERED).alias("state"),
                            F.col("valid_to_offset").alias("valid_from_offset"),
                            F.col("next_from").alias("valid_to_offset"),
                            F.col("valid_to_time_ms").alias("valid_from_time_ms"),
                            F.col("next_from_time").alias("valid_to_time_ms"),
                            F.col("valid_to_offset").alias("cause_offset"),
                            F.lit("UnregisterBrokerRecord").alias("cause_type")))
    timeline = registered.unionByName(unregistered)
    if before_registration:
        never_yet = (registered.withColumn("rank", F.row_number().over(by_broker))
                     .where((F.col("rank") == 1) & (F.col("valid_from_offset") > 0))
                     .select(*TIMELINE_KEY, F.lit(UNREGISTERED).alias("state"),
                             F.lit(0).cast("long").alias("valid_from_offset"),
                             F.col("valid_from_offset").alias("valid_to_offset"),
                             F.lit(None).cast("long").alias("valid_from_time_ms"),
                             F.col("valid_from_time_ms").alias("valid_to_time_ms"),
                             F.lit(None).cast("long").alias("cause_offset"),
                             F.lit(None).cast("string").alias("cause_type")))
        timeline = timeline.unionByName(never_yet)
    # Versions that differ in anything but the state (a re-registration, new log dirs) are one interval.
    return collapse(timeline, TIMELINE_KEY, ("state",))
