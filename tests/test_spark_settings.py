"""A checkpoint the derivation reuses keeps its rows' partitioning and order (``lakehouse.spark_settings``)."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from lakehouse.spark_settings import ADAPTIVE_EXECUTION, kept_checkpoint, keyed_checkpoint, sort_aggregated

KEY = ("topic_id", "partition_id")


def _versions(spark: SparkSession) -> DataFrame:
    """12 versions of 4 partitions, offsets out of order."""
    rows = [(f"t{p % 2}", p // 2, offset, p * 100 + offset) for p in range(4) for offset in (30, 10, 20)]
    return spark.createDataFrame(rows, "topic_id string, partition_id int, valid_from_offset long, leader long")


def _previous_leaders(df: DataFrame) -> DataFrame:
    by_partition = Window.partitionBy(*KEY).orderBy("valid_from_offset")
    return df.withColumn("previous_leader", F.lag("leader").over(by_partition))


def _plan(df: DataFrame) -> str:
    df.write.format("noop").mode("overwrite").save()  # an adaptive plan is final once run
    return df._jdf.queryExecution().executedPlan().toString()


def test_a_keyed_checkpoint_is_windowed_and_aggregated_by_its_key_without_a_shuffle_or_a_sort(
        spark: SparkSession) -> None:
    assert spark.conf.get(ADAPTIVE_EXECUTION) == "true"
    kept = keyed_checkpoint(_versions(spark), KEY, ("valid_from_offset",))
    assert spark.conf.get(ADAPTIVE_EXECUTION) == "true"  # off only while the checkpoint's plan ran
    windowed = _previous_leaders(kept)
    plan = _plan(windowed)
    assert "Exchange" not in plan and "Sort [" not in plan, plan
    rows = windowed.where("topic_id = 't1' AND partition_id = 1").orderBy("valid_from_offset").collect()
    assert [(r.valid_from_offset, r.leader, r.previous_leader) for r in rows] == [
        (10, 310, None), (20, 320, 310), (30, 330, 320)]
    # an aggregate by the key and more columns needs no shuffle either
    counted = kept.groupBy(*KEY, "leader").count()
    assert "Exchange" not in _plan(counted)
    assert counted.count() == 12


def test_a_checkpoint_under_adaptive_execution_forgets_its_partitioning(spark: SparkSession) -> None:
    """Why ``kept_checkpoint`` exists (Spark 4.0): the same rows checkpointed plainly are shuffled and sorted
    again by the window; kept, they are not, and the window's rows are the same."""
    def distributed() -> DataFrame:  # a new DataFrame each time: a planned one keeps the plan it was given
        return _versions(spark).repartition(*KEY).sortWithinPartitions(*KEY, "valid_from_offset")

    plain = _previous_leaders(distributed().localCheckpoint(eager=True))
    kept = _previous_leaders(kept_checkpoint(distributed()))
    assert "Exchange" in _plan(plain)
    assert "Exchange" not in _plan(kept)
    assert sorted(plain.collect()) == sorted(kept.collect())


def _joined_with_itself(kept: DataFrame) -> DataFrame:
    """Each partition's first and last leader, from two aggregates of ``kept`` joined by the key: Spark renames the
    columns of one side (the same rows twice)."""
    first = kept.groupBy(*KEY).agg(F.min("leader").alias("first_leader"))
    last = kept.groupBy(*KEY).agg(F.max("leader").alias("last_leader"))
    return first.join(last, list(KEY))


def test_a_checkpoint_joined_with_itself_keeps_its_partitioning_where_its_columns_are_unqualified(
        spark: SparkSession) -> None:
    """Why ``replay.fold.engine`` names no ``alias`` on the way to the fold's checkpoint: where the rows reach the
    checkpoint under another qualifier than the one their partitioning was planned with, the renamed side of a join
    with itself forgets that partitioning (Spark 4.0 renames it by exact column) and is shuffled and sorted again."""
    def distributed() -> DataFrame:  # planned under the qualifier "c"
        rows = _versions(spark).alias("c").select("c.*")
        return rows.repartition(*KEY).sortWithinPartitions(*KEY, "valid_from_offset")

    requalified = _joined_with_itself(kept_checkpoint(distributed().alias("p").select("p.*")))
    unqualified = _joined_with_itself(kept_checkpoint(distributed()))
    assert "Exchange" in _plan(requalified)
    assert "Exchange" not in _plan(unqualified)
    rows = sorted(unqualified.collect())
    assert rows == sorted(requalified.collect())
    assert [(r.topic_id, r.partition_id, r.first_leader, r.last_leader) for r in rows] == [
        ("t0", 0, 10, 30), ("t0", 1, 210, 230), ("t1", 0, 110, 130), ("t1", 1, 310, 330)]


def test_rows_sorted_by_their_key_are_collected_by_a_sort_aggregate_in_the_block(spark: SparkSession) -> None:
    """``sort_aggregated``: a ``collect_list`` of rows distributed and sorted by its key is a sort aggregate, which
    sorts nothing more (by hashing, Spark sorts a task's rows again past 128 groups); outside the block, hashing."""
    def leaders() -> DataFrame:  # a new DataFrame each time: a planned one keeps the plan it was given
        rows = _versions(spark).repartition(*KEY).sortWithinPartitions(*KEY, "valid_from_offset")
        return rows.groupBy(*KEY).agg(F.collect_list("leader").alias("leaders"))

    with sort_aggregated(spark):
        sorted_plan = _plan(grouped := leaders())
    assert "SortAggregate" in sorted_plan and "ObjectHashAggregate" not in sorted_plan, sorted_plan
    assert sorted_plan.count("Sort [") == 1, sorted_plan  # the rows' own sort, none added
    assert "ObjectHashAggregate" in _plan(leaders())
    assert sorted((r.topic_id, r.partition_id, r.leaders) for r in grouped.collect()) == [
        ("t0", 0, [10, 20, 30]), ("t0", 1, [210, 220, 230]), ("t1", 0, [110, 120, 130]), ("t1", 1, [310, 320, 330])]
