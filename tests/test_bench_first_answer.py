"""The first-answer benchmark's log (bench/logs.py, issue 42): a real-sized data directory that ends between
metadata transactions, as a settled controller's log does (Kafka's shell and loader wait for an open one's end)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from bench.logs import SEED, real_like_log
from records.kafka_constants import ABORT, BEGIN, END
from records.sources import read_entries
from simulator import ScenarioOptions, run_scenario, whole_transactions


def _open_transaction(types: list[str]) -> bool:
    state = False
    for name in types:
        state = name == BEGIN or (state and name not in (END, ABORT))
    return state


def test_a_cut_inside_a_transaction_goes_on_to_its_end() -> None:
    entries = list(itertools.islice(run_scenario("random", ScenarioOptions(
        brokers=3, topics=4, partitions_per_topic=2, events=10**9, seed=SEED)).entries(), 3000))
    types = [entry.type_name for entry in entries]
    inside = next(i for i in range(len(types)) if _open_transaction(types[:i + 1]))  # a cut in a transaction

    taken = list(whole_transactions(iter(entries), inside + 1))

    end = next(i for i in range(inside, len(types)) if types[i] in (END, ABORT))
    assert [entry.offset for entry in taken] == [entry.offset for entry in entries[:end + 1]]
    assert taken[-1].type_name in (END, ABORT) and not _open_transaction([e.type_name for e in taken])


def test_the_real_like_log_and_its_increment_follow_each_other(tmp_path: Path) -> None:
    sizes = {"records": 12_000, "more": 100, "brokers": 3, "topics": 4, "partitions_per_topic": 2, "seed": SEED}

    count, more = real_like_log(tmp_path, sizes, reuse=False)

    log = [entry.offset for entry in read_entries(tmp_path / "log")]
    increment = [entry.offset for entry in read_entries(tmp_path / "more")]
    assert count >= 12_000 and more >= 100
    assert log == list(range(count)) and increment == list(range(count, count + more))
    # the whole cluster restarted at 60 % of the log (simulator.restart_offset)
    assert json.loads((tmp_path / "sizes.json").read_text()) == {
        "sizes": {**sizes, "cluster_restart_at": 7200}, "count": count, "more": more}
    changes = [entry.record.data for entry in read_entries(tmp_path / "log") if entry.offset >= 7200
               and entry.type_name == "BrokerRegistrationChangeRecord"]
    assert [change["brokerId"] for change in changes if change["fenced"] == 1] == [1, 2, 3]  # then all back:
    assert [change["brokerId"] for change in changes if change["fenced"] == -1] == [1, 2, 3]
    assert real_like_log(tmp_path, sizes, reuse=True) == (count, more)  # reused: not simulated again
