"""The benchmark's cold `state --offset N` (issue 20) runs as a user types it: with the bench's engine named in its
own environment, the fresh command still gets the default engine, so it takes the JVM-free path a user's takes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.bench_replay import REPO_ROOT, cold_command_env
from lakehouse.light_reader import DELTA_SPARK, ENGINE_ENV
from replay.query.state_answer import light_path_serves


def test_the_cold_command_gets_the_default_engine_and_the_light_path(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    monkeypatch.setenv(ENGINE_ENV, DELTA_SPARK)  # as the bench's own session names the engine it measures
    assert not light_path_serves(str(tmp_path), None, None)

    env = cold_command_env()

    assert ENGINE_ENV not in env
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(REPO_ROOT)
    monkeypatch.delenv(ENGINE_ENV)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert light_path_serves(str(tmp_path), None, None)
