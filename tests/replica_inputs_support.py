"""The rows the replicas' cut reads, as DDL schemas of small hand-made DataFrames: a partition's versions (the columns
of ``partition_history`` it reads) and a broker's (``broker_history``'s). Shared by tests/test_replicas.py and
tests/test_partition_edges.py."""

from __future__ import annotations

PARTITIONS_SCHEMA = ("cluster_id STRING, topic_id STRING, topic_name STRING, partition_id INT, replicas ARRAY<INT>, "
                     "leader INT, isr ARRAY<INT>, eligible_leader_replicas ARRAY<INT>, adding_replicas ARRAY<INT>, "
                     "removing_replicas ARRAY<INT>, directories ARRAY<STRING>, valid_from_offset BIGINT, "
                     "valid_to_offset BIGINT, valid_from_time_ms BIGINT, valid_to_time_ms BIGINT, cause_offset BIGINT, "
                     "cause_type STRING")
BROKERS_SCHEMA = ("cluster_id STRING, broker_id INT, fenced BOOLEAN, in_controlled_shutdown BOOLEAN, "
                  "valid_from_offset BIGINT, valid_to_offset BIGINT, valid_from_time_ms BIGINT, "
                  "valid_to_time_ms BIGINT, cause_offset BIGINT, cause_type STRING")
