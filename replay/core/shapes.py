"""Record shapes: the lake's Avro schema registry decides what each record type's fields are.

The replay types every record with one struct column per record type (``r``), built here from Avro
schemas instead of hand-written Spark DDL:

- **With spark-avro** (``from_avro`` on the classpath), a stored ``payload`` is read with its *writer*
  schema (the one its ``schema_id`` names in ``avro_schemas``) resolved against the type's *reader*
  schema (the registry's newest of the type): a payload written under an older, narrower schema gets
  the fields it lacks at their Avro defaults, which are Kafka's defaults (``records.avro_schema``).
- **Without it** (an air-gapped machine without the jars, a Spark Connect server without the module),
  the same reader schema is converted once into a Spark struct type and ``payload_json`` is parsed with
  ``from_json``.

Either way the struct has Kafka's JSON form, so both paths give the same rows and the folds need not
know which ran: camelCase fields, UUIDs as Kafka's base64url text, bytes as base64, no
``_unknownTaggedFields``. Rows without a decodable payload (an incremental replay's seeds, records kept
raw, a payload whose schema the registry does not hold) are parsed from ``payload_json`` as before.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from py4j.protocol import Py4JJavaError
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    StructType,
)

from records.avro_codec import schema_id, schema_text
from records.definitions import definitions
from replay.core.avro_types import (
    json_struct_type,
    kafka_form,
    reader_schema,
)

AVRO_CLASS = "org.apache.spark.sql.avro.AvroDataToCatalyst"
PAYLOAD_COLUMNS = ("schema_id", "payload", "payload_json")
# from_avro as from_json behaves: a payload it cannot read gives a null struct, not a failed replay.
_AVRO_MODE = "PERMISSIVE"


# --- is spark-avro there? ------------------------------------------------------------------------

_HAS_AVRO: dict[int, tuple[SparkSession, bool]] = {}


def has_spark_avro(spark: SparkSession) -> bool:
    """True when this session runs the replay's ``from_avro``: its JVM loads spark-avro's expression class (a
    local or cluster session started with the fetched jars); never over Spark Connect (see below)."""
    known = _HAS_AVRO.get(id(spark))
    if known is None or known[0] is not spark:
        known = _HAS_AVRO[id(spark)] = (spark, _probe_spark_avro(spark))
    return known[1]


def _probe_spark_avro(spark: SparkSession) -> bool:
    jvm = getattr(spark, "_jvm", None)
    if jvm is not None:
        try:
            # The context class loader is the one that sees the jars given as spark.jars / --packages.
            loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
            jvm.java.lang.Class.forName(AVRO_CLASS, False, loader)
        except Py4JJavaError:
            return False
        return True
    # Spark Connect: typing with from_avro (the UUID fields' text form included) nests the replay's plans deeper
    # than the Connect client's protobuf decoder accepts (100 levels: "Exceeded upb_DecodeOptions_MaxDepth" on
    # the replay), so a Connect client types records with from_json, whatever the server has.
    return False


# --- the registry ------------------------------------------------------------------------------

@dataclass(frozen=True)
class RegisteredSchema:
    """One row of ``avro_schemas`` (the columns the replay uses)."""

    schema_id: int
    record_type: str
    avsc: str
    registered_time: datetime | None = None


def shipped_schemas() -> list[RegisteredSchema]:
    """The ``.avsc`` this code ships, one per record type, as ``Lake.register_schemas`` registers them."""
    return [RegisteredSchema(schema_id(name), name, schema_text(name)) for name in sorted(definitions())]


def _field_names(avsc: Mapping[str, Any]) -> set[str]:
    return {f["name"] for f in avsc["fields"]}


@dataclass(frozen=True)
class RecordShapes:
    """Per record type, the reader schema and the writer schemas of its stored payloads; built once per replay
    (``record_shapes``) and handed to every fold that types records."""

    readers: Mapping[str, str]  # record type → reader schema (JSON text, see reader_schema)
    writers: Mapping[str, Mapping[int, str]]  # record type → schema id → the writer schema's avsc text
    avro: bool  # decode ``payload`` with from_avro (else parse ``payload_json`` with from_json)

    @classmethod
    def from_registry(cls, registered: Iterable[RegisteredSchema], avro: bool) -> RecordShapes:
        """Shapes from registry rows, completed by the shipped schemas.

        Reader of a type: the newest registered schema (``registered_time``, then the row order) that has
        every field of the shipped one, i.e. this code's shape or a later one; the shipped ``.avsc`` when the
        registry holds none (a lake registered by an older release, or no registry). Writers: every registered
        schema of the type, plus the shipped one (what this code's ingest writes)."""
        rows = list(registered)
        readers: dict[str, str] = {}
        writers: dict[str, dict[int, str]] = {}
        for shipped in shipped_schemas():
            kind = shipped.record_type
            mine = [r for r in rows if r.record_type == kind]
            needed = _field_names(json.loads(shipped.avsc))
            wide = [r for r in mine if needed <= _field_names(json.loads(r.avsc))]
            newest = max(enumerate(wide), key=lambda ir: (ir[1].registered_time is not None,
                                                          ir[1].registered_time or datetime.min, ir[0]),
                         default=(0, shipped))[1]
            readers[kind] = json.dumps(reader_schema(json.loads(newest.avsc)), separators=(",", ":"))
            writers[kind] = {shipped.schema_id: shipped.avsc} | {r.schema_id: r.avsc for r in mine}
        return cls(readers, writers, avro)

    def fields(self, record_type: str) -> tuple[str, ...]:
        """The top-level fields of the type's struct, in schema order."""
        return tuple(f["name"] for f in json.loads(self.readers[record_type])["fields"])

    def json_type(self, record_type: str, fields: Sequence[str] | None = None) -> StructType:
        """The type's struct in Kafka's JSON form (``fields``: only those), as both paths produce it."""
        return json_struct_type(self._reader(record_type, fields))

    def _reader(self, record_type: str, fields: Sequence[str] | None) -> str:
        if fields is None:
            return self.readers[record_type]
        projected = reader_schema(json.loads(self.readers[record_type]), fields)
        return json.dumps(projected, separators=(",", ":"))

    def _avro_ids(self) -> list[int]:
        return sorted({sid for ids in self.writers.values() for sid in ids})

    def payload_columns(self) -> list[Column]:
        """``schema_id``, ``payload``, ``payload_json`` of the events the folds type: with from_avro,
        ``payload_json`` only where the Avro payload cannot be read (so the replay's checkpoints do not carry
        every record twice); without it, ``payload_json`` alone."""
        if not self.avro:
            return [F.lit(None).cast("long").alias("schema_id"), F.lit(None).cast("binary").alias("payload"),
                    F.col("payload_json")]
        readable = F.col("payload").isNotNull() & F.col("schema_id").isin(*self._avro_ids())
        return [F.col("schema_id"), F.col("payload"),
                F.when(~readable, F.col("payload_json")).alias("payload_json")]

    def typed(self, df: DataFrame, record_type: str, alias: str = "r", fields: Sequence[str] | None = None
              ) -> DataFrame:
        """``df`` with the fields of its ``record_type`` rows as struct column ``alias`` (null on the rows of
        other types); ``fields``: decode only those. ``df`` has the columns of :data:`PAYLOAD_COLUMNS`."""
        # SQL text, not ``F`` columns: a replay types records some twenty times, and a column built with ``F`` costs a
        # py4j round trip per function, name and option (``F.expr`` parses the text in one)
        reader = self._reader(record_type, fields)
        is_type = f"record_type = {_sql_string(record_type)}"
        parsed = f"from_json(payload_json, {_sql_string(json_struct_type(reader).json())})"
        from_text = f"CASE WHEN {is_type} THEN {parsed} END"
        writers = self.writers.get(record_type, {})
        if not self.avro or not writers:
            return df.withColumn(alias, F.expr(from_text))
        options = f"map('avroSchema', {_sql_string(reader)}, 'mode', {_sql_string(_AVRO_MODE)})"
        on_payload = f"{is_type} AND payload IS NOT NULL"
        decoded = " ".join(f"WHEN {on_payload} AND schema_id = {sid} THEN from_avro(payload, {_sql_string(writer)}, "
                           f"{options})" for sid, writer in sorted(writers.items()))
        # Two projections: the Avro value once, then its Kafka form (which reads it field by field: Spark does
        # not inline a costly expression that is read more than once).
        raw = f"_{alias}_avro"
        convert = kafka_form(json.loads(reader))
        value = f"`{raw}`" if convert is None else convert(f"`{raw}`")
        readable = f"{on_payload} AND schema_id IN ({', '.join(str(sid) for sid in sorted(writers))})"
        return (df.withColumn(raw, F.expr(f"CASE {decoded} END"))
                .withColumn(alias, F.expr(f"CASE WHEN {readable} THEN {value} ELSE {from_text} END"))
                .drop(raw))

    def named(self, df: DataFrame, record_types: Sequence[str], fields: Sequence[str]) -> DataFrame:
        """``df`` with one column per field of ``fields``: its value in whichever of ``record_types`` the row
        is (null when its type has no such field); each type decodes only the fields it has."""
        sources: dict[str, list[Column]] = {name: [] for name in fields}
        for index, record_type in enumerate(record_types):
            present = [name for name in fields if name in self.fields(record_type)]
            if not present:
                continue
            alias = f"_named{index}"
            df = self.typed(df, record_type, alias, present)
            for name in present:
                sources[name].append(F.col(f"{alias}.{name}"))
        columns = [(F.coalesce(*found) if len(found) > 1 else found[0]) if found else F.lit(None)
                   for found in sources.values()]
        temporary = [f"_named{index}" for index in range(len(record_types))]
        return df.select("*", *[c.alias(name) for c, name in zip(columns, fields, strict=True)]).drop(*temporary)


def _sql_string(text: str) -> str:
    """``text`` as a Spark SQL string literal (Spark reads backslash escapes in literals)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def record_shapes(spark: SparkSession, registry: DataFrame | None = None) -> RecordShapes:
    """The shapes of a replay: from the lake's ``avro_schemas`` rows (``registry``; the shipped schemas alone
    when None), decoded with from_avro when the session has spark-avro. Collects the registry (a few dozen
    rows) to the driver once."""
    rows = [] if registry is None else registry.select(*_REGISTRY_COLUMNS).collect()
    return RecordShapes.from_registry(_registered(row.asDict() for row in rows), has_spark_avro(spark))


def lake_shapes(spark: SparkSession, lake: Any) -> RecordShapes:
    """:func:`record_shapes` of a ``lakehouse.lake.Lake``: its ``avro_schemas`` when it has the table, read on the
    driver (a few dozen rows: no Spark job)."""
    from lakehouse.tables import AVRO_SCHEMAS

    rows = lake.small_rows(AVRO_SCHEMAS) if lake.table_exists(AVRO_SCHEMAS) else []
    return RecordShapes.from_registry(_registered(rows), has_spark_avro(spark))


_REGISTRY_COLUMNS = ("schema_id", "record_type", "avsc", "registered_time")


def _registered(rows: Iterable[Mapping[str, Any]]) -> list[RegisteredSchema]:
    """The registry's complete rows in one order whichever engine read them: by ``schema_id`` (the reader's
    tie-break between schemas registered at one time), times as naive UTC."""
    found = []
    for row in rows:
        if row["schema_id"] is None or row["record_type"] is None or not row["avsc"]:
            continue
        registered = row["registered_time"]
        if registered is not None and registered.tzinfo is not None:
            registered = registered.astimezone(UTC).replace(tzinfo=None)
        found.append(RegisteredSchema(int(row["schema_id"]), row["record_type"], row["avsc"], registered))
    return sorted(found, key=lambda schema: schema.schema_id)


__all__ = ["PAYLOAD_COLUMNS", "RecordShapes", "RegisteredSchema", "has_spark_avro", "lake_shapes", "record_shapes",
           "shipped_schemas"]
