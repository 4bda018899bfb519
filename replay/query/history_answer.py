"""The answer of `history`, from whichever path serves it (``replay.query.state_answer.light_path_serves``): the
versions of one partition (``light_state.light_history`` or ``state.history``) or of the image's parts asked
(``light_state.light_part_history`` or ``image.part_history``), as rows and as Kafka JSON, the same on both paths.

pyspark is imported only when Spark answers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from replay.query.rules import PARTITION_FIELDS, kafka_fields
from replay.query.state_answer import default_session, light_path_serves

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from replay.query.image_sections import PartQuestion

# A partition's version in JSON: its Kafka fields, then the interval and the record that began it.
PARTITION_VERSION_FIELDS = (*PARTITION_FIELDS, *kafka_fields(
    "valid_from_offset", "valid_to_offset", "valid_from_time_ms", "valid_to_time_ms", "cause_offset", "cause_type"))
PARTITION_VERSIONS = "partitions"  # the section of a partition's versions in a ``VersionsAnswer``


@dataclass(frozen=True)
class VersionsAnswer:
    """Versions, oldest first, by section (an image part's, or ``PARTITION_VERSIONS``): as rows (mappings or
    Spark rows) and as Kafka JSON items, one per version."""

    rows: Callable[[str], Iterable[Any]]
    json: Callable[[str], Iterator[str]]


def partition_history_answer(lake: str | None, topic: str, partition: int, *, cluster_id: str | None = None,
                             columns: tuple[str, ...] | None = None, master: str | None = None,
                             remote: str | None = None, spark: Callable[[], SparkSession] | None = None
                             ) -> VersionsAnswer:
    """Every version of partition ``topic``-``partition`` (every topic id that had the name), under
    ``PARTITION_VERSIONS``; ``columns``: the only columns the JVM-free path needs to read (default all; JSON
    needs all)."""
    if light_path_serves(lake, master, remote):
        from lakehouse.light_reader import resolve_lake_root
        from replay.query.light_state import kafka_json_items, light_history, table_rows

        found = light_history(resolve_lake_root(lake), topic, partition, cluster_id, columns)
        return VersionsAnswer(lambda _section: table_rows(found),
                              lambda _section: kafka_json_items(found, PARTITION_VERSION_FIELDS))
    from lakehouse.lake import Lake
    from replay.query.state import history, json_items

    versions = history((spark or default_session(master, remote))(), Lake(lake), topic, partition, cluster_id)
    return VersionsAnswer(lambda _section: versions.toLocalIterator(),
                          lambda _section: json_items(versions, PARTITION_VERSION_FIELDS))


def part_history_answer(lake: str | None, questions: list[PartQuestion], *, cluster_id: str | None = None,
                        master: str | None = None, remote: str | None = None,
                        spark: Callable[[], SparkSession] | None = None) -> VersionsAnswer:
    """Every version of the image's parts asked (``replay.query.image_sections.part_questions``), by section."""
    if light_path_serves(lake, master, remote):
        import pyarrow as pa

        from lakehouse.light_reader import resolve_lake_root
        from replay.query.image_sections import part_history_fields
        from replay.query.light_state import kafka_json_items, light_part_history, table_rows

        root = resolve_lake_root(lake)
        found = {q.section: light_part_history(root, q.section, q.where, cluster_id) for q in questions}
        return VersionsAnswer(lambda section: table_rows(found[section]), lambda section: kafka_json_items(
            found[section].append_column("part", pa.array([section] * found[section].num_rows, pa.string())),
            part_history_fields(section)))
    from lakehouse.lake import Lake
    from replay.query.image import part_history, part_history_json

    session, at = (spark or default_session(master, remote))(), Lake(lake)
    versions = {q.section: part_history(session, at, q.section, q.where, cluster_id) for q in questions}
    return VersionsAnswer(lambda section: versions[section].toLocalIterator(),
                          lambda section: part_history_json(section, versions[section]))


__all__ = ["PARTITION_VERSIONS", "PARTITION_VERSION_FIELDS", "VersionsAnswer", "part_history_answer",
           "partition_history_answer"]
