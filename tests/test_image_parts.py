"""replay/core/image_parts.py: one registry entry per image part, and a new entry without its fold fails here,
not later in a replay (the Spark fold and the reference's rows by section, a reference replay per record type)."""

from __future__ import annotations

import pytest

from lakehouse.tables import HISTORY_KEYS, IMAGE_SCHEMAS, REPLAY_SCHEMAS
from records.vocabulary import fields
from replay.core.image_parts import IMAGE_PARTS, WHOLE_PARTS, ImagePart
from replay.fold.engine import PART_FOLDS
from replay.reference.image_parts_delta import PART_REPLAYS
from replay.reference.metadata_delta import MetadataDelta
from replay.reference.rows import PART_ROWS

PARTS = list(IMAGE_PARTS.values())


def _ids(part: ImagePart) -> str:
    return part.section


def test_every_part_folded_on_its_own_has_its_spark_fold_and_its_reference_rows() -> None:
    whole = {part.section for part in WHOLE_PARTS}
    assert set(PART_FOLDS) == whole
    assert set(PART_ROWS) == whole


@pytest.mark.parametrize("part", PARTS, ids=_ids)
def test_every_record_type_a_part_is_folded_from_has_a_reference_replay(part: ImagePart) -> None:
    dispatched = set(MetadataDelta().replays) | set(PART_REPLAYS)
    assert set(part.folded_from) <= dispatched, f"{part.section}: no reference replay for " \
                                                f"{sorted(set(part.folded_from) - dispatched)}"


def test_every_reference_replay_of_a_part_belongs_to_one() -> None:
    folded = {kind for part in WHOLE_PARTS for kind in part.folded_from}
    assert set(PART_REPLAYS) <= folded


@pytest.mark.parametrize("part", PARTS, ids=_ids)
def test_a_part_reads_the_columns_of_its_table(part: ImagePart) -> None:
    assert part.table in HISTORY_KEYS
    schema = REPLAY_SCHEMAS.get(part.table) or IMAGE_SCHEMAS[part.table]
    columns = set(schema.names)
    used = {*part.keyed, *part.values, *part.shown, *part.order, *([part.fingerprint] if part.fingerprint else [])}
    assert used <= columns, f"{part.table} has no {sorted(used - columns)}"
    assert part.keyed[0] == "cluster_id"
    assert {name for _, name in part.fields} and len(part.headers) > 0


@pytest.mark.parametrize("part", WHOLE_PARTS, ids=_ids)
def test_a_seed_names_fields_of_the_record_that_puts_an_entry(part: ImagePart) -> None:
    assert part.seed is not None
    known = {definition.kafka_name for definition in fields()[part.puts]}
    assert set(part.seed) <= known, f"{part.puts} has no {sorted(set(part.seed) - known)}"


def test_the_registry_names_each_section_and_entity_once() -> None:
    assert len({part.section for part in PARTS}) == len({part.entity for part in PARTS}) == len(PARTS)
    assert len({part.table for part in PARTS}) == len(PARTS)
