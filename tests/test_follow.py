"""lakehouse.follow.complete_end: where the complete batches of a growing segment end, by the one scan
(records.framing.BatchScan); the follower's rounds are tested in tests/test_lake_ingest.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakehouse.follow import complete_end
from records.errors import CorruptBatchError
from tests.test_batch import three_batches
from tests.test_framing import BAD_LENGTHS, damaged_log, expected_error


@pytest.mark.parametrize("name", BAD_LENGTHS)
def test_zero_or_short_length_is_corrupt_as_for_the_scan(name: str, tmp_path: Path) -> None:
    """Kafka's ``CorruptRecordException``: the follower stops with the reader's error instead of waiting forever
    at a zero length for a batch that will never be complete."""
    data, position = damaged_log(BAD_LENGTHS[name])
    path = tmp_path / "test.log"
    path.write_bytes(data)
    with pytest.raises(CorruptBatchError) as caught:
        complete_end(path, 0)
    assert str(caught.value) == expected_error(BAD_LENGTHS[name], position).replace("test.log", str(path))


@pytest.mark.parametrize("keep", [0, 3, 10, 16, 40])
def test_a_batch_still_being_written_is_left_for_the_next_round(keep: int, tmp_path: Path) -> None:
    data, positions = three_batches()
    path = tmp_path / "growing.log"
    path.write_bytes(data[:positions[2] + keep])
    assert complete_end(path, 0) == positions[2]
    assert complete_end(path, positions[1]) == positions[2]
    path.write_bytes(data)
    assert complete_end(path, positions[2]) == len(data)
