"""The replay's own JVM functions (the Java sources under ``replay/jvm``, built into a jar by ``lakehouse.replay_jar``),
registered in a session under their SQL names and called as columns.

A session this project starts has the jar on its ``spark.jars`` (``lakehouse.spark``: its executors load it); a Spark
Connect session is sent the jar as an artifact first, so a server started without it runs them too.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

from pyspark.errors import PySparkException
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from lakehouse.replay_jar import ReplayJarError, build
from lakehouse.spark import SparkUnavailableError, is_connect


class JvmFunctionsUnavailableError(SparkUnavailableError):
    """The replay's JVM functions cannot be loaded in the session: no jar, or a server that refuses it (one
    actionable line, as for a missing JVM)."""


@dataclass(frozen=True)
class JvmFunction:
    name: str  # its SQL name in the session
    java_class: str  # the class in the jar (a Spark Java UDF: ``UDF1``, ``UDF2``, ...)
    result_type: str  # the Spark type of its result, as DDL


# The fields a pass's input structs start with: an interval and the record that started it (sorting the structs sorts
# them by their start); the passes read them as ``kraftreplay.core.Interval`` names them.
INTERVAL = (("valid_from_offset", "bigint"), ("valid_to_offset", "bigint"), ("valid_from_time_ms", "bigint"),
            ("valid_to_time_ms", "bigint"), ("cause_offset", "bigint"), ("cause_type", "string"))

_REGISTERED: weakref.WeakKeyDictionary[SparkSession, set[str]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _registered(spark: SparkSession, function: JvmFunction) -> None:
    """Register ``function`` in ``spark`` once (threads of one session share the registration)."""
    with _LOCK:
        done = _REGISTERED.setdefault(spark, set())
        if function.name in done:
            return
        try:
            jar = build()
        except ReplayJarError as error:
            raise JvmFunctionsUnavailableError(f"the replay's JVM functions are not built: {error}") from error
        try:
            if is_connect(spark) and not done:
                # a Connect server loads a session's artifacts in a class loader of that session
                spark.addArtifacts(str(jar))
            spark.udf.registerJavaFunction(function.name, function.java_class, function.result_type)
        except (PySparkException, OSError) as error:
            raise JvmFunctionsUnavailableError(
                f"the replay's JVM functions ({jar.name}) cannot be loaded in this Spark session: {error}") from error
        done.add(function.name)


def typed_fields(fields: tuple[tuple[str, str], ...]) -> list[Column]:
    """The columns ``fields`` names (name, Spark type as DDL), each cast to its type: a struct's fields in the order
    and types a function reads them."""
    return [F.col(name).cast(spark_type).alias(name) for name, spark_type in fields]


def array_of_structs(fields: tuple[tuple[str, str], ...]) -> str:
    """The DDL type of an array of structs of ``fields``: a function's result type."""
    return "array<struct<" + ",".join(f"{name}:{spark_type}" for name, spark_type in fields) + ">>"


def sorted_structs(fields: tuple[tuple[str, str], ...]) -> Column:
    """A group's rows as structs of ``fields`` (an aggregate), sorted by their first fields: a pass's input in the
    order it reads it."""
    return F.array_sort(F.collect_list(F.struct(*typed_fields(fields))))


def jvm_call(spark: SparkSession, function: JvmFunction, *columns: Column) -> Column:
    """``function`` applied to ``columns``, registered in ``spark`` first when it is not yet."""
    _registered(spark, function)
    return F.call_function(function.name, *columns)
