"""``state`` and a partition's ``history`` without a JVM: the same Delta tables, the same rules, byte-identical
answers.

A fresh ``kraft-replay state`` spent most of its time starting Spark and loading Delta snapshots in a cold JVM
(issue 20). This reads the history tables through ``lakehouse.light_reader`` (delta-rs, DataFusion) with the one
"as of offset N" rule of ``replay.query.rules.as_of_sql`` pushed down (a time or a batch resolved to its offset
by ``replay.query.rules.resolved_offset``, as Spark's path does), sorts each section as Spark's ``orderBy``
does (nulls first, strings by their UTF-8 bytes, arrays and structs element by element) and writes Kafka JSON as
Spark's ``to_json`` does (Jackson: compact, nulls kept, doubles as Java prints them). Rows are plain mappings, fed
to the same formatters as the Spark path's rows. ``tests/test_state_light_path.py`` proves the two equal.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakehouse.light_reader import LightReader
from lakehouse.tables import (
    BROKER_HISTORY,
    IMAGE_SCHEMAS,
    METADATA_LOG,
    PARTITION_HISTORY,
    REPLAY_COVERAGE,
    REPLAY_SCHEMAS,
    REPLICA_HISTORY,
    TOPIC_HISTORY,
)
from records.vocabulary import column_name
from replay.core.coverage import ClusterCoverage
from replay.query.image_sections import PARTS, part_history_order
from replay.query.rules import (
    BROKER_ORDER,
    NESTED,
    PARTITION_ORDER,
    TOPIC_ORDER,
    VERSION_ORDER,
    as_of_sql,
    cluster_sql,
    cluster_table,
    missing_table,
    narrowed_sql,
    pick_cluster,
    resolved_offset,
)

# The cluster sections: their history table and order (the image's parts bring theirs: replay.query.image_sections).
CLUSTER_TABLES = {"brokers": (BROKER_HISTORY, BROKER_ORDER), "topics": (TOPIC_HISTORY, TOPIC_ORDER),
                  "partitions": (PARTITION_HISTORY, PARTITION_ORDER)}
STATE_TABLES = (BROKER_HISTORY, TOPIC_HISTORY, PARTITION_HISTORY, REPLICA_HISTORY)


@dataclass(frozen=True)
class LightState:
    """The sections asked, as of ``offset``: each one's rows, sorted, and the log's record at the offset."""

    cluster_id: str
    offset: int
    sections: dict[str, pa.Table]
    has_log: bool
    record: dict[str, Any] | None

    def rows(self, section: str) -> list[ColumnRow]:
        """A section's rows as mappings (structs as dicts, arrays as lists), sorted."""
        return table_rows(self.sections[section])


class _PythonColumns(dict[str, list[Any]]):
    """A table's columns as Python lists, each converted on its first use."""

    def __init__(self, table: pa.Table) -> None:
        super().__init__()
        self.table = table

    def __missing__(self, name: str) -> list[Any]:
        if name not in self.table.column_names:
            raise KeyError(name)
        values = self[name] = self.table.column(name).to_pylist()
        return values


class ColumnRow(Mapping[str, Any]):
    """One row of a section, its columns made Python values on first use: a whole cluster's partitions are
    hundreds of thousands of rows of which a table shows a few columns (``to_pylist`` of all took seconds)."""

    __slots__ = ("_columns", "_index")

    def __init__(self, columns: _PythonColumns, index: int) -> None:
        self._columns = columns
        self._index = index

    def __getitem__(self, name: str) -> Any:
        return self._columns[name][self._index]

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns.table.column_names)

    def __len__(self) -> int:
        return self._columns.table.num_columns


def _clusters(reader: LightReader) -> list[str]:
    name = cluster_table(reader.exists)
    if not reader.exists(name):
        raise missing_table(reader.root, name)
    found = reader.rows(name, "cluster_id IS NOT NULL", ("cluster_id",), distinct=True)
    return sorted(found.column("cluster_id").to_pylist())


def _first_value(table: pa.Table) -> Any:
    return table.column(0)[0].as_py() if table.num_rows else None


def _no_rows(table: str) -> pa.Table:
    """A part's table the lake does not hold (replayed before the part existed): the part reads empty."""
    return (REPLAY_SCHEMAS.get(table) or IMAGE_SCHEMAS[table]).empty_table()


class _LightLog:
    """``metadata_log`` of one cluster, asked through delta-rs (``replay.query.rules.StoredLog``)."""

    def __init__(self, reader: LightReader, cluster_id: str) -> None:
        self.reader, self.cluster_id = reader, cluster_id

    def _rows(self, where: str, expression: str) -> pa.Table:
        if not self.reader.exists(METADATA_LOG):
            raise missing_table(self.reader.root, METADATA_LOG)
        return self.reader.rows(METADATA_LOG, f"{cluster_sql(self.cluster_id)} AND {where}", (expression,))

    def _first(self, where: str, expression: str) -> Any:
        return _first_value(self._rows(where, expression))

    def last_offset_until(self, millis: int) -> int | None:
        return self._first(f"append_time_ms <= {int(millis)}", 'max("offset")')

    def first_append_time(self) -> int | None:
        return self._first("TRUE", "min(append_time_ms)")

    def batch_of(self, offset: int) -> tuple[bool, int | None]:
        found = self._rows(f'"offset" = {int(offset)}', "batch_base_offset")
        return found.num_rows > 0, _first_value(found)

    def last_offset_of_batch(self, base: int, offset: int) -> int | None:
        return self._first(f'batch_base_offset = {int(base)} AND "offset" >= {int(offset)}', 'max("offset")')

    def coverage(self) -> ClusterCoverage | None:
        if not self.reader.exists(REPLAY_COVERAGE):
            return None
        rows = self.reader.rows(REPLAY_COVERAGE, cluster_sql(self.cluster_id), None).to_pylist()
        return ClusterCoverage.from_row(rows[0]) if rows else None


def light_state(root: str, offset: int | None, sections: tuple[str, ...], cluster_id: str | None = None,
                topic: str | None = None, partition: int | None = None,
                columns: Mapping[str, tuple[str, ...]] | None = None, time: str | None = None,
                batch_aligned: bool = False) -> LightState:
    """The cluster as of ``offset`` (or ``time``, ``batch_aligned``: ``replay.query.rules.resolved_offset``) in
    the lake at ``root`` (a local directory): the ``sections`` asked (``brokers``, ``topics``, ``partitions`` and
    the image's parts), narrowed to ``topic``/``partition`` as ``state`` narrows them; errors are the Spark
    path's (``replay.query.state``). ``columns``: the only columns a section's answer needs (default all); fewer
    columns, fewer bytes decoded."""
    reader = LightReader(root)
    cluster = pick_cluster(root, _clusters(reader), cluster_id)
    offset = resolved_offset(_LightLog(reader, cluster), cluster, offset, time, batch_aligned)
    for table in STATE_TABLES:  # what replay.query.state.state_at requires, in its order
        if not reader.exists(table):
            raise missing_table(root, table)
    answer: dict[str, pa.Table] = {}
    for section in sections:
        if section in CLUSTER_TABLES:
            table, order = CLUSTER_TABLES[section]
        else:
            table, order = PARTS[section].table, PARTS[section].order
            if not reader.exists(table):
                answer[section] = _no_rows(table)
                continue
        terms = [cluster_sql(cluster), f"({as_of_sql(offset)})", narrowed_sql(section, topic, partition)]
        needed = (columns or {}).get(section)
        selected = None if needed is None else tuple(dict.fromkeys((*order, *needed)))
        answer[section] = spark_sorted(reader.rows(table, " AND ".join(term for term in terms if term), selected),
                                       order)
    record, has_log = None, reader.exists(METADATA_LOG)
    if has_log:
        found = reader.rows(METADATA_LOG, f'{cluster_sql(cluster)} AND "offset" = {int(offset)}',
                            ("append_time_ms", "record_type"))
        record = found.to_pylist()[0] if found.num_rows else None
    return LightState(cluster, offset, answer, has_log, record)


def light_history(root: str, topic: str, partition: int, cluster_id: str | None = None,
                  columns: tuple[str, ...] | None = None) -> pa.Table:
    """Every version of partition ``topic``-``partition``, as ``replay.query.state.history`` gives them (same rows, same
    order, same errors) from the lake at ``root``. ``columns``: the only columns wanted (default all)."""
    reader = LightReader(root)
    cluster = pick_cluster(root, _clusters(reader), cluster_id)
    if not reader.exists(PARTITION_HISTORY):
        raise missing_table(root, PARTITION_HISTORY)
    selected = None if columns is None else tuple(dict.fromkeys((*VERSION_ORDER, *columns)))
    where = f"{cluster_sql(cluster)} AND {narrowed_sql('partitions', topic, partition)}"
    return spark_sorted(reader.rows(PARTITION_HISTORY, where, selected), VERSION_ORDER)


def light_part_history(root: str, section: str, where: str | None, cluster_id: str | None = None) -> pa.Table:
    """Every version of one part of the image matching ``where`` (SQL: ``replay.query.image_sections.part_questions``),
    as ``replay.query.image.part_history`` gives them (same rows, same order; no rows without the part's table)."""
    reader = LightReader(root)
    cluster = pick_cluster(root, _clusters(reader), cluster_id)
    table = PARTS[section].table
    if not reader.exists(table):
        return _no_rows(table)
    terms = [cluster_sql(cluster), *([] if where is None else [f"({where})"])]
    return spark_sorted(reader.rows(table, " AND ".join(terms)), part_history_order(section))


def table_rows(table: pa.Table) -> list[ColumnRow]:
    """A table's rows as mappings (structs as dicts, arrays as lists), columns made Python on first use."""
    columns = _PythonColumns(table)
    return [ColumnRow(columns, index) for index in range(table.num_rows)]


# --- Spark's order and Spark's JSON ---------------------------------------------------------------


def _plain(kind: pa.DataType) -> bool:
    """A type Arrow sorts exactly as Spark does (integers, booleans, strings by their bytes)."""
    return (pa.types.is_integer(kind) or pa.types.is_boolean(kind) or pa.types.is_string(kind)
            or pa.types.is_large_string(kind) or pa.types.is_string_view(kind))


def spark_sorted(table: pa.Table, order: tuple[str, ...]) -> pa.Table:
    """The rows ordered as Spark's ascending ``orderBy(*order)``: by Arrow where it sorts alike, else by
    ``spark_order`` (a client quota's entity, a list of structs)."""
    if not order or table.num_rows < 2:
        return table
    if all(_plain(table.schema.field(column).type) for column in order):
        return table.sort_by([(column, "ascending", "at_start") for column in order])
    keys = [tuple(spark_order(value) for value in values)
            for values in zip(*(table.column(column).to_pylist() for column in order), strict=True)]
    return table.take(sorted(range(len(keys)), key=keys.__getitem__))


def spark_order(value: Any) -> tuple[Any, ...]:
    """A sort key ordering values as Spark's ascending ``orderBy``: nulls first, strings by UTF-8 bytes, arrays
    and structs element by element (a shorter prefix first)."""
    if value is None:
        return (0,)
    if isinstance(value, str):
        return (1, value.encode())
    if isinstance(value, list):
        return (1, tuple(spark_order(element) for element in value))
    if isinstance(value, dict):
        return (1, tuple(spark_order(member) for member in value.values()))
    return (1, value)


_ESCAPED = re.compile(r'[\x00-\x1f"\\]')
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _json_string(text: str) -> str:
    """A string as Jackson writes it: quotes, backslashes and control characters escaped, the rest as is."""
    if _ESCAPED.search(text) is None:
        return f'"{text}"'
    return '"' + _ESCAPED.sub(lambda found: _SHORT_ESCAPES.get(found.group(), f"\\u{ord(found.group()):04X}"),
                              text) + '"'


def java_double(value: float) -> str:
    """A double as Java's ``Double.toString`` (what Jackson writes): ``0.5``, ``1048576.0``, ``1.0E7``."""
    if value != value:
        return '"NaN"'
    if value in (float("inf"), float("-inf")):
        return '"Infinity"' if value > 0 else '"-Infinity"'
    magnitude = abs(value)
    sign = "-" if str(value).startswith("-") else ""
    if magnitude == 0:
        return f"{sign}0.0"
    if 1e-3 <= magnitude < 1e7:
        text = repr(magnitude)
        return sign + (text if "." in text else f"{text}.0")
    _, digits, exponent = Decimal(repr(magnitude)).as_tuple()
    shown = "".join(map(str, digits)).rstrip("0") or "0"
    scale = len(digits) + int(exponent) - 1
    return f"{sign}{shown[0]}.{shown[1:] or '0'}E{scale}"


def json_value(value: Any) -> str:
    """A value as Spark's ``to_json`` with nulls kept writes it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, str):
        return _json_string(value)
    if isinstance(value, list):
        return "[" + ",".join(json_value(element) for element in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{_json_string(key)}:{json_value(member)}" for key, member in value.items()) + "}"
    raise TypeError(f"no Kafka JSON for a {type(value).__name__}")


def _kafka_nested(column: str, value: list[Any] | None) -> list[dict[str, Any]] | None:
    """A list of Kafka structs under their members' Kafka names (``replay.query.state.kafka_struct``'s ``_nested``)."""
    if value is None:
        return None
    return [{member: None if element is None else element[column_name(member)] for member in NESTED[column]}
            for element in value]


def _python_fragments(column: str, values: pa.ChunkedArray) -> pa.Array:
    """Each value's JSON text, by Python (doubles, structs, lists of structs: small sections)."""
    nested = column in NESTED
    return pa.array([json_value(_kafka_nested(column, value) if nested else value) for value in values.to_pylist()],
                    pa.string())


def _quoted(texts: pa.Array) -> pa.Array:
    """Strings as JSON text: backslashes and quotes escaped (control characters: see ``_fragments``)."""
    escaped = pc.replace_substring(pc.replace_substring(texts, "\\", "\\\\"), '"', '\\"')
    return pc.binary_join_element_wise('"', escaped, '"', "")


def _fragments(column: str, values: pa.ChunkedArray) -> pa.Array:
    """Each value's JSON text as Spark's ``to_json`` writes it, computed by Arrow for the types it can do
    exactly (integers, booleans, strings, lists of them), else by Python."""
    kind = values.type
    array = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if column in NESTED or not (_plain(kind) or (pa.types.is_list(kind) and _plain(kind.value_type))):
        return _python_fragments(column, values)
    element_kind = kind.value_type if pa.types.is_list(kind) else kind
    texts = array.values if pa.types.is_list(kind) else array
    if pa.types.is_integer(element_kind):
        texts = pc.cast(texts, pa.string())
    elif pa.types.is_boolean(element_kind):
        texts = pc.if_else(texts, "true", "false")
    else:
        texts = pc.cast(texts, pa.string())
        if pc.any(pc.match_substring_regex(texts, "[\\x00-\\x1f]")).as_py():
            return _python_fragments(column, values)
        texts = _quoted(texts)
    if pa.types.is_list(kind):
        texts = pc.fill_null(texts, "null")
        lists = pa.ListArray.from_arrays(array.offsets, texts, mask=array.is_null())
        texts = pc.binary_join_element_wise("[", pc.binary_join(lists, ","), "]", "")
    return pc.fill_null(texts, "null")


def kafka_json_items(table: pa.Table, fields: tuple[tuple[str, str], ...]) -> Iterator[str]:
    """Each row as the Kafka JSON text ``replay.query.state.kafka_json`` makes of it in Spark, byte for byte."""
    if table.num_rows == 0:
        return iter(())
    pieces: list[Any] = []
    for index, (column, name) in enumerate(fields):
        pieces += [("{" if index == 0 else ",") + _json_string(name) + ":", _fragments(column, table.column(column))]
    return iter(pc.binary_join_element_wise(*pieces, "}", "").to_pylist())


__all__ = ["CLUSTER_TABLES", "LightState", "java_double", "json_value", "kafka_json_items", "light_history",
           "light_part_history", "light_state", "spark_order", "table_rows"]
