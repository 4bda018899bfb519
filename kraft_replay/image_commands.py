"""The rest of Kafka's image in `state`, `history` and the `changes` command: features, controllers, configs,
client quotas, ACLs, SCRAM credentials, delegation tokens and producer ids.

The questions are ``replay.query.image`` and ``replay.query.changes``; this module formats them: Kafka's JSON names
for tools, Kafka's enum names (``records.kafka_constants``: TOPIC, ALLOW, WRITE, LITERAL, SCRAM-SHA-256…) in the
tables for people. No secret is in the lake: a redacted config value reads ``(redacted)``; a secret's
fingerprint (not the secret) shows which versions hold the same one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kraft_replay.plumbing import (
    ClusterOption,
    FormatOption,
    LakeOption,
    MasterOption,
    OutputFormat,
    RemoteOption,
    echo_lines,
    query_command,
    spark_session,
    table_lines,
    usage_error,
)
from replay.core.cells import iso_ms
from replay.core.image_parts import CHANGE_PARTS, IMAGE_PARTS, SECTIONS

if TYPE_CHECKING:

    from replay.query.image_sections import PartQuestion

# state's sections, in output order: the ones it always had, then the rest of the image (replay.core.image_parts)
CLUSTER_SECTIONS = ("brokers", "topics", "partitions")
IMAGE_SECTIONS = SECTIONS
ALL_SECTIONS = (*CLUSTER_SECTIONS, *IMAGE_SECTIONS)
TOPIC_SECTIONS = (*CLUSTER_SECTIONS, "configs")  # what `state --topic T` shows unless --section says otherwise


def parse_sections(text: str | None) -> tuple[str, ...]:
    """``configs,acls`` → those sections in output order (any case); all of them without ``--section``."""
    if text is None:
        return ALL_SECTIONS
    by_lower = {name.lower(): name for name in ALL_SECTIONS}
    wanted = {part.strip().lower() for part in text.split(",") if part.strip()}
    unknown = sorted(wanted - set(by_lower))
    if unknown or not wanted:
        usage_error(f"unknown --section {', '.join(unknown) or repr(text)}: the sections are "
                    f"{', '.join(ALL_SECTIONS)}")
    return tuple(name for name in ALL_SECTIONS if name.lower() in wanted)


def image_table_lines(rows: Callable[[str], Iterable[Any]], sections: tuple[str, ...]) -> list[str]:
    """The image's parts among ``sections`` as tables, each under ``name (count)`` (``rows``: a part's rows,
    sorted, Spark's or plain mappings)."""
    from replay.query.image_sections import NO_PRODUCER_ID

    lines: list[str] = []
    for section in sections:
        if section not in IMAGE_SECTIONS:
            continue
        part = IMAGE_PARTS[section]
        table = [[*part.cells(r), r["valid_from_offset"], r["cause_type"]] for r in rows(section)]
        if section == "producerIds":
            lines += ["", f"producerIds: nextProducerId {table[0][0] if table else NO_PRODUCER_ID}"
                      + (f" (since offset {table[0][-2]}, {table[0][-1]})" if table
                         else " (no ProducerIdsRecord yet)")]
            continue
        lines += ["", f"{section} ({len(table)})"]
        if table:
            lines += table_lines((*part.headers, "SINCE", "CAUSE"), table)
    return lines


def image_json_sections(rows: Callable[[str], Iterable[Any]],
                        json_items: Callable[[str, tuple[tuple[str, str], ...]], Iterator[str]],
                        sections: tuple[str, ...]) -> dict[str, Iterator[str] | str]:
    """The image's parts among ``sections`` in Kafka's JSON names (``producerIds`` an object, the rest lists):
    ``json_items`` writes a part's rows, ``rows`` gives the producer ids' one row."""
    from replay.query.image_sections import next_producer_id_of

    out: dict[str, Iterator[str] | str] = {}
    for section in sections:
        if section == "producerIds":
            out[section] = json.dumps({"nextProducerId": next_producer_id_of(next(iter(rows(section)), None))})
        elif section in IMAGE_SECTIONS:
            out[section] = json_items(section, IMAGE_PARTS[section].fields)
    return out


# --- history of a part ---------------------------------------------------------------------------

PART_HISTORY_HEAD = ("FROM", "TO", "TIME (UTC)", "CAUSE", "RECORD TYPE")


def part_history_lines(section: str, versions: Iterable[Any], title: str) -> list[str]:
    """One part's versions (Spark's rows or plain mappings, oldest first) as a table under ``title: N version(s)``."""
    part = IMAGE_PARTS[section]
    rows = [[r["valid_from_offset"], r["valid_to_offset"], iso_ms(r["valid_from_time_ms"]), r["cause_offset"],
             r["cause_type"], *part.cells(r)] for r in versions]
    lines = [f"{title}: {len(rows)} version(s); TO empty = still current"]
    return lines + list(table_lines((*PART_HISTORY_HEAD, *part.headers), rows)) if rows else lines


def image_history(questions: list[PartQuestion], fmt: OutputFormat, rows: Callable[[str], Iterable[Any]],
                  json_items: Callable[[str], Iterator[str]]) -> None:
    """Print each part's versions asked (``rows``/``json_items``: a section's, as a table or as JSON lines)."""
    if fmt is OutputFormat.json:
        for question in questions:
            echo_lines(json_items(question.section))
        return
    lines: list[str] = []
    for question in questions:
        lines += [*([""] if lines else []), *part_history_lines(question.section, rows(question.section),
                                                                question.title)]
    echo_lines(lines)


# --- changes -------------------------------------------------------------------------------------

CHANGES_EPILOG = ("Who made a change is not in the log: KRaft's records say what changed, not which client or "
                  "principal asked for it (see the brokers' request and authorizer logs).\n\n"
                  "Examples:\n\n"
                  "  kraft-replay changes --from 8000 --to 9000\n\n"
                  "  kraft-replay changes --from 2026-03-02T10:00Z --part config,acl\n\n"
                  "  kraft-replay changes --format json | jq -c 'select(.part == \"scramCredential\")'")
ARROW = "→"
NOTHING = "(none)"  # the side of an addition or a removal that has no value


def change_line(row: Any) -> str:
    """``offset 8812 2026-03-02T10:14:03.120Z topic orders retention.ms 604800000 → 86400000 (ConfigRecord)``."""
    what = " ".join(text for text in (row["entity"], row["key"]) if text)
    old = NOTHING if row["old_value"] is None else row["old_value"]
    new = NOTHING if row["new_value"] is None else row["new_value"]
    record = f" ({row['record_type']})" if row["record_type"] else ""
    return f"offset {row['offset']} {iso_ms(row['time_ms'])} {what} {old} {ARROW} {new}{record}"


@query_command
def changes(
    since: Annotated[str | None, typer.Option(
        "--from", help="The first offset, or an ISO-8601 time (naive = UTC), to list changes from (inclusive)")]
    = None,
    until: Annotated[str | None, typer.Option(
        "--to", help="The last offset, or an ISO-8601 time, to list changes to (inclusive)")] = None,
    part: Annotated[str | None, typer.Option(
        "--part", help=f"Only these parts, comma-separated: {', '.join(CHANGE_PARTS)}")] = None,
    fmt: FormatOption = OutputFormat.table,
    lake: LakeOption = None,
    cluster_id: ClusterOption = None,
    master: MasterOption = None,
    remote: RemoteOption = None,
) -> None:
    """Every change to the image between two offsets or times: what, old value → new value, offset, time and
    record type. Who made it is not in the log."""
    from lakehouse.lake import Lake
    from replay.query.changes import CHANGE_FIELDS, PARTS, bound, change_log

    from_offset, from_time = bound(since)
    to_offset, to_time = bound(until)
    parts = PARTS if part is None else tuple(p.strip() for p in part.split(",") if p.strip())
    log = change_log(spark_session(master, remote), Lake(lake), cluster_id, from_offset, to_offset, from_time,
                     to_time, parts)
    if fmt is OutputFormat.json:  # by Python: the log's `entity` is a label, not a quota's entity list
        echo_lines(json.dumps({name: row[column] for column, name in CHANGE_FIELDS}, ensure_ascii=False)
                   for row in log.toLocalIterator())
        return
    echo_lines(change_line(row) for row in log.toLocalIterator())


IMAGE_COMMANDS: list[tuple[Callable[..., None], str]] = [(changes, CHANGES_EPILOG)]
