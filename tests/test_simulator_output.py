"""Writing the simulated log (simulator.output and the simulate command): read back equal, byte-identical runs."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from records.jsonl import read_jsonl, write_jsonl
from records.model import LogEntry
from records.sources import read_entries
from records.writer import write_segments
from simulator import (
    run_scenario,
    write_log,
)
from tests.simulator_fold import generate, small


def _envelope(e: LogEntry) -> tuple[Any, ...]:
    return (e.offset, e.record, e.batch_base_offset, e.raft_leader_epoch, e.append_time_ms)


@pytest.mark.parametrize("mv", ["3.0", "3.6", "4.0"])
def test_segments_and_jsonl_read_back_equal(tmp_path: Path, mv: str) -> None:
    entries, _run = generate("random", small("random", mv, 3))
    write_segments(entries, tmp_path / "seg")
    back = list(read_entries(tmp_path / "seg"))
    assert [_envelope(e) for e in back] == [_envelope(e) for e in entries]
    buf = io.StringIO()
    write_jsonl(entries, buf)
    buf.seek(0)
    assert [_envelope(e) for e in read_jsonl(buf, "mem")] == [_envelope(e) for e in entries]


def test_write_log_is_deterministic(tmp_path: Path) -> None:
    outputs = []
    for attempt in range(2):
        run = run_scenario("random", small("random", "3.9", 11))
        out = tmp_path / f"run{attempt}"
        count, paths = write_log(run.entries(), out, "segments", cluster_id=run.sim.cluster_id, node_id=3000)
        assert count > 0
        outputs.append([p.read_bytes() for p in paths])
    assert outputs[0] == outputs[1]
    assert next(iter(read_entries(tmp_path / "run0"))).cluster_id == run.sim.cluster_id


def test_cli_simulate_is_byte_identical(tmp_path: Path) -> None:
    import typer

    from kraft_replay.simulate_command import SIMULATE_EPILOG, simulate

    app = typer.Typer()
    app.command(epilog=SIMULATE_EPILOG)(simulate)
    app.command("noop")(lambda: None)
    runner = CliRunner()
    blobs = []
    for fmt in ("segments", "jsonl"):
        for attempt in range(2):
            out = tmp_path / f"{fmt}{attempt}"
            result = runner.invoke(app, ["simulate", "--out", str(out), "--format", fmt, "--seed", "4",
                                         "--events", "60", "--metadata-version", "4.0", "--elr",
                                         "--compression", "zstd", "--unclean"])
            assert result.exit_code == 0, result.output
            files = sorted(p for p in out.rglob("*") if p.is_file())
            blobs.append([(p.relative_to(out), p.read_bytes()) for p in files])
    assert blobs[0] == blobs[1] and blobs[2] == blobs[3]
    assert {str(name) for name, _ in blobs[2]} == {"metadata.jsonl"}
    bad = runner.invoke(app, ["simulate", "--out", str(tmp_path / "x"), "--elr", "--metadata-version", "3.9"])
    assert bad.exit_code == 3 and "4.0" in bad.output
