#!/usr/bin/env bash
# Issue 20's whole measurement in one command (`make bench` runs it): at 1 M, 10 M and 30 M records (1,000 brokers,
# 1,000 topics x 100 partitions), on the default engine with a 2 GiB driver heap, the floor, Kafka 4.4.0's own fold,
# the naive re-fold and the replay side by side, one table per scale and the growth table (bench/bench_replay.py).
# Logs are simulated once under $BENCH_OUT (default /tmp/kraft-bench-growth) and reused; extra options are passed on
# (e.g. --scales 1000000 for one scale). First, issue 42's first answer and increment of a real-sized log beside
# Kafka's metadata shell (bench/bench_first_answer.py, its log under $BENCH_OUT/first-answer).
set -euo pipefail
cd "$(dirname "$0")/.."
nice -n 19 "${PYTHON:-.venv/bin/python}" -m bench.bench_first_answer \
    --out "${BENCH_OUT:-/tmp/kraft-bench-growth}/first-answer" --reuse-logs
exec nice -n 19 "${PYTHON:-.venv/bin/python}" -m bench.bench_replay --scales 1000000,10000000,30000000 \
    --brokers 1000 --topics 1000 --partitions-per-topic 100 --engines delta-spark --kafka 4.4.0 \
    --driver-memory 2g --out "${BENCH_OUT:-/tmp/kraft-bench-growth}" --reuse-logs "$@"
