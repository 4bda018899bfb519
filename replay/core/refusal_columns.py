"""The templates of ``replay.core.refusals`` as Spark columns: the Spark fold's ``reason``, in the words the reference
fold writes with ``str.format``."""

from __future__ import annotations

from string import Formatter

from pyspark.sql import Column
from pyspark.sql import functions as F


def reason_column(template: str, *, skip_nulls: bool = False, **values: Column | str) -> Column:
    """``template`` with each ``{name}`` replaced by ``values[name]`` as text (a str names a column; a list is
    passed joined, ``F.array_join(column, LIST_SEPARATOR)``). Null when any value is null (``F.concat``); with
    ``skip_nulls`` a null value is left out instead (``F.concat_ws("")``). A field the template names and no value
    gives, a value it does not name, a format spec or a conversion: ValueError."""
    parts: list[Column] = []
    named: set[str] = set()
    for text, name, spec, conversion in Formatter().parse(template):
        if text:
            parts.append(F.lit(text))
        if name is None:
            continue
        if spec or conversion or name not in values:
            raise ValueError(f"{template!r}: no plain value for field {name!r}")
        value = values[name]
        parts.append((F.col(value) if isinstance(value, str) else value).cast("string"))
        named.add(name)
    if set(values) - named:
        raise ValueError(f"{template!r} names no field {sorted(set(values) - named)}")
    return F.concat_ws("", *parts) if skip_nulls else F.concat(*parts)


__all__ = ["reason_column"]
