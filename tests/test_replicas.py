"""replay/fold/replicas.py: per-replica history (a repeated replica id is one replica; the replica-broker range join
does not depend on its offset buckets), on the one Spark replay compared with the reference fold (session
fixtures ``compared`` and ``repeated`` of tests/conftest.py)."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import SparkSession

from lakehouse.log_rows import entries_frame
from replay.fold.engine import replay
from tests.table_rows import sorted_rows

pytestmark = pytest.mark.spark


def test_a_repeated_replica_id_is_one_replica(repeated: dict[str, Any]) -> None:
    from tests import bad_inputs_support as bad

    assert bad.replica_versions(repeated["spark"]["replica_history"]) == bad.REPEATED_REPLICAS


def test_replica_history_does_not_depend_on_the_join_buckets(spark: SparkSession, compared: dict[str, Any],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The replica-broker range join runs on offset buckets (about 16 over the log, at least 4096 offsets
    each, so these small logs use one). Without the minimum they are split into ~16 buckets that versions
    and broker intervals span, and the result must still be exactly the reference fold's replica_history."""
    from replay.fold import replicas

    monkeypatch.setattr(replicas, "MIN_BUCKET", 1)
    clusters = ["sim-2-lost-last-isr-unclean", "sim-4-reassignment-under-failure", "sim-8-random"]
    frames = [entries_frame(spark, compared["logs"][c], c) for c in clusters]
    log = frames[0]
    for frame in frames[1:]:
        log = log.unionByName(frame)
    got = [row.asDict(recursive=True) for row in replay(log).tables["replica_history"].collect()]
    want = [r for r in compared["expected"]["replica_history"] if r["cluster_id"] in clusters]
    assert len(want) > 500 and len(got) == len(want)
    assert sorted_rows(got) == sorted_rows(want)
