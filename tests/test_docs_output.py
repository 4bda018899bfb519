"""The output the docs quote for issue 19's questions (config history, the change log, an ACL question, the
configs in force) is what the commands as written print, on the lake of the simulator's ``image-changes`` story.

The blocks are read from README.md and docs/sql-recipes.md by their marker (``OUTPUT_MARKER``, the line before a
fenced block), so the docs and this test cannot drift. In a README block each ``$ kraft-replay …`` line is run, in
order, in one working directory (the first ones make the lake), and every line quoted under it must be a line of
what it printed; ``…`` stands for lines left out. In sql-recipes.md a marked block is the output of the ```sql
block just before it, run by ``kraft-replay sql --lake ./image-lake``.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from kraft_replay.cli import app
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.spark

runner = CliRunner()
OUTPUT_MARKER = "<!-- output checked by tests/test_docs_output.py -->"
README = REPO_ROOT / "README.md"
RECIPES = REPO_ROOT / "docs" / "sql-recipes.md"
PROMPT = "$ kraft-replay "
LEFT_OUT = "…"
LAKE = "./image-lake"  # the lake the docs' commands name, relative to the working directory
WIDTH = "160"  # the terminal width tables are cut to (a pipe's default): the docs were made with it


def marked_blocks(path: Path) -> list[tuple[str, str]]:
    """Each marked block of ``path``: (the text before it since the previous marked block, the block)."""
    text = path.read_text(encoding="utf-8")
    pieces = text.split(OUTPUT_MARKER)
    blocks = []
    for before, after in pairwise(pieces):
        found = re.match(r"\s*```\w*\n(.*?)```", after, flags=re.S)
        assert found, f"{path.name}: {OUTPUT_MARKER} must stand right before a fenced block"
        blocks.append((before, found.group(1)))
    return blocks


def sessions(block: str) -> list[tuple[list[str], list[str]]]:
    """A README block's commands (arguments after ``kraft-replay``) with the output lines quoted under each."""
    runs: list[tuple[list[str], list[str]]] = []
    for line in block.splitlines():
        if line.startswith(PROMPT):
            runs.append((shlex.split(line.removeprefix(PROMPT)), []))
        elif runs and line.strip() and line.strip() != LEFT_OUT:
            runs[-1][1].append(line.rstrip())
    return runs


def invoke(arguments: list[str]) -> list[str]:
    result = runner.invoke(app, arguments, env={"COLUMNS": WIDTH})
    assert result.exit_code == 0, (arguments, result.output)
    return [line.rstrip() for line in result.stdout.splitlines()]


def assert_quoted(command: str, quoted: list[str], printed: list[str]) -> None:
    missing = [line for line in quoted if line not in printed]
    assert not missing, f"{command}: quoted but not printed:\n" + "\n".join(missing) + "\n--- printed:\n" + "\n".join(
        printed)


@dataclass
class ReadmeRuns:
    """The README's marked commands, run in order in ``work``: (command, quoted lines, printed lines) each."""

    work: Path
    runs: list[tuple[str, list[str], list[str]]]


@pytest.fixture(scope="module")
def readme(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> ReadmeRuns:
    work = tmp_path_factory.mktemp("docs-output")
    done = []
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(work)
        for _, block in marked_blocks(README):
            for arguments, quoted in sessions(block):
                done.append((shlex.join(arguments), quoted, invoke(arguments)))
    return ReadmeRuns(work, done)


def test_readme_blocks_are_found() -> None:
    runs = [run for _, block in marked_blocks(README) for run in sessions(block)]
    commands = [arguments[0] for arguments, _ in runs]
    assert commands[:3] == ["simulate", "ingest", "replay"]
    assert {"history", "changes", "state", "configs"} <= set(commands)
    assert all(quoted for arguments, quoted in runs[3:])


def test_readme_output_is_printed(readme: ReadmeRuns) -> None:
    for command, quoted, printed in readme.runs:
        assert_quoted(command, quoted, printed)


def recipe_runs() -> list[tuple[str, str, list[str]]]:
    """Each marked output of sql-recipes.md: (its recipe's heading, the SQL just before it, the quoted lines)."""
    runs = []
    for before, block in marked_blocks(RECIPES):
        headings = re.findall(r"^### (.*)$", before, flags=re.M)
        queries = re.findall(r"```sql\n(.*?)```", before, flags=re.S)
        assert headings and queries, "a recipe's output follows its ### heading and its ```sql block"
        quoted = [line.rstrip() for line in block.splitlines() if line.strip() and line.strip() != LEFT_OUT]
        runs.append((headings[-1], queries[-1], quoted))
    return runs


def test_recipe_output_is_printed(readme: ReadmeRuns) -> None:
    """Each recipe, run as ``kraft-replay sql --lake ./image-lake "…"`` in the README's working directory."""
    recipes = recipe_runs()
    assert len(recipes) >= 4
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(readme.work)
        for heading, query, quoted in recipes:
            assert quoted, heading
            assert_quoted(heading, quoted, invoke(["sql", "--lake", LAKE, query]))
