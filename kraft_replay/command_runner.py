"""The resident command runner: one Python process, every module of the product and of Spark Connect's client
imported once, that runs each command handed to it (``kraft_replay.launcher``) in a child it forks, so that no
command pays Python's imports again (a Java-free ``state`` as much as a replay).

Started by ``kraft-replay server start`` beside the resident Spark server, stopped with it
(``kraft_replay.resident_runner``: its record, socket and log in the server directory). Forking is safe because the
runner only imports: it starts no thread, no Spark Connect channel and no delta-rs runtime, and serves one connection
at a time from its only thread. A child becomes the command: the caller's standard streams, working directory,
environment and arguments; its own Spark session (released as it exits, as a command's is); the caller forwards its
signals to it.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import io
import json
import os
import pkgutil
import signal
import socket
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kraft_replay.resident_runner import (
    FORWARDED_SIGNALS,
    LENGTH,
    PACKAGES,
    RUNNER_FILE,
    RUNNER_SOCKET,
    STANDARD_STREAMS,
    runner_record,
    sources_stamp,
    write_record,
)

MAX_REQUEST = 1 << 20  # a request's arguments and environment, in bytes
BACKLOG = 16
# Spark Connect's client, which pyspark imports only when a command's first DataFrame needs it
SPARK_CONNECT_PACKAGE = "pyspark.sql.connect"
SKIPPED_MODULES = ("kraft_replay.command_runner", "kraft_replay.launcher")  # the runner itself, its caller
# what the libraries import only when a command first uses them: typer's parsing of a command's options (pydantic),
# delta-rs' writer and file systems, Spark Connect's channel; imported by the runner, so that no command pays them
LIBRARIES_IMPORTED_LATE = ("typer._adapters", "typer._click.decorators", "pydantic.plugin._loader", "pyarrow.dataset",
                           "pyarrow.pandas_compat", "deltalake.fs", "grpc._channel")
EXIT_CRASHED = 1  # what a child that raised out of the command exits with


def preload() -> list[str]:
    """Import every module of the product's packages and of Spark Connect's client, and what the libraries import
    late (``LIBRARIES_IMPORTED_LATE``), and build the command line (``kraft_replay.cli.click_command``); the names
    that failed to import."""
    failed: list[str] = []
    packages = [*PACKAGES, SPARK_CONNECT_PACKAGE]
    for package in packages:
        module = importlib.import_module(package)
        for info in pkgutil.walk_packages(module.__path__, f"{package}."):
            if info.name in SKIPPED_MODULES or ".tests" in info.name:
                continue
            try:
                importlib.import_module(info.name)
            except Exception:  # an optional extra this installation lacks: its commands import it themselves
                failed.append(info.name)
    for name in LIBRARIES_IMPORTED_LATE:
        try:
            importlib.import_module(name)
        except Exception:  # a library version without it: a command imports what it needs
            failed.append(name)
    from kraft_replay.cli import click_command

    click_command()
    return failed


def serve(directory: Path) -> None:
    """Preload, listen on the directory's socket, record this runner, and run each command handed over."""
    stamp = sources_stamp()  # before the imports: a file edited while they run makes the record stale, not wrong
    failed = preload()
    _log(f"imported {len(sys.modules)} modules ({len(failed)} not importable: {', '.join(failed) or 'none'})")
    if threading.active_count() != 1:
        _log(f"refusing to serve: {threading.active_count()} threads after the imports (forking would be unsafe)")
        return
    path = directory / RUNNER_SOCKET
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    path.chmod(0o600)  # only this user hands commands over: they run as this user
    listener.listen(BACKLOG)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the children are reaped as they end
    signal.signal(signal.SIGTERM, lambda _number, _frame: sys.exit(0))
    record = {"pid": os.getpid(), "python": sys.executable, "sources": stamp, "socket": str(path),
              "started_at": datetime.now(UTC).isoformat(timespec="seconds")}
    write_record(directory, record)
    try:
        while True:
            connection, _address = listener.accept()
            _hand_to_child(listener, connection)
    finally:
        path.unlink(missing_ok=True)
        if (runner_record(directory) or {}).get("pid") == os.getpid():
            (directory / RUNNER_FILE).unlink(missing_ok=True)


def _hand_to_child(listener: socket.socket, connection: socket.socket) -> None:
    """Fork the child that runs the command the connection asks for; the runner keeps nothing of it."""
    with connection:
        try:
            request, streams = _receive(connection)
        except (OSError, ValueError) as error:
            _log(f"refused a request: {error}")
            return
        try:
            child = os.fork()
            if child == 0:
                listener.close()
                _run_child(connection, request, streams)
            _log(f"child {child}: kraft-replay {' '.join(request['argv'])} (in {request['cwd']})")
        finally:
            for stream in streams:
                os.close(stream)


def _receive(connection: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """The request and the caller's three standard streams (file descriptors passed over the socket)."""
    data, streams, _flags, _address = socket.recv_fds(connection, MAX_REQUEST, len(STANDARD_STREAMS))
    if len(streams) != len(STANDARD_STREAMS):
        for stream in streams:
            os.close(stream)
        raise ValueError(f"expected {len(STANDARD_STREAMS)} file descriptors, got {len(streams)}")
    if len(data) < LENGTH.size:
        raise ValueError("a request shorter than its length")
    (length,) = LENGTH.unpack_from(data)
    body = data[LENGTH.size:]
    while len(body) < length:
        more = connection.recv(length - len(body))
        if not more:
            raise ValueError(f"the request ended after {len(body)} of {length} bytes")
        body += more
    request = json.loads(body)
    if not isinstance(request, dict) or not {"argv", "cwd", "env"} <= request.keys():
        raise ValueError("a request without argv, cwd and env")
    return request, streams


def _run_child(connection: socket.socket, request: dict[str, Any], streams: list[int]) -> None:
    """Become the command (never returns): the caller's streams, directory and environment, then its exit code."""
    code = EXIT_CRASHED
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        # the caller's signals as a process of its own starts with them: ignored where the caller ignores them, Ctrl-C
        # as KeyboardInterrupt, the others by default
        ignored = set(request.get("ignored", ()))
        for number in FORWARDED_SIGNALS:
            if number in ignored:
                signal.signal(number, signal.SIG_IGN)
            elif number == signal.SIGINT:
                signal.signal(number, signal.default_int_handler)
            else:
                signal.signal(number, signal.SIG_DFL)
        for target, stream in zip(STANDARD_STREAMS, streams, strict=True):
            os.dup2(stream, target)
        sys.stdin, sys.stdout, sys.stderr = (_text_stream(0, "r"), _text_stream(1, "w"), _text_stream(2, "w"))
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        connection.sendall(json.dumps({"pid": os.getpid()}).encode() + b"\n")
        code = _command(["kraft-replay", *request["argv"]])
    finally:
        with contextlib.suppress(BaseException):
            atexit._run_exitfuncs()  # what the command registered: its Spark session's release
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        with contextlib.suppress(OSError):
            connection.sendall(json.dumps({"exit": code}).encode() + b"\n")
        os._exit(code)


def _command(argv: list[str]) -> int:
    """Run the command line as ``kraft_replay.cli`` does; its exit code."""
    from kraft_replay.cli import main

    sys.argv = argv
    try:
        main()
    except SystemExit as done:
        if done.code is None:
            return 0
        if isinstance(done.code, int):
            return done.code
        print(done.code, file=sys.stderr)
        return EXIT_CRASHED
    except KeyboardInterrupt:
        return 128 + signal.SIGINT
    return 0


def _text_stream(fd: int, mode: str) -> io.TextIOWrapper:
    """A standard stream on ``fd`` as Python makes it: line-buffered on a terminal, UTF-8, the fd left open."""
    raw = io.FileIO(fd, mode, closefd=False)
    interactive = raw.isatty()
    if mode == "r":
        return io.TextIOWrapper(io.BufferedReader(raw), encoding="utf-8", errors="surrogateescape")
    return io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8", errors="backslashreplace",
                            line_buffering=interactive, write_through=fd == 2)


def _log(message: str) -> None:
    print(f"{datetime.now(UTC).isoformat(timespec='seconds')} {message}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    serve(Path(sys.argv[1]))
