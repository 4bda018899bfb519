"""`kraft-replay configs`: the topic configs Kafka's controller reads when it elects a leader, as in force at an
offset, with where each value came from; and the static-config options ``whatif`` shares.

The controller's static ``server.properties`` are not in the metadata log: ``--broker-config FILE`` and
``--static KEY=VALUE`` stand for them (else the answer falls through to Kafka's default and says so).
Register with ``for command, epilog in CONFIG_COMMANDS: app.command(epilog=epilog)(command)``.
Exit codes as the rest of the CLI: 0 success, 2 bad usage, 3 bad input.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from kraft_replay.plumbing import (
    AtTimeOption,
    BrokerConfigOption,
    ClusterOption,
    FormatOption,
    LakeOption,
    MasterOption,
    OutputFormat,
    RemoteOption,
    StaticOption,
    echo_lines,
    query_command,
    spark_session,
    table_lines,
    usage_error,
)

STATIC_NOTE = ("static server.properties are not in the metadata log: pass them with --broker-config FILE or "
               "--static KEY=VALUE, else the value falls through to Kafka's default")


def static_configs(broker_config: Path | None, pairs: list[str] | None) -> dict[str, str]:
    """The static configs the user passed: a properties file (``key=value`` or ``key: value`` lines, ``#`` and
    ``!`` comments) and ``KEY=VALUE`` pairs, the pairs winning."""
    static: dict[str, str] = {}
    if broker_config is not None:
        try:
            text = broker_config.read_text()
        except OSError as exc:
            usage_error(f"--broker-config {broker_config}: cannot read it ({exc.strerror or exc})")
        for number, line in enumerate(text.splitlines(), start=1):
            stripped = line.strip()
            if not stripped or stripped[0] in "#!":
                continue
            separator = min((i for i in (stripped.find("="), stripped.find(":")) if i > 0), default=-1)
            if separator < 0:
                usage_error(f"--broker-config {broker_config} line {number}: expected key=value, not {stripped!r}")
            static[stripped[:separator].strip()] = stripped[separator + 1:].strip()
    for pair in pairs or []:
        key, equals, value = pair.partition("=")
        if not equals or not key.strip():
            usage_error(f"--static takes KEY=VALUE (e.g. unclean.leader.election.enable=true), not {pair!r}")
        static[key.strip()] = value.strip()
    return static


CONFIGS_EPILOG = ("Examples:\n\n"
                  "  kraft-replay configs --topic orders --offset 8812\n\n"
                  "  kraft-replay configs --topic orders --time 2026-03-02T10:14:00Z "
                  "--broker-config /etc/kafka/server.properties --format json")


@query_command
def configs(
    topic: Annotated[str, typer.Option("--topic", help="The topic's name")],
    offset: Annotated[int | None, typer.Option("--offset", min=0, help="The state to ask about")] = None,
    time: AtTimeOption = None,
    broker_config: BrokerConfigOption = None,
    static: StaticOption = None,
    fmt: FormatOption = OutputFormat.table,
    lake: LakeOption = None,
    cluster_id: ClusterOption = None,
    master: MasterOption = None,
    remote: RemoteOption = None,
) -> None:
    """The topic's unclean.leader.election.enable and min.insync.replicas in force at that offset, as Kafka's
    controller resolves them: the topic's config, the active controller's node config, the cluster default,
    the static server.properties you pass, Kafka's default."""
    from lakehouse.lake import Lake
    from records.kafka_topic_configs import KAFKA_VERSION
    from replay.query.topic_configs import topic_configs_at

    if (offset is None) == (time is None):
        usage_error("give exactly one of --offset N or --time ISO8601")
    passed = static_configs(broker_config, static)
    at, answer = topic_configs_at(spark_session(master, remote), Lake(lake), topic, offset, time, cluster_id,
                                  passed)
    rows = [row.asDict() for row in answer.collect()]  # one row per key: two
    if fmt is OutputFormat.json:
        echo_lines([json.dumps({"offset": at, "topic": topic, "kafkaVersion": KAFKA_VERSION,
                                "configs": [{"name": r["name"], "value": r["value"], "source": r["source"]}
                                            for r in rows],
                                "staticConfigsPassed": sorted(passed), "note": STATIC_NOTE})])
        return
    lines = [f"topic {topic} as of offset {at}:"]
    lines += table_lines(("NAME", "VALUE", "SOURCE"), [(r["name"], r["value"], r["source"]) for r in rows])
    lines += ["", f"(DEFAULT_CONFIG: Kafka {KAFKA_VERSION}'s default; {STATIC_NOTE})"]
    echo_lines(lines)


CONFIG_COMMANDS: list[tuple[Callable[..., None], str]] = [(configs, CONFIGS_EPILOG)]
