"""The simulated logs the benchmarks share: one layout under ``--out`` so that a log generated once (10 M records
take a while) serves every benchmark that folds or replays it.

``OUT/log/__cluster_metadata-0`` holds N records of the ``random`` scenario, ``OUT/more/...`` the next 1 % (for
an incremental replay), ``OUT/sizes.json`` the sizes they were made with and the counts written.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from records.model import LogEntry
from simulator import ScenarioOptions, restart_offset, run_scenario, whole_transactions, write_log

SEED = 11
# What the random mix writes: since issue 19 every part of the image (configs, client quotas, ACLs, SCRAM users,
# delegation tokens, producer-id blocks) besides the cluster's partitions and brokers. A log an older mix wrote has
# other sizes, so ``--reuse-logs`` does not take it for one of these.
MIX = "every-image-part"


class LogMismatchError(Exception):
    """``--out`` holds a log of other sizes, which the caller chose not to replace."""


def add_log_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that name a shared log: its sizes, ``--out`` and ``--reuse-logs``."""
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--brokers", type=int, default=100)
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--partitions-per-topic", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path("/tmp/kraft-bench-replay"))
    parser.add_argument("--reuse-logs", action="store_true",
                        help="use the log segments an earlier run (of any benchmark) made with the same sizes")


def sizes_of(records: int, brokers: int, topics: int, partitions_per_topic: int) -> dict[str, int | str]:
    return {"records": records, "brokers": brokers, "topics": topics, "partitions_per_topic": partitions_per_topic,
            "seed": SEED, "mix": MIX}


def simulated_log(out: Path, sizes: dict[str, Any], *, reuse: bool, replace: bool = True) -> tuple[int, int]:
    """(records in ``OUT/log``, records in ``OUT/more``): the log of ``sizes``, reused when ``reuse`` and ``OUT``
    holds one of the same sizes, else generated anew. ``replace`` False: never delete an ``OUT`` that exists (it
    may hold another log and a lake built from it), raise :class:`LogMismatchError` instead."""
    earlier = _earlier(out)
    if reuse and earlier.get("sizes") == sizes:
        return earlier["count"], earlier["more"]
    if out.exists() and not replace:
        raise LogMismatchError(
            f"{out} exists and holds {earlier.get('sizes', 'no benchmark log')}, not {sizes}: pass --reuse-logs "
            "with the sizes it was made with, or another --out")
    return _simulate(out, sizes, lambda entries: itertools.islice(entries, sizes["records"]),
                     lambda entries: itertools.islice(entries, max(1, sizes["records"] // 100)))


def _earlier(out: Path) -> dict[str, Any]:
    """What ``OUT/sizes.json`` says of the log ``OUT`` holds (empty: none)."""
    sizes_file = out / "sizes.json"
    return json.loads(sizes_file.read_text()) if sizes_file.exists() else {}


def _simulate(out: Path, sizes: dict[str, Any], first: Callable[[Iterator[LogEntry]], Iterator[LogEntry]],
              then: Callable[[Iterator[LogEntry]], Iterator[LogEntry]]) -> tuple[int, int]:
    """A new ``OUT``: the random scenario of ``sizes``, its ``first`` entries in ``OUT/log``, the entries ``then``
    takes of the rest in ``OUT/more``, both counts in ``OUT/sizes.json``."""
    shutil.rmtree(out, ignore_errors=True)
    options = ScenarioOptions(brokers=sizes["brokers"], topics=sizes["topics"],
                              partitions_per_topic=sizes["partitions_per_topic"], events=10**9, seed=sizes["seed"],
                              cluster_restart_at=sizes.get("cluster_restart_at", 0))
    run = run_scenario("random", options)
    generated = run.entries()
    count, _ = write_log(first(generated), out / "log", "segments", cluster_id=run.sim.cluster_id, node_id=3000)
    more, _ = write_log(then(generated), out / "more", "segments", cluster_id=run.sim.cluster_id, node_id=3000)
    (out / "sizes.json").write_text(json.dumps({"sizes": sizes, "count": count, "more": more}))
    return count, more


def metadata_log(out: Path) -> tuple[Path, int]:
    """``OUT/log/__cluster_metadata-0`` (the N records) and the bytes of its segments."""
    log_dir = out / "log" / "__cluster_metadata-0"
    return log_dir, sum(p.stat().st_size for p in log_dir.glob("*.log"))


def real_like_log(out: Path, sizes: dict[str, Any], *, reuse: bool) -> tuple[int, int]:
    """(records in ``OUT/log``, records in ``OUT/more``): a data directory the size of a real cluster's log (issue
    42: a few brokers, tens of thousands of records, the random mix with a whole-cluster restart
    (``simulator.restart_offset``): its fences, leaderless partitions and elections), and the next
    ``sizes["more"]`` records, each ending between metadata transactions. Reused as :func:`simulated_log`."""
    sizes = {**sizes, "cluster_restart_at": restart_offset(sizes["records"])}
    earlier = _earlier(out)
    if reuse and earlier.get("sizes") == sizes:
        return earlier["count"], earlier["more"]
    return _simulate(out, sizes, lambda entries: whole_transactions(entries, sizes["records"]),
                     lambda entries: whole_transactions(entries, sizes["more"]))
