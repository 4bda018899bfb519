"""The table registry (``lakehouse.tables``): every key and sort order it declares names columns of its table.

That the replay writes exactly the declared schemas is checked where a replay runs
(``tests/test_replay_store_query.py``)."""

from __future__ import annotations

from lakehouse.tables import (
    ANOMALY_ORDER,
    DERIVED_ORDER,
    HISTORY_KEYS,
    HISTORY_TABLES,
    KEYS,
    REPLAY_ANOMALIES,
    REPLAY_CHECKPOINTS,
    REPLAY_COVERAGE,
    REPLAY_SCHEMAS,
    SCHEMAS,
    SORT_COLUMNS,
)


def test_the_log_tables_keys_and_sort_orders_are_their_columns() -> None:
    assert set(KEYS) == set(SORT_COLUMNS) == set(SCHEMAS)
    for name, schema in SCHEMAS.items():
        assert set(KEYS[name]) <= set(schema.names), name
        assert set(SORT_COLUMNS[name]) <= set(schema.names), name


def test_every_replay_table_is_declared_once_with_its_order() -> None:
    assert not set(SCHEMAS) & set(REPLAY_SCHEMAS)
    assert set(REPLAY_SCHEMAS) == {*HISTORY_KEYS, *DERIVED_ORDER, REPLAY_ANOMALIES, REPLAY_CHECKPOINTS, REPLAY_COVERAGE}
    assert tuple(HISTORY_KEYS) == HISTORY_TABLES
    for name, key in HISTORY_KEYS.items():
        assert {*key, "valid_from_offset", "valid_to_offset"} <= set(REPLAY_SCHEMAS[name].names), name
    for name, order in DERIVED_ORDER.items():
        assert set(order) <= set(REPLAY_SCHEMAS[name].names), name
    assert list(ANOMALY_ORDER) == REPLAY_SCHEMAS[REPLAY_ANOMALIES].names


def test_every_column_is_nullable() -> None:
    """Spark reads Parquet back as nullable: a NOT NULL column would only add a way for a commit to fail."""
    for schema in (*SCHEMAS.values(), *REPLAY_SCHEMAS.values()):
        assert all(field.nullable for field in schema)
