"""Writing a simulated log where kraft-replay and Kafka's tools read it: segments or JSON lines."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from records.batch import Compression
from records.jsonl import write_jsonl
from records.kafka_constants import ABORT, BEGIN, END
from records.model import LogEntry
from records.writer import write_meta_properties, write_segments

FORMATS = ("segments", "jsonl")
METADATA_DIR = "__cluster_metadata-0"
JSONL_NAME = "metadata.jsonl"


class _Counter:
    """Counts entries while they stream through, so nothing is held to count them."""

    def __init__(self, entries: Iterable[LogEntry]) -> None:
        self.entries = entries
        self.count = 0

    def __iter__(self) -> Iterator[LogEntry]:
        for entry in self.entries:
            self.count += 1
            yield entry


def write_log(entries: Iterable[LogEntry], out: Path, fmt: str, *, cluster_id: str, node_id: int,
              compression: Compression = Compression.NONE) -> tuple[int, list[Path]]:
    """``segments``: OUT/meta.properties + OUT/__cluster_metadata-0/*.log; ``jsonl``: OUT/metadata.jsonl.
    Returns (records written, files written)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown output format {fmt!r} (expected one of {', '.join(FORMATS)})")
    out.mkdir(parents=True, exist_ok=True)
    counter = _Counter(entries)
    if fmt == "segments":
        meta = write_meta_properties(out, cluster_id=cluster_id, node_id=node_id)
        paths = write_segments(counter, out / METADATA_DIR, compression=compression)
        return counter.count, [meta, *paths]
    path = out / JSONL_NAME
    with path.open("w", encoding="utf-8", newline="\n") as stream:
        write_jsonl(counter, stream)
    return counter.count, [path]


def whole_transactions(entries: Iterator[LogEntry], at_least: int) -> Iterator[LogEntry]:
    """The next ``at_least`` entries, and more until no metadata transaction is open: a log Kafka wrote ends
    between transactions once its controller settled (Kafka's shell and loader wait for an open one's end)."""
    open_transaction = False
    for count, entry in enumerate(entries, start=1):
        yield entry
        if entry.type_name == BEGIN:
            open_transaction = True
        elif entry.type_name in (END, ABORT):
            open_transaction = False
        if count >= at_least and not open_transaction:
            return
