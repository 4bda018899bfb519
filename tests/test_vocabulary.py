"""``records.vocabulary`` against Kafka's definitions and the folds that read through it: a definition and the
vocabulary cannot drift apart without one of these failing.

- every field the Spark folds read (``replay.core.events.kafka_field`` and its helpers, found in the folds' source) and
  every field the reference fold reads (``replay.reference.metadata_delta._value``) exists in Kafka's definition of that
  record type, with a type the typing holds;
- every default the folds rely on is Kafka's definition's default;
- the columns that differ from the rule are declared once, each naming a real field.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from records.kafka_constants import (
    FENCE,
    IN_CONTROLLED_SHUTDOWN,
    NO_LEADER_CHANGE,
    NO_RECOVERY_STATE_CHANGE,
    NONE,
    RECOVERY_STATES,
    UNFENCE,
)
from records.vocabulary import COLUMN_EXCEPTIONS, column_name, default, field, fields, kafka_name
from replay.core.events import STATE_TYPES
from replay.core.image_parts import WHOLE_PARTS

REPLAY = Path(__file__).resolve().parents[1] / "replay"
HELPERS = {"kafka_field", "kafka_default", "kafka_columns", "struct_columns", "kafka_struct"}
# the Kafka types the typed struct ``r`` holds as the folds read them (replay.core.shapes: ints, longs, text, booleans)
SEED_CALL = "kafka_struct(part.puts, *part.seed)"  # replay.fold.incremental.image_seeds, over the registry
READABLE = {"int8", "int16", "int32", "int64", "float64", "uuid", "string", "bool", "[]int32", "[]uuid", "[]string"}


def _constants(tree: ast.Module) -> dict[str, str]:
    """Module-level names bound to a string (``CHANGE = "PartitionChangeRecord"``, also in tuple assignments)."""
    found: dict[str, str] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            pairs = (zip(target.elts, node.value.elts, strict=False)
                     if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) else [(target, node.value)])
            for name, value in pairs:
                if isinstance(name, ast.Name) and isinstance(value, ast.Constant) and isinstance(value.value, str):
                    found[name.id] = value.value
    return found


def _module_strings(path: Path) -> dict[str, str]:
    """The module's string names as it runs (a fold takes its record types from its part's registry entry,
    ``ACL, REMOVE_ACL = ACLS.folded_from``)."""
    module = importlib.import_module(".".join(path.relative_to(REPLAY.parent).with_suffix("").parts))
    return {name: value for name, value in vars(module).items() if isinstance(value, str)}


def _text(node: ast.expr, constants: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    return None


def fields_read_by_the_spark_folds() -> set[tuple[str, str]]:
    """(record type, Kafka name) of every call of the vocabulary's Spark helpers in ``replay/``."""
    read: set[tuple[str, str]] = set()
    for path in sorted(REPLAY.rglob("*.py")):
        tree = ast.parse(path.read_text())
        if path.name != "events.py" and not any(
                isinstance(node, ast.ImportFrom) and node.module == "replay.core.events"
                and HELPERS & {alias.name for alias in node.names} for node in tree.body):
            continue  # a function of the same name elsewhere is not the vocabulary's
        constants = {**_module_strings(path), **_constants(tree)}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in HELPERS):
                continue
            if path.name == "events.py" and not node.args:
                continue
            if ast.unparse(node) == SEED_CALL:  # the increment's seeds: the fields each registry entry names
                read.update((part.puts, name) for part in WHOLE_PARTS for name in part.seed or ())
                continue
            record_type = _text(node.args[0], constants)
            if record_type is None:  # the helpers' own bodies pass their parameters on
                assert path.name == "events.py", f"{path.name}: {ast.unparse(node)} names no record type"
                continue
            names = [_text(arg, constants) for arg in node.args[1:]]
            assert None not in names, f"{path.name}: {ast.unparse(node)}"
            read.update((record_type, name) for name in names if name is not None)
    return read


def fields_read_by_the_reference_fold() -> set[str]:
    """``_value(record, name)`` in its rules, ``values[name]`` in the partition registration's (records/)."""
    tree = ast.parse((REPLAY / "reference" / "metadata_delta.py").read_text())
    registration = ast.parse((REPLAY.parent / "records" / "partition_registration.py").read_text())
    return {node.args[1].value for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_value"
            and isinstance(node.args[1], ast.Constant)} | {
        node.slice.value for node in ast.walk(registration)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "values"
        and isinstance(node.slice, ast.Constant)}


def test_the_spark_folds_read_only_fields_kafka_defines() -> None:
    read = fields_read_by_the_spark_folds()
    assert len(read) > 40, sorted(read)
    for record_type, name in sorted(read):
        assert record_type in STATE_TYPES, record_type
        definition = field(record_type, name)  # a KeyError when Kafka has no such field
        assert definition.type in READABLE or definition.nested, (record_type, name, definition.type)


def test_the_reference_fold_reads_only_fields_kafka_defines() -> None:
    read = fields_read_by_the_reference_fold()
    assert {"leaderRecoveryState", "inControlledShutdown", "fenced", "logDirs"} <= read
    for name in sorted(read):
        assert any(f.kafka_name == name for record_type in STATE_TYPES for f in fields()[record_type]), name


def test_the_defaults_the_folds_rely_on_are_kafkas() -> None:
    """A PartitionChangeRecord's absent leader and recovery state change nothing, a PartitionRecord's recovery state
    is RECOVERED, a registration change's absent codes are NONE, a registration is fenced."""
    assert default("PartitionChangeRecord", "leader") == NO_LEADER_CHANGE
    assert default("PartitionChangeRecord", "leaderRecoveryState") == NO_RECOVERY_STATE_CHANGE
    assert default("PartitionRecord", "leaderRecoveryState") == RECOVERY_STATES[0]
    assert default("BrokerRegistrationChangeRecord", "fenced") == NONE
    assert default("BrokerRegistrationChangeRecord", "inControlledShutdown") == NONE
    assert NONE not in (FENCE, UNFENCE, IN_CONTROLLED_SHUTDOWN)
    assert default("RegisterBrokerRecord", "fenced") is True
    assert default("RegisterBrokerRecord", "inControlledShutdown") is False
    for name in ("replicas", "isr", "addingReplicas", "removingReplicas", "eligibleLeaderReplicas", "lastKnownElr",
                 "directories"):
        assert default("PartitionChangeRecord", name) is None, name  # null: the field keeps its value


def test_the_exceptions_to_the_rule_name_real_fields() -> None:
    for (record_type, name), column in COLUMN_EXCEPTIONS.items():
        assert field(record_type, name).column == column
        assert column != column_name(name), f"{record_type}.{name} follows the rule: not an exception"


@pytest.mark.parametrize("record_type", STATE_TYPES)
def test_every_column_maps_back_to_its_kafka_name(record_type: str) -> None:
    for definition in fields()[record_type]:
        if (record_type, definition.kafka_name) not in COLUMN_EXCEPTIONS:
            assert kafka_name(definition.column) == definition.kafka_name


def test_an_unknown_field_fails_where_it_is_read() -> None:
    with pytest.raises(KeyError, match="PartitionRecord has no field leaderEpochs"):
        field("PartitionRecord", "leaderEpochs")
