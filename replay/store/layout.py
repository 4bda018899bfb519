"""The file layout of the replay's tables: deterministic, sorted, written in parallel.

Every table is sorted by its key and ``valid_from_offset`` (``AS_OF_SORTED`` first by ``lasted``); the same
input gives byte-identical Parquet files whatever ``spark.sql.shuffle.partitions`` is, because which rows go to
which writing task and where a file ends depend only on the rows:

- the large tables keyed by topic (``RANGED_TABLES``) are cut into contiguous ranges of topic ids (by the
  id's first character: Kafka's topic ids are random base64url UUIDs, so the ranges are even), each sorted and
  written by its own task; a file therefore covers a narrow band of topic ids, so a read by topic id with Delta's
  data skipping on (a replay's ``file_statistics``) reads only that band's files. How many ranges depends on the
  records replayed (``topic_ranges``: one per ``RECORDS_PER_TOPIC_RANGE``, at most ``TOPIC_RANGES``): a small
  replay or increment writes each table in one task per split, since sixteen tiny files cost its writer more
  than they save a reader;
- the other tables go to one task (``repartition(1)``): they are small;
- ``partition_history``, which every whole-cluster question reads through the as-of rule (``state``,
  ``state_at().partitions``, the JVM-free path), sorts its settled versions by how long they lasted
  (``lasted``), then by ``valid_from_offset`` (its open ones by ``valid_from_offset``): the versions of one
  class that hold an offset N began within twice that class's length before N, so they sit in a few pages of
  each file, and Parquet's page statistics (Spark's column index, DataFusion's page index) let the reader skip
  the rest. Cut into topic ranges, its sort's first key is that order as one long (``as_of_prefix``);
- the rows a later replay may still change (``mutable``: a history table's open versions, ``valid_to_offset``
  null; an election whose lost leader is not explained yet) go to files of their own (split column ``open``: a
  directory ``open=true`` or ``open=false``), so an incremental replay replaces only those files and adds the rows
  it settled: the other files never change again. ``partition_history`` cut into topic ranges keeps them apart by
  writing task alone (its open versions are found by their null ``valid_to_offset``, ``Lake.files_with_nulls``).

No global ``orderBy``: its range partitioning samples the input first, which runs the whole (not
checkpointed) plan twice.
"""

from __future__ import annotations

import functools
import struct

import mmh3
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakehouse.tables import (
    ELECTIONS,
    LEADERLESS_PERIODS,
    PARTITION_HISTORY,
    PARTITION_STATE_HISTORY,
    REPLAY_SCHEMAS,
    REPLICA_HISTORY,
    REPLICA_STATE_HISTORY,
)
from replay.audit.elections import UNEXPLAINED_LOSS

OPEN = "open"
TOPIC_RANGES = 8
RECORDS_PER_TOPIC_RANGE = 100_000
RANGED_TABLES = (PARTITION_HISTORY, REPLICA_HISTORY, REPLICA_STATE_HISTORY, PARTITION_STATE_HISTORY,
                 ELECTIONS)
# The base64url alphabet in byte order (the order Spark and Parquet sort strings in).
_ALPHABET = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"


# The tables sorted for the as-of rule rather than by key (10 M records' partition_history rewritten both ways: a
# whole-cluster as-of read 0.29 s instead of 0.53 s in Spark, 0.17 s instead of 1.2 s in DataFusion; one
# partition's history 0.33 s instead of 0.28 s; the files 15 % larger).
AS_OF_SORTED = (PARTITION_HISTORY,)

# ``as_of_prefix``: the bits of ``valid_from_offset`` below the length class (an offset from 2**40 on shares the largest
# prefix: such rows are ordered by the sort's later keys)
PREFIX_OFFSET_BITS = 40

# Spark's ``hash`` of a column: Murmur3_x86_32 of the value with this seed (``Murmur3Hash``), of an int its four
# little-endian bytes.
SPARK_HASH_SEED = 42


@functools.cache
def task_keys(tasks: int) -> tuple[int, ...]:
    """For each task i, an int whose Spark hash lands in partition i of ``repartition(tasks, key)``: Spark's
    hash partitioning is ``pmod(murmur3(key, 42), n)``, exactly ``pmod(hash(key), n)``, so a range goes to
    the task of its number and not to a colliding one. Computed here with the same hash (``mmh3``), so no Spark
    query is asked for it (``tests/test_layout.py`` checks the keys against Spark's own partitioning)."""
    keys: dict[int, int] = {}
    key = 0
    while len(keys) < tasks:
        keys.setdefault(mmh3.hash(struct.pack("<i", key), SPARK_HASH_SEED) % tasks, key)
        key += 1
    return tuple(keys[task] for task in range(tasks))


def topic_ranges(records: int) -> int:
    """The topic ranges a replay of ``records`` (a full replay's, or an increment's new records) cuts its large
    tables into: one per ``RECORDS_PER_TOPIC_RANGE``, at least one, at most ``TOPIC_RANGES``. A function of the
    input only, so the files stay the same whatever the session's partitions."""
    return max(1, min(TOPIC_RANGES, -(-records // RECORDS_PER_TOPIC_RANGE)))


def topic_ranges_of(name: str, records: int) -> int:
    """The topic ranges table ``name`` of a replay of ``records`` is cut into (``topic_ranges`` for a large table of
    ``RANGED_TABLES``, else one): per split value, a writing task and a file each at least."""
    return topic_ranges(records) if name in RANGED_TABLES else 1


def _topic_range(topic_id: Column, ranges: int) -> Column:
    """0 .. ranges - 1, in key order, from the id's first character (anything else: range 0)."""
    rank = F.greatest(F.position(F.substring(topic_id, 1, 1), F.lit(_ALPHABET)) - 1, F.lit(0))
    return F.least((rank * ranges / len(_ALPHABET)).cast("int"), F.lit(ranges - 1))


def mutable_where(name: str, columns: list[str] | None = None) -> str | None:
    """The rows of table ``name`` that a later replay may still change, as SQL (None: the table has no such
    split): they are written to files of their own, and a replay replaces those files (``Lake.replace_files``).
    ``columns``: the rows' columns, by default the table's in the registry (not asked of a DataFrame: on Spark
    Connect that is a request).

    A version is open until a later record ends it. An election's lost-leader cause and the leaderless period
    it starts wait for the broker's next state change (``replay.audit.elections``); for a period the test is a
    superset (its row does not keep the replicas): a period whose cause stays unknown just stays apart."""
    if name == ELECTIONS:
        return f"coalesce({UNEXPLAINED_LOSS}, false)"
    if columns is None:
        columns = REPLAY_SCHEMAS[name].names
    if "valid_to_offset" not in columns:
        return None
    if name == LEADERLESS_PERIODS:
        return "valid_to_offset IS NULL OR coalesce(cause IS NULL AND previous_leader >= 0, false)"
    return "valid_to_offset IS NULL"


def lasted() -> Column:
    """A settled version's length class: the bit length of ``valid_to_offset - valid_from_offset`` (exact
    integers, no floating point: the layout must not depend on the machine); null for an open version."""
    return F.length(F.bin(F.col("valid_to_offset") - F.col("valid_from_offset")))


def as_of_prefix() -> Column:
    """``AS_OF_SORTED``'s order (``lasted``, nulls first, then ``valid_from_offset``) as one long, for a sort's first
    key. Spark compares two rows by their first key's prefix before it compares the rows: with this key nearly every
    comparison of a large sort is one of two longs, where by ``lasted`` (a few dozen values) nearly every one read
    both rows (BENCHMARKS.md, issue 42). Equal prefixes (offsets from ``2**PREFIX_OFFSET_BITS`` on) are ordered by
    the keys after it."""
    offset = F.least(F.col("valid_from_offset"), F.lit((1 << PREFIX_OFFSET_BITS) - 1))
    length_class = lasted()
    return F.when(length_class.isNull(), offset).otherwise(
        F.shiftleft(length_class.cast("long") + 1, PREFIX_OFFSET_BITS) + offset)


def mutable(name: str, columns: list[str] | None = None) -> Column | None:
    """``mutable_where`` as a Column."""
    where = mutable_where(name, columns)
    return F.expr(where) if where is not None else None


def sorted_layout(df: DataFrame, name: str, order: tuple[str, ...], records: int) -> tuple[DataFrame, str | None]:
    """``df`` distributed and sorted for writing table ``name`` of a replay of ``records`` (``topic_ranges``), and
    its split column (None: no split)."""
    rows = mutable(name)
    split = OPEN if rows is not None else None
    if rows is not None:
        df = df.withColumn(OPEN, rows)
    columns: tuple[str | Column, ...] = order
    if name in AS_OF_SORTED:
        columns = (lasted(), "valid_from_offset", *order)
    sort = (OPEN, *columns) if split is not None else columns
    ranges = topic_ranges_of(name, records)
    tasks = ranges * 2 if split is not None else ranges
    if tasks == 1:
        return df.repartition(1).sortWithinPartitions(*sort), split
    # open and settled rows never share a writing task, so never a file, whatever the engine (delta-spark writes
    # no directory per split value)
    index = _topic_range(F.col("topic_id"), ranges) if ranges > 1 else F.lit(0)
    if split is not None:
        index = index + F.when(F.col(OPEN), F.lit(ranges)).otherwise(F.lit(0))
    keys = F.array(*[F.lit(key) for key in task_keys(tasks)])
    distributed = df.repartition(tasks, F.element_at(keys, index + 1))
    if name in AS_OF_SORTED and ranges > 1:
        # Each task's rows are all open or all settled (its index), so its files are too, without a split directory:
        # a split write sorts each task's rows by the split column first, which would leave the sort a prefix of
        # one bit. Written by Spark's executors only (a table cut into topic ranges is never written by the driver).
        return distributed.sortWithinPartitions(as_of_prefix(), *columns).drop(OPEN), None
    return distributed.sortWithinPartitions(*sort), split
