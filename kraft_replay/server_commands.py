"""``kraft-replay server``: start, ask about and stop the resident Spark server (``lakehouse.resident_server``)
that the other commands reuse instead of starting Spark each, and beside it the resident command runner
(``kraft_replay.command_runner``) that runs them without Python's imports.

Register with ``app.add_typer(server_app, name="server")``.
"""

from __future__ import annotations

from typing import Annotated

import typer

from kraft_replay.plumbing import EXIT_FAILURE, command_group, guarded_command
from lakehouse.server_dir import server_dir

server_app = command_group(
    "server",
    "A resident Spark server on this machine that the commands reuse (no Spark start per command).\n\n"
    "Example: kraft-replay server start; kraft-replay run DIR; kraft-replay server stop",
)

PortOption = Annotated[int | None, typer.Option("--port", min=1, max=65535, show_default=False,
                                                help="Its Spark Connect port on 127.0.0.1 (default: a free one)")]
DriverMemoryOption = Annotated[str | None, typer.Option(
    "--driver-memory", show_default=False,
    help="The server JVM's heap (default $KRAFT_REPLAY_DRIVER_MEMORY, else 2g), e.g. 4g")]
WarmUpOption = Annotated[bool, typer.Option(
    "--warm-up/--no-warm-up",
    help="Run a simulated cluster's first answer and an increment of it through the new server once, so that the "
         "first real commands find its JVM warm (a cold JVM runs a replay's plans at about half speed)")]
USING = "the commands without --master or --remote use it until `kraft-replay server stop`"
RUNNER_NOTE = "the commands run in children of it, with everything imported (KRAFT_REPLAY_NO_RUNNER=1: in their own)"


@server_app.command("start", epilog="Example: kraft-replay server start --driver-memory 4g")
@guarded_command
def start(port: PortOption = None, driver_memory: DriverMemoryOption = None, warm_up: WarmUpOption = True) -> None:
    """Start the resident Spark server (a Spark Connect server on 127.0.0.1), unless one runs already."""
    from lakehouse.resident_server import start_server

    server, started = start_server(port, driver_memory)
    typer.echo(f"{'started' if started else 'already running'}: resident Spark server {server.describe()}")
    if started and warm_up:
        from kraft_replay.warm_up import warm_up as run_warm_up

        typer.echo("warming up: a simulated cluster's log ingested, replayed and summarized, then an increment of it")
        run_warm_up(server.url)
    typer.echo(USING)
    from kraft_replay.resident_runner import start_runner

    runner = start_runner()
    typer.echo(f"command runner: pid {runner['pid']}, {RUNNER_NOTE}")


@server_app.command("status", epilog="Example: kraft-replay server status")
@guarded_command
def status() -> None:
    """Say whether a resident Spark server runs (exit 1 when none does)."""
    from lakehouse.resident_server import resident_server

    server = resident_server()
    if server is None:
        typer.echo("no resident Spark server (start one with `kraft-replay server start`)")
        raise typer.Exit(EXIT_FAILURE)
    typer.echo(f"running: resident Spark server {server.describe()}")
    outdated = server.outdated()
    typer.echo(f"not used: {outdated}; restart it (`kraft-replay server stop`, then start)" if outdated else USING)
    typer.echo(_runner_status())


def _runner_status() -> str:
    """Whether the command runner serves the commands of this installation, and why not."""
    from kraft_replay.resident_runner import runner_record, serves_this_installation

    record = runner_record(server_dir())
    if record is None:
        return "command runner: none (the commands import everything each; `kraft-replay server start` starts one)"
    if not serves_this_installation(record):
        return (f"command runner: pid {record['pid']}, not used: it imported other package files than this "
                "installation's; restart it (`kraft-replay server stop`, then start)")
    return f"command runner: pid {record['pid']}, {RUNNER_NOTE}"


@server_app.command("stop", epilog="Example: kraft-replay server stop")
@guarded_command
def stop() -> None:
    """Stop the resident Spark server and the command runner (safe when none runs)."""
    from kraft_replay.resident_runner import stop_runner
    from lakehouse.resident_server import stop_server

    runner = stop_runner()
    server = stop_server()
    typer.echo(f"stopped: resident Spark server {server.describe()}" if server else "no resident Spark server ran")
    if runner is not None:
        typer.echo(f"stopped: command runner pid {runner['pid']}")
