"""lakehouse.fingerprint_key: the key beside the lake (never in it), created 0600 once, the same on every read."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from lakehouse.fingerprint_key import FINGERPRINT_KEY_ENV, fingerprint_key, key_path
from lakehouse.lake_root import LakeError


def test_the_key_is_created_beside_the_lake_once_and_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(FINGERPRINT_KEY_ENV, raising=False)
    lake = tmp_path / "kraft-lake"
    path = key_path(str(lake))
    assert path == tmp_path / "kraft-lake.fingerprint-key"
    assert not path.exists()
    key = fingerprint_key(str(lake))
    assert len(key) == 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == key.hex() + "\n"
    assert not lake.exists()  # beside the lake, never in it
    assert fingerprint_key(str(lake)) == key  # same key across runs
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kraft-lake.fingerprint-key"]  # no draft left


def test_a_key_file_the_user_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    named = tmp_path / "keys" / "mine"
    monkeypatch.setenv(FINGERPRINT_KEY_ENV, str(named))
    assert key_path("s3://bucket/lake") == named
    key = fingerprint_key("s3://bucket/lake")
    assert named.read_text().strip() == key.hex()
    named.write_text("00" * 16 + "\n")
    assert fingerprint_key(str(tmp_path / "lake")) == bytes(16)


def test_bad_or_missing_keys_say_what_is_expected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(FINGERPRINT_KEY_ENV, raising=False)
    with pytest.raises(LakeError, match=f"not a local directory: name a file .* \\${FINGERPRINT_KEY_ENV}"):
        key_path("s3://bucket/lake")
    broken = tmp_path / "lake.fingerprint-key"
    broken.write_text("not hex\n")
    with pytest.raises(LakeError, match=r"lake.fingerprint-key: expected a fingerprint key of at least 16 bytes"):
        fingerprint_key(str(tmp_path / "lake"))
    broken.write_text("abcd\n")
    with pytest.raises(LakeError, match="found 4 characters"):
        fingerprint_key(str(tmp_path / "lake"))
