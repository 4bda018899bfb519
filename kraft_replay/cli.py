"""The ``kraft-replay`` command line: only the app, assembled from the command modules.

The commands live in ``*_commands.py`` by job; the exit codes, the shared options, ``guarded`` and the output
helpers are in ``kraft_replay.plumbing``. No module imports this one.
"""

from __future__ import annotations

import functools

import typer.main
from typer.core import TyperGroup

from kraft_replay.config_commands import CONFIG_COMMANDS
from kraft_replay.incident_commands import INCIDENT_COMMANDS
from kraft_replay.lake_commands import INGEST_EPILOG, ingest, lake_app
from kraft_replay.log_commands import LOG_COMMANDS
from kraft_replay.plumbing import command_group
from kraft_replay.replay_commands import REPLAY_COMMANDS
from kraft_replay.run_commands import DEMO_EPILOG, RUN_COMMANDS, demo
from kraft_replay.server_commands import server_app
from kraft_replay.simulate_command import SIMULATE_EPILOG, simulate

app = command_group(
    "kraft-replay",
    "Replay Apache Kafka KRaft metadata logs: the cluster's state at any offset or time.\n\n"
    "Example: kraft-replay dump /var/lib/kafka/data/__cluster_metadata-0 --format table",
)

for _command, _epilog in LOG_COMMANDS:
    app.command(epilog=_epilog)(_command)
app.command(epilog=DEMO_EPILOG)(demo)
app.command(epilog=SIMULATE_EPILOG)(simulate)
app.command(epilog=INGEST_EPILOG)(ingest)
app.add_typer(lake_app, name="lake")
app.add_typer(server_app, name="server")
for _command, _epilog in [*REPLAY_COMMANDS, *RUN_COMMANDS, *INCIDENT_COMMANDS, *CONFIG_COMMANDS]:
    app.command(epilog=_epilog)(_command)


@functools.cache
def click_command() -> TyperGroup:
    """The command group typer builds from ``app`` on every call of ``app()``: built once, so that the resident
    command runner builds it before it forks (``kraft_replay.command_runner``) and no command pays it. Called
    directly, it runs as ``app()`` does: ``command_group`` turned typer's pretty tracebacks off."""
    command = typer.main.get_command(app)
    assert isinstance(command, TyperGroup)
    return command


def main() -> None:
    click_command()()


if __name__ == "__main__":
    main()
