"""The lake's commit layer: every write to a table, and Delta's optimistic concurrency for the writers that retry.

Concurrency: every append goes through `LakeCommits.commit_new_rows`, which computes what to add against one
pinned table version v and commits it only if nothing else committed since: with delta-rs, whichever engine the
lake has, as exactly version v + 1 (retries off: a put-if-absent of the next log entry), recording Delta's
application transaction (``txn``: the table's writer id, v + 1) as delta-spark's idempotent writes record theirs.
When another writer committed first, the rows are recomputed against the new version and the commit retried
(`LakeCommits.commit_with_retry`), so no two writers can both decide that the same offset is new.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import pyarrow as pa
from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError
from deltalake.transaction import AddAction, RemoveAction
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import from_arrow_schema

from lakehouse.delta_commit import Rows, commit_at_version, commit_parquet, removed_file, stage_parquet
from lakehouse.lake_root import LakeError, LakeRoot, table_arrow_schema, utc_now
from lakehouse.tables import AVRO_SCHEMAS, SCHEMAS

MAX_COMMIT_ATTEMPTS = 50
ROWS_PER_FILE = 1_000_000
OPERATION_KEY = "kraftReplay.operation"
ROWS_KEY = "kraftReplay.rowsAdded"
INGEST_KEY = "kraftReplay.ingestId"
COMMIT_KEY = "kraftReplay.commit"  # a token naming one commit: finds its version among concurrent ones
CHANGE_DATA_FEED = "delta.enableChangeDataFeed"
Result = TypeVar("Result")


class Conflict:
    """What a commit attempt returns when it lost against a concurrent commit: recompute and try again."""


CONFLICT = Conflict()


@dataclass(frozen=True)
class CommitOutcome:
    """What one `commit_new_rows` did: the version it created (None: nothing to add) and rows added."""

    version: int | None
    rows_added: int
    attempts: int


class LakeCommits(LakeRoot):
    """The writing half of `lakehouse.lake.Lake`."""

    def write(self, rows: Rows, name: str, mode: Literal["append", "overwrite"] = "append",
              split_by: str | None = None, change_data_feed: bool = False) -> int:
        """Write a DataFrame (or an Arrow table the driver holds) to a table (created if missing) as one commit;
        returns the new version.

        A plain write, for state tables computed elsewhere (the replay's): no deduplication. Spark (or the driver)
        writes the Parquet files, at most ``ROWS_PER_FILE`` rows each from the driver, and delta-rs commits them,
        whichever engine the lake has: most of a small table's write through delta-spark is its commit's fixed
        latency, and a replay commits many tables (issue 42, measured in BENCHMARKS.md). ``split_by``: a boolean
        column (not stored) whose true and false rows go to separate directories (``replay.store.layout``).
        ``change_data_feed``: Delta's Change Data Feed on for the table, so delta-spark's ``table_changes`` answers
        what each replay changed (from the files each commit adds and removes).
        """
        configuration = {CHANGE_DATA_FEED: "true"} if change_data_feed else None
        version = commit_parquet(rows, self.path(name), mode, split_by=split_by, configuration=configuration,
                                 rows_per_file=ROWS_PER_FILE)
        self.maybe_checkpoint(name, version)
        return version

    def replace_files(self, rows: Rows, name: str, remove: list[str], version: int,
                      split_by: str | None = None) -> int:
        """One commit that replaces the rows ``read_files`` gave (the files ``remove``, paths relative to the
        table, all in ``version``) with ``rows`` (their replacement plus any new rows; a DataFrame, or an Arrow
        table the driver holds); the other files stay as they are. Refused when the table moved past ``version``
        (the replaced rows were chosen from it). Committed by delta-rs whichever engine the lake has, as
        ``write``."""
        root = self.path(name)
        table = DeltaTable(root)
        if int(table.version()) != version:
            raise LakeError(f"{name}: another writer committed after version {version}: run the replay again")
        schema = table_arrow_schema(table)
        # the rows replace rows of the table: its own columns (no schema request to Spark)
        staging, adds = stage_parquet(rows, root, split_by=split_by, columns=from_arrow_schema(schema),
                                      rows_per_file=ROWS_PER_FILE)
        files = pa.table(table.get_add_actions(flatten=True))
        sizes = dict(zip(files.column("path").to_pylist(), files.column("size_bytes").to_pylist(), strict=True))
        now_ms = int(time.time() * 1000)
        actions: list[AddAction | RemoveAction] = [*adds]
        actions += [removed_file(path, sizes.get(path), now_ms) for path in remove]
        try:
            version = commit_at_version(table, actions, schema, {OPERATION_KEY: "replace files"})
        except CommitFailedError:
            self._delete_dir(f"{root}/{staging}")
            raise LakeError(f"{name}: another writer committed while the replay replaced its files: "
                            "run the replay again") from None
        self.maybe_checkpoint(name, version)
        return version

    def commit_new_rows(self, name: str, build: Callable[[DeltaTable], DataFrame | None], *,
                        operation: str, ingest_id: str | None = None) -> CommitOutcome:
        """Optimistic append: `build(table)` computes the rows to add against that pinned version.

        Executors write the rows as Parquet, the driver commits them with delta-rs as exactly the next version,
        whichever engine the lake has (through delta-spark, an idempotent write's commit cost a new lake's `run`
        about a second: issue 42, BENCHMARKS.md); when another writer committed first, the staged files are deleted
        and `build` runs again against the new version (so deduplication always sees everything committed before
        us).
        """
        self.ensure_table(name)
        root = self.path(name)

        def attempt(table: DeltaTable, number: int) -> CommitOutcome | Conflict:
            rows = build(table)
            if rows is None:
                return CommitOutcome(None, 0, number)
            staging, actions = stage_parquet(rows, root)
            added = sum(json.loads(action.stats)["numRecords"] for action in actions)
            if not actions:
                self._delete_dir(f"{root}/{staging}")
                return CommitOutcome(None, 0, number)
            metadata = {OPERATION_KEY: operation, ROWS_KEY: str(added)}
            if ingest_id:
                metadata[INGEST_KEY] = ingest_id
            try:
                version = commit_at_version(table, list(actions), SCHEMAS.get(name) or table_arrow_schema(table),
                                            metadata, app_transaction=(writer_id(name), table.version() + 1))
            except CommitFailedError:
                self._delete_dir(f"{root}/{staging}")
                return CONFLICT
            self.maybe_checkpoint(name, version)
            return CommitOutcome(version, added, number)

        return self.commit_with_retry(name, attempt, gave_up=f"{name}: gave up after {MAX_COMMIT_ATTEMPTS} attempts: "
                                      "other writers keep committing")

    def commit_with_retry(self, name: str, attempt: Callable[[DeltaTable, int], Result | Conflict], *,
                          gave_up: str, backoff_cap: int | None = 10) -> Result:
        """Delta's optimistic concurrency, for every writer that retries: ``attempt(table, n)`` computes its
        commit against the table's latest version and makes it, or returns ``CONFLICT`` when another writer
        committed first (having cleaned up what it staged); then, after a random backoff growing with n (up to
        ``backoff_cap`` times; None: no cap), it runs again against the new version, at most
        ``MAX_COMMIT_ATTEMPTS`` times before `LakeError` ``gave_up``."""
        root = self.path(name)
        for number in range(1, MAX_COMMIT_ATTEMPTS + 1):
            result = attempt(DeltaTable(root), number)
            if not isinstance(result, Conflict):
                return result
            time.sleep(random.uniform(0.05, 0.3) * (number if backoff_cap is None else min(number, backoff_cap)))
        raise LakeError(gave_up)

    # --- avro_schemas ----------------------------------------------------------------------------

    def register_schemas(self) -> int | None:
        """Add the shipped `.avsc` of every record type missing from `avro_schemas`; returns the version.

        The rows are a few dozen the driver holds: delta-rs commits them from the driver whichever engine the lake
        has (through delta-spark, a Spark write and its commit's fixed latency: a tenth of a new lake's `run`;
        issue 42, BENCHMARKS.md), as exactly the next version, recomputed when another writer committed first."""
        from records.avro_codec import schema_id, schema_text
        from records.definitions import definitions

        self.ensure_table(AVRO_SCHEMAS)
        root = self.path(AVRO_SCHEMAS)

        def missing(table: DeltaTable) -> list[dict[str, Any]]:
            stored = set(table.to_pyarrow_table(columns=["schema_id"]).column("schema_id").to_pylist())
            now = utc_now()
            return [{"schema_id": schema_id(name), "record_type": name, "api_key": message.api_key,
                     "control_type": message.control_type, "kafka_versions": str(message.valid_versions),
                     "avsc": schema_text(name), "registered_time": now}
                    for name, message in sorted(definitions().items()) if schema_id(name) not in stored]

        def attempt(table: DeltaTable, _number: int) -> int | Conflict | None:
            rows = missing(table)
            if not rows:
                return None
            data = pa.Table.from_pylist(rows, schema=SCHEMAS[AVRO_SCHEMAS])
            try:
                from deltalake import CommitProperties, write_deltalake

                write_deltalake(table, data, mode="append", commit_properties=CommitProperties(
                    custom_metadata={OPERATION_KEY: "register-schemas", ROWS_KEY: str(len(rows))},
                    max_commit_retries=0))
            except CommitFailedError:
                return CONFLICT
            return int(DeltaTable(root).version())

        return self.commit_with_retry(
            AVRO_SCHEMAS, attempt, gave_up="avro_schemas: gave up registering schemas: other writers keep committing",
            backoff_cap=None)

def writer_id(name: str) -> str:
    """The application id of every ``commit_new_rows`` commit to a table (its Delta ``txn`` action)."""
    return f"kraft-replay/{name}"


def user_metadata(commit: Mapping[str, Any]) -> dict[str, Any]:
    """delta-spark keeps a commit's own keys as JSON in ``userMetadata`` (delta-rs: top-level keys)."""
    text = commit.get("userMetadata")
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


