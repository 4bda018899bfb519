"""The CLI's shape (issue 18): ``kraft_replay/cli.py`` only assembles the app, and no module imports it back;
the command modules share their plumbing through ``kraft_replay.plumbing``, never another's private names."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("kraft_replay", "replay", "lakehouse", "records", "simulator", "bench", "tests")


def _imports(path: Path) -> list[tuple[str, str | None]]:
    """``(module, name)`` of every import in a file, at any depth (late imports inside functions too)."""
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [(node.module, alias.name) for alias in node.names]
    return found


def _sources(*packages: str) -> list[Path]:
    return [path for package in packages for path in sorted((ROOT / package).rglob("*.py"))]


def test_no_module_imports_the_cli_app() -> None:
    offenders = [f"{path.relative_to(ROOT)}: {module}" for path in _sources(*PACKAGES)
                 for module, name in _imports(path)
                 if module == "kraft_replay.cli" or (module == "kraft_replay" and name == "cli")]
    # The tests drive the app as a user does; product code never reaches back up to it.
    assert [line for line in offenders if not line.startswith("tests/")] == []


def test_command_modules_import_no_private_name_of_another_module() -> None:
    offenders = [f"{path.relative_to(ROOT)}: {module}.{name}" for path in _sources("kraft_replay")
                 for module, name in _imports(path)
                 if module.startswith("kraft_replay") and name is not None and name.startswith("_")]
    assert offenders == []


def test_the_domain_does_not_import_the_cli() -> None:
    """records → lakehouse → replay → kraft_replay: no arrow runs back up."""
    offenders = [f"{path.relative_to(ROOT)}: {module}" for path in _sources("records", "lakehouse", "replay")
                 for module, _name in _imports(path) if module.split(".")[0] == "kraft_replay"]
    assert offenders == []
