"""What every command shares: exit codes, the options (each declared once, with one help text), ``guarded``
and the command decorators that run a body under it (``@guarded_command``, ``@query_command``), the Spark
session, and the output helpers. Command modules import from here, never from ``kraft_replay.cli``
(which only assembles the app) nor each other's private names.

Exit codes: 0 success, 1 unexpected failure, 2 bad usage, 3 bad input (the message names the file, line or
byte, and offset). Errors never print a traceback unless ``KRAFT_REPLAY_DEBUG=1``.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import logging
import os
import shutil
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, ParamSpec, TypeVar

import typer

from kraft_replay.progress import Stages, stage_progress
from records.errors import RecordsError
from records.redaction import REDACTED

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_BAD_INPUT = 3

Returned = TypeVar("Returned")
Parameters = ParamSpec("Parameters")

# --- options -------------------------------------------------------------------------------------

LakeOption = Annotated[str | None, typer.Option(
    "--lake", envvar="KRAFT_REPLAY_LAKE", show_default=False,
    help="Lake root: a directory or an object-store URI (default ./kraft-lake)")]
MasterOption = Annotated[str | None, typer.Option(
    "--master", help="Spark master URL (default local[*], or $KRAFT_REPLAY_SPARK_MASTER)")]
RemoteOption = Annotated[str | None, typer.Option(
    "--remote", help="Spark Connect URL, e.g. sc://host:15002 (default $SPARK_REMOTE)")]
QuietOption = Annotated[bool, typer.Option(
    "--quiet", "-q", help="No progress display (it is also hidden when the output is not a terminal)")]
ClusterOption = Annotated[str | None, typer.Option(
    "--cluster-id", help="The cluster to ask about; needed only when the lake holds several")]
# Reading a log (dump, export, ingest, run): the id to use when the log's directory does not name one.
SourceClusterOption = Annotated[str | None, typer.Option(
    "--cluster-id", help="Cluster id when meta.properties does not give one (overrides it)")]
# dump and export list a damaged batch on stderr; ingest and run also record it in the lake.
SkipCorruptOption = Annotated[bool, typer.Option(
    "--skip-corrupt", help="Skip damaged batches (each one is listed) instead of stopping.")]
IngestSkipCorruptOption = Annotated[bool, typer.Option(
    "--skip-corrupt", help="Skip damaged batches (each one is recorded in ingest_rejects) instead of stopping")]
# dump and export: what they write of a secret.
KeepSecretsOption = Annotated[bool, typer.Option(
    "--keep-secrets", help=f"Write sensitive config values and SCRAM salts and keys as they are in the log, not "
                           f"{REDACTED} (as Kafka's RecordRedactor prints them). A warning goes to stderr.")]
# configs and whatif: the state at a time instead of at an --offset, and the static configs not in the log.
AtTimeOption = Annotated[str | None, typer.Option("--time", help="…or the state at this ISO-8601 time")]
BrokerConfigOption = Annotated[Path | None, typer.Option(
    "--broker-config", help="The active controller's server.properties (static configs are not in the log)")]
StaticOption = Annotated[list[str] | None, typer.Option(
    "--static", help="A static config KEY=VALUE of the controller's server.properties (repeatable)")]


class OutputFormat(StrEnum):
    table = "table"
    json = "json"


FormatOption = Annotated[OutputFormat, typer.Option("--format", help="table: for people; json: for tools")]

# --- errors --------------------------------------------------------------------------------------


def fail(message: str, code: int) -> typer.Exit:
    """Print ``kraft-replay: message`` in red on stderr; the caller raises the returned exit."""
    typer.secho(f"kraft-replay: {message}", err=True, fg=typer.colors.RED)
    return typer.Exit(code)


def guarded(action: Callable[[], Returned]) -> Returned:
    """Run a command body; turn input errors into a clear message and exit code, not a traceback."""
    try:
        return action()
    except typer.Exit:
        raise
    except typer.BadParameter as exc:  # a usage problem found while running: exit 2 with the message
        raise fail(exc.message, EXIT_USAGE) from None
    except RecordsError as exc:
        raise fail(str(exc), EXIT_BAD_INPUT) from None
    except BrokenPipeError:
        # The reader (e.g. `head`) went away: stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise typer.Exit(0) from None
    except OSError as exc:
        raise fail(f"{exc.filename or ''}: {exc.strerror or exc}", EXIT_BAD_INPUT) from None
    except KeyboardInterrupt:
        raise fail("interrupted", 130) from None
    except Exception as exc:
        if os.environ.get("KRAFT_REPLAY_DEBUG") == "1":
            raise
        from lakehouse.spark import SparkUnavailableError  # late: pyspark is loaded by now, not at start-up

        if isinstance(exc, SparkUnavailableError):  # no JVM, no jars: one actionable line
            raise fail(str(exc), EXIT_FAILURE) from None
        raise fail(f"unexpected error: {type(exc).__name__}: {exc} (set KRAFT_REPLAY_DEBUG=1 "
                   "for the traceback, and please report it)", EXIT_FAILURE) from None


def _lake_usage_errors() -> tuple[type[Exception], ...]:
    from pyspark.errors import AnalysisException

    from lakehouse.lake import LakeError
    from replay.query.state import QueryError
    from replay.store.runs import ReplayError

    return QueryError, ReplayError, LakeError, AnalysisException


def guarded_query(body: Callable[[], None]) -> None:
    """``guarded`` for a command that asks the lake: its usage errors (unknown cluster, an offset outside the
    log, tables missing, bad SQL) exit 2 with a one-line message; an offset outside the history (before its base
    snapshot, in a gap of the stored log) exits 3."""
    problem: list[str] = []
    code = [EXIT_USAGE]

    def wrapped() -> None:
        from replay.query.rules import OutsideHistory

        try:
            body()
        except _lake_usage_errors() as exc:
            text = str(exc).strip()
            problem.append(text.splitlines()[0] if text else type(exc).__name__)
            if isinstance(exc, OutsideHistory):  # the lake holds no state there: the input's limit, not a typo
                code[0] = EXIT_BAD_INPUT

    # PySpark logs every analysis error with its whole Java stack trace; the one-line message is enough.
    quiet = [logging.getLogger(name) for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger")]
    levels = [logger.level for logger in quiet]
    for logger in quiet:
        logger.setLevel(logging.CRITICAL)
    try:
        guarded(wrapped)
    finally:
        for logger, level in zip(quiet, levels, strict=True):
            logger.setLevel(level)
    if problem:
        raise fail(problem[0], code[0])


def guarded_command(command: Callable[Parameters, None]) -> Callable[Parameters, None]:
    """Decorate a command (under ``@app.command(...)``) to run its body under ``guarded``."""
    return _run_under(guarded, command)


def query_command(command: Callable[Parameters, None]) -> Callable[Parameters, None]:
    """Decorate a command that asks the lake (under ``@app.command(...)``) to run its body under ``guarded_query``."""
    return _run_under(guarded_query, command)


def _run_under(guard: Callable[[Callable[[], None]], None],
               command: Callable[Parameters, None]) -> Callable[Parameters, None]:
    """``command`` run by ``guard``; ``functools.wraps`` keeps its name, help and signature (typer reads them)."""

    @functools.wraps(command)
    def run(*args: Parameters.args, **kwargs: Parameters.kwargs) -> None:
        guard(functools.partial(command, *args, **kwargs))

    return run


def usage_error(message: str) -> NoReturn:
    """Refuse the question as asked (exit 2 under ``guarded_query``)."""
    from replay.query.state import QueryError

    raise QueryError(message)


# --- command groups ------------------------------------------------------------------------------


def command_group(name: str | None = None, help_text: str | None = None) -> typer.Typer:
    """A typer app of commands (the whole CLI, or a group such as ``lake``): no shell completion, no pretty
    tracebacks (``guarded`` prints one line instead), ``-h`` as well as ``--help``, its help without arguments."""
    return typer.Typer(name=name, help=help_text, no_args_is_help=True, add_completion=False,
                       pretty_exceptions_enable=False, context_settings={"help_option_names": ["-h", "--help"]})


# --- Spark ---------------------------------------------------------------------------------------


def spark_session(master: str | None, remote: str | None = None) -> SparkSession:
    """The session of a command's ``--master``/``--remote``, announcing its engine on stderr. Without either (and
    without ``$SPARK_REMOTE``/``$KRAFT_REPLAY_SPARK_MASTER``) the resident server when one runs
    (``lakehouse.resident_server``), saying so."""
    from lakehouse.light_reader import SPARK_MASTER_ENV, SPARK_REMOTE_ENV
    from lakehouse.spark import SparkOptions, get_spark, is_connect

    if master is None and remote is None and not (os.environ.get(SPARK_REMOTE_ENV)
                                                  or os.environ.get(SPARK_MASTER_ENV)):
        remote = _resident_url()
    spark = get_spark(SparkOptions(master=master, remote=remote, announce=True))
    if is_connect(spark):
        # A Connect server keeps a session, and what it cached (every local checkpoint of a replay), until the
        # session is released or idles out: a command releases its own as it exits, so that a resident server
        # serving command after command does not fill its memory.
        atexit.register(spark.stop)
    return spark


def _resident_url() -> str | None:
    """The resident server's URL when one runs for this installation (stderr says which, or why not)."""
    from pyspark.sql import SparkSession

    from lakehouse.resident_server import resident_server

    if SparkSession.getActiveSession() is not None:
        return None  # a session of this process (a test run, a notebook) stays its own
    server = resident_server()
    if server is None:
        return None
    outdated = server.outdated()
    if outdated:
        print(f"not using the resident Spark server at {server.url}: {outdated}", file=sys.stderr)
        return None
    print(f"Spark: the resident server at {server.url} (`kraft-replay server stop` ends it)", file=sys.stderr)
    return server.url


@contextlib.contextmanager
def spark_with_progress(quiet: bool, master: str | None, remote: str | None = None
                        ) -> Iterator[tuple[Stages, SparkSession]]:
    """A long command's progress display (``kraft_replay.progress``) and its session, started as its first stage
    so that the display shows Spark's tasks from then on."""
    with stage_progress(quiet) as stages:
        stages("starting Spark")
        yield stages, stages.attach(spark_session(master, remote))


# --- output --------------------------------------------------------------------------------------


def echo_lines(lines: Iterable[str]) -> None:
    """Write each line to stdout as it comes (a long answer streams)."""
    out = sys.stdout
    for text in lines:
        out.write(text)
        out.write("\n")
    out.flush()


def terminal_width() -> int:
    return shutil.get_terminal_size((160, 24)).columns


def cell(value: Any) -> str:
    """A value as a table shows it: lists comma-joined, structs as compact JSON, booleans yes/no."""
    kind = type(value)
    if kind is str:  # the common kinds first, by exact type: a state's table has millions of cells
        return value
    if kind is int:
        return str(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):  # mostly broker ids: ints made text inline
        return ",".join([str(v) if type(v) is int else cell(v) for v in value])
    if isinstance(value, dict):
        return json.dumps(value, separators=(",", ":"), default=str)
    if hasattr(value, "asDict"):
        return json.dumps(value.asDict(recursive=True), separators=(",", ":"), default=str)
    return str(value)


def _fitted(texts: list[str], size: int, to_right: bool) -> list[str]:
    """One column's texts cut to ``size`` (with …) and padded to it."""
    if max(map(len, texts), default=0) > size:
        texts = [text if len(text) <= size else text[: size - 1] + "…" for text in texts]
    return [text.rjust(size) for text in texts] if to_right else [text.ljust(size) for text in texts]


def table_lines(headers: Sequence[str], rows: Iterable[Sequence[Any]], width: int | None = None,
                right: Sequence[bool] | None = None) -> Iterator[str]:
    """Aligned columns that fit ``width``: the widest columns are shortened (cut with …) first. Built column by
    column (a whole-cluster state is hundreds of thousands of rows)."""
    table = list(rows)
    columns = [list(map(cell, column)) for column in zip(*table, strict=True)] if table else [[] for _ in headers]
    if len(columns) != len(headers):
        raise ValueError(f"{len(headers)} headers, rows of {len(columns)} values")
    widths = [max(len(header), max(map(len, texts), default=0)) for header, texts in zip(headers, columns,
                                                                                         strict=True)]
    available = (width or terminal_width()) - 2 * (len(headers) - 1)
    while sum(widths) > available and max(widths) > 6:
        widest = widths.index(max(widths))
        widths[widest] -= 1
    align = right or [False] * len(headers)
    fitted = [_fitted([header, *texts], size, to_right)
              for header, texts, size, to_right in zip(headers, columns, widths, align, strict=True)]
    for parts in zip(*fitted, strict=True) if fitted else [()] * (len(table) + 1):  # no columns: empty lines
        yield "  ".join(parts).rstrip()


def standalone_app(commands: Iterable[tuple[Callable[..., None], str]]) -> typer.Typer:
    """Some commands without the rest of the CLI (tests, subprocesses, before registration)."""
    app = command_group()
    for command, epilog in commands:
        app.command(epilog=epilog)(command)
    return app
