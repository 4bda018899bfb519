"""A checkpoint the derivation reuses keeps its rows' partitioning and order (``lakehouse.spark_settings``)."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from lakehouse.spark_settings import ADAPTIVE_EXECUTION, kept_checkpoint, keyed_checkpoint

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
