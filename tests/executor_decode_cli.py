"""``python -m tests.executor_decode_cli ARGS``: kraft-replay's CLI, except that ``ingest`` decodes Kafka segments of
any size on Spark's executors (``lakehouse.spark_decode``: ``mapInArrow`` in the executors' Python workers).

The CLI does that only for segment inputs of 32 MiB or more (``lakehouse.ingest.SPARK_DECODE_MIN_BYTES``) and has
no option to lower the threshold; a test log of that size would take minutes to replay on a 2-core machine. Only
the threshold differs: the command line, the session and the code path are the CLI's own.
"""

from __future__ import annotations

import dataclasses

import lakehouse.ingest
from kraft_replay.cli import main


@dataclasses.dataclass(frozen=True)
class ExecutorDecodeOptions(lakehouse.ingest.IngestOptions):
    """The CLI's ingest options with every segment input decoded by the executors."""

    spark_decode_min_bytes: int = 0


if __name__ == "__main__":
    # `kraft_replay.lake_commands.ingest` imports IngestOptions from lakehouse.ingest when it runs.
    lakehouse.ingest.IngestOptions = ExecutorDecodeOptions  # type: ignore[misc]
    main()
