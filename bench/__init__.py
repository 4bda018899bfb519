"""Benchmarks: run as modules (``python -m bench.bench_decode``) so they import the checkout's packages."""
