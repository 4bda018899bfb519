# Over 400 lines, one job (typing records by the Avro registry): resolution, Spark types, Kafka form change together.
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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from py4j.protocol import Py4JJavaError
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from records.avro_codec import schema_id, schema_text
from records.avro_schema import UUID_NAME
from records.definitions import definitions
from records.kafka_codec import UNKNOWN_TAGGED

AVRO_CLASS = "org.apache.spark.sql.avro.AvroDataToCatalyst"
PAYLOAD_COLUMNS = ("schema_id", "payload", "payload_json")
# from_avro as from_json behaves: a payload it cannot read gives a null struct, not a failed replay.
_AVRO_MODE = "PERMISSIVE"
_PRIMITIVES: dict[str, DataType] = {
    "int": IntegerType(), "long": LongType(), "boolean": BooleanType(), "string": StringType(),
    "bytes": StringType(), "double": DoubleType(), "float": FloatType(),
}

Schema = Any  # an Avro schema as parsed JSON: a name, a list (union) or a dict
Convert = Callable[[Column], Column]


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


# --- Avro schema → Spark type and Kafka's JSON form ------------------------------------------------

def _full_name(schema: Mapping[str, Any], namespace: str | None) -> str:
    name = str(schema["name"])
    if "." in name:
        return name
    space = schema.get("namespace", namespace)
    return f"{space}.{name}" if space else name


def named_types(schema: Schema, namespace: str | None = None, out: dict[str, Schema] | None = None
                ) -> dict[str, Schema]:
    """Full name → definition of every named type (record, fixed, enum) the schema defines."""
    out = {} if out is None else out
    if isinstance(schema, list):
        for branch in schema:
            named_types(branch, namespace, out)
    elif isinstance(schema, dict):
        kind = schema.get("type")
        if kind in ("record", "fixed", "enum"):
            full = _full_name(schema, namespace)
            out[full] = schema
            namespace = full.rpartition(".")[0] or None
        if kind == "record":
            for field in schema["fields"]:
                named_types(field["type"], namespace, out)
        elif kind == "array":
            named_types(schema["items"], namespace, out)
        elif kind == "map":
            named_types(schema["values"], namespace, out)
        elif isinstance(kind, (dict, list)):
            named_types(kind, namespace, out)
    return out


def _resolve(name: str, names: Mapping[str, Schema], namespace: str | None) -> str | None:
    """The full name a type reference means (as written, else in the enclosing namespace); None: a primitive."""
    if name in names:
        return name
    full = f"{namespace}.{name}" if namespace else None
    return full if full in names else None


def _lookup(name: str, names: Mapping[str, Schema], namespace: str | None) -> Schema | None:
    full = _resolve(name, names, namespace)
    return None if full is None else names[full]


def reader_schema(schema: Mapping[str, Any], fields: Sequence[str] | None = None) -> dict[str, Any]:
    """The schema a replay reads with: without ``_unknownTaggedFields`` (Avro resolution skips them in the
    payload), only ``fields`` at the top when given (a projection: the rest is skipped too). Named types are
    written out where first used, so a kept field never refers to a definition that was dropped."""
    names = named_types(schema)
    defined: set[str] = set()

    def walk(node: Schema, namespace: str | None) -> Schema:
        if isinstance(node, str):
            full = _resolve(node, names, namespace)
            if full is None:
                return node  # a primitive
            if full in defined:
                return full
            return walk(names[full], full.rpartition(".")[0] or None)
        if isinstance(node, list):
            return [walk(branch, namespace) for branch in node]
        if not isinstance(node, dict):
            return node
        kind = node.get("type")
        if kind in ("record", "fixed", "enum"):
            full = _full_name(node, namespace)
            if full in defined:
                return full
            defined.add(full)
            out = {key: value for key, value in node.items() if key in ("type", "name", "size", "symbols")}
            out["name"], out["namespace"] = full.rpartition(".")[2], full.rpartition(".")[0]
            if kind == "record":
                inner = full.rpartition(".")[0] or None
                out["fields"] = [{"name": f["name"], "type": walk(f["type"], inner),
                                  **({"default": f["default"]} if "default" in f else {})}
                                 for f in node["fields"] if f["name"] != UNKNOWN_TAGGED]
            return out
        if kind == "array":
            return {"type": "array", "items": walk(node["items"], namespace)}
        if kind == "map":
            return {"type": "map", "values": walk(node["values"], namespace)}
        return walk(kind, namespace)

    top = dict(schema)
    if fields is not None:
        wanted = set(fields)
        top["fields"] = [f for f in schema["fields"] if f["name"] in wanted]
    result = walk(top, None)
    assert isinstance(result, dict)
    return result


def _non_null(branches: list[Schema]) -> Schema:
    kept = [b for b in branches if b != "null"]
    if len(kept) != 1:
        raise ValueError(f"Avro union {branches!r}: only [null, T] unions have a Spark type here")
    return kept[0]


def spark_type(schema: Schema) -> DataType:
    """The Spark type of a reader schema (as :func:`reader_schema` writes it) in Kafka's JSON form: UUIDs
    (fixed) and bytes as strings, what ``from_json`` reads from ``payload_json``."""
    names = named_types(schema)

    def convert(node: Schema, namespace: str | None) -> DataType:
        if isinstance(node, str):
            if node in _PRIMITIVES:
                return _PRIMITIVES[node]
            target = _lookup(node, names, namespace)
            if target is None:
                raise ValueError(f"Avro type {node!r} is not defined")
            return convert(target, namespace)
        if isinstance(node, list):
            return convert(_non_null(node), namespace)
        kind = node["type"]
        if kind == "record":
            inner = _full_name(node, namespace).rpartition(".")[0] or None
            return StructType([StructField(f["name"], convert(f["type"], inner)) for f in node["fields"]])
        if kind in ("fixed", "enum"):
            return StringType()
        if kind == "array":
            return ArrayType(convert(node["items"], namespace))
        if kind == "map":
            return MapType(StringType(), convert(node["values"], namespace))
        return convert(kind, namespace)

    return convert(schema, None)


def kafka_uuid(raw: Column) -> Column:
    """Kafka's ``Uuid.toString()`` of 16 bytes: base64url without its padding (22 characters). Three plain
    replacements: Spark's ``translate`` (and ``substring``) cost twice as much per row, and 16 bytes always end
    in exactly ``==``."""
    encoded = F.base64(raw)
    for plain, url_safe in (("+", "-"), ("/", "_"), ("==", "")):
        encoded = F.replace(encoded, F.lit(plain), F.lit(url_safe))
    return encoded


def kafka_form(schema: Schema) -> Convert | None:
    """How to turn ``from_avro``'s value of a reader schema into Kafka's JSON form (UUIDs and bytes as text,
    see :func:`spark_type`); None when it already is (no UUID, no bytes inside)."""
    names = named_types(schema)

    def build(node: Schema, namespace: str | None) -> Convert | None:
        if isinstance(node, str):
            if node == "bytes":
                return F.base64
            if node in _PRIMITIVES:
                return None
            target = _lookup(node, names, namespace)
            return None if target is None else build(target, namespace)
        if isinstance(node, list):
            return build(_non_null(node), namespace)
        kind = node["type"]
        if kind == "fixed":
            return kafka_uuid if _full_name(node, namespace) == UUID_NAME else F.base64
        if kind == "array":
            item = build(node["items"], namespace)
            return None if item is None else (lambda c: F.transform(c, item))
        if kind == "record":
            inner = _full_name(node, namespace).rpartition(".")[0] or None
            parts = [(f["name"], build(f["type"], inner)) for f in node["fields"]]
            if all(convert is None for _, convert in parts):
                return None
            return lambda c: F.when(c.isNotNull(), F.struct(*[
                (convert(c[name]) if convert is not None else c[name]).alias(name) for name, convert in parts]))
        if kind in ("enum", "map"):
            return None  # enum symbols are strings already; no map holds a UUID in Kafka's records
        return build(kind, namespace)

    return build(schema, None)


@cache
def _json_type(reader: str) -> StructType:
    """The struct type ``from_json`` parses ``payload_json`` with, derived once per reader schema."""
    dtype = spark_type(json.loads(reader))
    assert isinstance(dtype, StructType)
    return dtype


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
        return _json_type(self._reader(record_type, fields))

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
        reader = self._reader(record_type, fields)
        is_type = F.col("record_type") == record_type
        from_text = F.when(is_type, F.from_json("payload_json", _json_type(reader)))
        writers = self.writers.get(record_type, {})
        if not self.avro or not writers:
            return df.withColumn(alias, from_text)
        from pyspark.sql.avro.functions import from_avro

        options = {"avroSchema": reader, "mode": _AVRO_MODE}
        on_payload = is_type & F.col("payload").isNotNull()
        decoded: Column | None = None
        for sid, writer in sorted(writers.items()):
            when = on_payload & (F.col("schema_id") == sid)
            value = from_avro(F.col("payload"), writer, options)
            decoded = F.when(when, value) if decoded is None else decoded.when(when, value)
        assert decoded is not None
        # Two projections: the Avro value once, then its Kafka form (which reads it field by field: Spark does
        # not inline a costly expression that is read more than once).
        raw = f"_{alias}_avro"
        convert = kafka_form(json.loads(reader))
        value = F.col(raw) if convert is None else convert(F.col(raw))
        readable = on_payload & F.col("schema_id").isin(*sorted(writers))
        return (df.withColumn(raw, decoded)
                .withColumn(alias, F.when(readable, value).otherwise(from_text))
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


def record_shapes(spark: SparkSession, registry: DataFrame | None = None) -> RecordShapes:
    """The shapes of a replay: from the lake's ``avro_schemas`` rows (``registry``; the shipped schemas alone
    when None), decoded with from_avro when the session has spark-avro. Collects the registry (a few dozen
    rows) to the driver once."""
    rows: list[RegisteredSchema] = []
    if registry is not None:
        rows = [RegisteredSchema(int(r["schema_id"]), r["record_type"], r["avsc"], r["registered_time"])
                for r in registry.select("schema_id", "record_type", "avsc", "registered_time").collect()
                if r["schema_id"] is not None and r["record_type"] is not None and r["avsc"]]
    return RecordShapes.from_registry(rows, has_spark_avro(spark))


def lake_shapes(spark: SparkSession, lake: Any) -> RecordShapes:
    """:func:`record_shapes` of a ``lakehouse.lake.Lake``: its ``avro_schemas`` when it has the table."""
    from lakehouse.tables import AVRO_SCHEMAS

    registry = lake.read(spark, AVRO_SCHEMAS) if lake.table_exists(AVRO_SCHEMAS) else None
    return record_shapes(spark, registry)


__all__ = ["PAYLOAD_COLUMNS", "RecordShapes", "RegisteredSchema", "has_spark_avro", "kafka_form", "kafka_uuid",
           "lake_shapes", "reader_schema", "record_shapes", "shipped_schemas", "spark_type"]
