"""The key of the secrets' fingerprints (``records.redaction``): kept beside the lake, never in it.

A fingerprint is an HMAC of the secret: without the key nobody can test guesses against the lake's
fingerprints; with the same key, the same secret has the same fingerprint in every ingest, so a change shows.
The key is ``$KRAFT_REPLAY_FINGERPRINT_KEY_FILE`` when set, else ``<lake>.fingerprint-key`` next to a local lake's
directory, created (32 random bytes, hex, mode 0600) by the first ingest that needs it. A lake on an object store
needs the variable: nothing beside it is ours to write.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from lakehouse.lake_root import LakeError

FINGERPRINT_KEY_ENV = "KRAFT_REPLAY_FINGERPRINT_KEY_FILE"
KEY_SUFFIX = ".fingerprint-key"
KEY_BYTES = 32


def key_path(lake_root: str) -> Path:
    """Where the lake's fingerprint key is (it may not exist yet)."""
    named = os.environ.get(FINGERPRINT_KEY_ENV)
    if named:
        return Path(named).expanduser()
    if "://" in lake_root:
        raise LakeError(f"the lake {lake_root} is not a local directory: name a file for its secrets' fingerprint "
                        f"key with ${FINGERPRINT_KEY_ENV} (kept beside the lake, never in it)")
    return Path(lake_root.rstrip("/") + KEY_SUFFIX)


def _read(path: Path) -> bytes:
    text = path.read_text().strip()
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) < 16:
        raise LakeError(f"{path}: expected a fingerprint key of at least 16 bytes as hex ({KEY_BYTES * 2} hex "
                        f"digits), found {len(text)} characters")
    return key


def fingerprint_key(lake_root: str) -> bytes:
    """The lake's key, created 0600 on first use (written aside, then linked: a racing process reads a whole key,
    the same one)."""
    path = key_path(lake_root)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as stream:
            stream.write(secrets.token_hex(KEY_BYTES) + "\n")
        try:
            os.link(draft, path)  # atomic, and never replaces a key another process made first
        except FileExistsError:
            pass
        finally:
            draft.unlink()
    try:
        return _read(path)
    except OSError as exc:
        raise LakeError(f"cannot read the secrets' fingerprint key {path}: {exc.strerror or exc}") from None


__all__ = ["FINGERPRINT_KEY_ENV", "fingerprint_key", "key_path"]
