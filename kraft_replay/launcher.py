"""The ``kraft-replay`` entry point: a command is handed to the resident command runner when one serves this
installation (``kraft_replay.command_runner``: a process that has every module imported and forks a child per
command), else run in this process.

Handed over, a command pays no Python imports (about a second of every command's time on this machine kind:
BENCHMARKS.md, issue 42); its child gets this process's arguments, working directory, environment and its standard
input, output and error themselves (a terminal stays a terminal), and this process forwards the signals it gets
(Ctrl-C) and exits with the child's exit code. Only the standard library is imported before that.

The runner is used only when its record says it runs, on this Python, from the same package files as this process
would import (``sources_stamp``): after an upgrade or an edit, commands run in their own process until the runner
is restarted (``kraft-replay server stop``, then start). ``KRAFT_REPLAY_NO_RUNNER=1`` runs every command here.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
from collections.abc import Iterable
from pathlib import Path
from types import FrameType

from kraft_replay.resident_runner import (
    FORWARDED_SIGNALS,
    LENGTH,
    NO_RUNNER_ENV,
    RUNNER_SOCKET,
    STANDARD_STREAMS,
    runner_record,
    serves_this_installation,
)
from lakehouse.server_dir import server_dir

EXIT_NO_ANSWER = 1  # the child ended without saying its exit code (killed)


def ignored_signals() -> list[int]:
    """The forwarded signals this process ignores (a background job's SIGINT and SIGQUIT): its child ignores them."""
    return [int(number) for number in FORWARDED_SIGNALS if signal.getsignal(number) == signal.SIG_IGN]


def encode_request(arguments: list[str]) -> bytes:
    """What the runner's child needs of this process besides its standard streams."""
    body = json.dumps({"argv": arguments, "cwd": os.getcwd(), "env": dict(os.environ),
                       "ignored": ignored_signals()}).encode()
    return LENGTH.pack(len(body)) + body


def _connected(directory: Path) -> socket.socket | None:
    """A connection to the runner serving this installation, or None."""
    if os.environ.get(NO_RUNNER_ENV):
        return None
    record = runner_record(directory)
    if record is None or not serves_this_installation(record):
        return None
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(str(directory / RUNNER_SOCKET))
    except OSError:
        connection.close()
        return None
    return connection


def handed_over(arguments: list[str]) -> int | None:
    """Run the command in the runner's child: its exit code, or None when no runner takes it."""
    try:
        connection = _connected(server_dir())
    except OSError:
        return None
    if connection is None:
        return None
    with connection:
        try:
            socket.send_fds(connection, [encode_request(arguments)], list(STANDARD_STREAMS))
        except OSError:
            return None
        return _answer(connection.makefile("r", encoding="utf-8"))


def _answer(answers: Iterable[str]) -> int:
    """Wait for the child's exit code, forwarding the signals this process gets to the child meanwhile."""
    child: list[int] = []

    def forward(number: int, _frame: FrameType | None) -> None:
        if child:
            os.kill(child[0], number)

    ignored = ignored_signals()
    for number in FORWARDED_SIGNALS:
        if number not in ignored:
            signal.signal(number, forward)
    for line in answers:
        message = json.loads(line)
        if "pid" in message:
            child.append(int(message["pid"]))
        elif "exit" in message:
            return int(message["exit"])
    print("kraft-replay: the command's process ended without an exit code (killed?)", file=sys.stderr)
    return EXIT_NO_ANSWER


def main() -> None:
    code = handed_over(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from kraft_replay.cli import main as run_here

    run_here()


if __name__ == "__main__":
    main()
