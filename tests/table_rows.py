"""Comparing history tables row for row, whatever their order and container types."""

from __future__ import annotations

import math
from typing import Any


def canonical(value: Any) -> Any:
    """A hashable, order-independent form of a row (dicts by key, lists as tuples, NaN comparable)."""
    if isinstance(value, dict):
        return tuple(sorted((k, canonical(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(canonical(v) for v in value)
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return value


def sorted_rows(rows: list[dict[str, Any]], drop: tuple[str, ...] = ()) -> list[tuple]:
    """The rows in canonical form and a fixed order, without the ``drop`` columns."""
    return sorted((canonical({k: v for k, v in r.items() if k not in drop}) for r in rows), key=repr)
