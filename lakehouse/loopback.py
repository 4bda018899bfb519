"""Loopback ports: for the resident Spark server (``lakehouse.resident_server``) and the servers the tests start
themselves (Spark Connect, a standalone Spark cluster, Kafka)."""

from __future__ import annotations

import socket

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


def listening(port: int) -> bool:
    """True once a server accepts connections on 127.0.0.1:``port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((LOOPBACK, port)) == 0
