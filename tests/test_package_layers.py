"""The code's shape (docs/architecture.md): records → lakehouse → replay → kraft_replay, no arrow back up;
``kraft_replay/cli.py`` only assembles the app (nothing imports it, command modules share ``kraft_replay.plumbing``,
never another's private names); no product module over 400 lines without a reason at its top."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("records", "lakehouse", "replay", "simulator", "kraft_replay")
# What each package may import of ours (besides itself).
ALLOWED: dict[str, set[str]] = {
    "records": set(),
    "lakehouse": {"records"},
    "replay": {"records", "lakehouse"},
    "simulator": {"records"},
    "kraft_replay": {"records", "lakehouse", "replay", "simulator"},
}
MAX_LINES = 400
REASON = "Over 400 lines"


def _modules() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (REPO / package).glob("*.py"))


def _imports(path: Path) -> list[tuple[str, str | None]]:
    """``(module, name)`` of every import in ``path``, at any depth (late imports inside functions included)."""
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [(node.module, alias.name) for alias in node.names]
    return found


@pytest.mark.parametrize("path", _modules(), ids=lambda path: f"{path.parent.name}/{path.name}")
def test_no_arrow_runs_back_up(path: Path) -> None:
    package = path.parent.name
    ours = {module if name is None else f"{module}.{name}" for module, name in _imports(path)
            if module.split(".")[0] in PACKAGES}
    wrong = sorted(name for name in ours if name.split(".")[0] not in ALLOWED[package] | {package})
    assert not wrong, f"{package}/{path.name} imports {wrong}: {package} may import only {sorted(ALLOWED[package])}"
    assert not any(name == "kraft_replay.cli" or name.startswith("kraft_replay.cli.") for name in ours), (
        f"{path.name}: cli.py only assembles the app; import kraft_replay.plumbing")
    if package == "kraft_replay":
        private = sorted(f"{module}.{name}" for module, name in _imports(path)
                         if module.startswith("kraft_replay") and name is not None and name.startswith("_"))
        assert not private, f"{path.name} imports another module's private names {private}"


@pytest.mark.parametrize("path", _modules(), ids=lambda path: f"{path.parent.name}/{path.name}")
def test_a_long_module_says_why_at_its_top(path: Path) -> None:
    lines = path.read_text().splitlines()
    if len(lines) > MAX_LINES:
        assert any(REASON in line for line in lines[:8]), (
            f"{path.parent.name}/{path.name} has {len(lines)} lines: split it by job, or say at its top "
            f"why not ('{REASON}: …')")


def _one_letter_names(tree: ast.AST) -> list[tuple[int, str]]:
    """Names of one letter bound outside a comprehension or a lambda (assignments, loops, parameters)."""
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            allowed.update(id(target) for generator in node.generators for target in ast.walk(generator.target))
        elif isinstance(node, ast.Lambda):
            allowed.update(id(argument) for argument in node.args.args)
    found = []
    for node in ast.walk(tree):
        if id(node) in allowed:
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and len(node.id) == 1 and node.id != "_":
            found.append((node.lineno, node.id))
        elif isinstance(node, ast.arg) and len(node.arg) == 1:
            found.append((node.lineno, node.arg))
    return sorted(found)


def test_a_one_letter_name_is_found_outside_a_comprehension_only() -> None:
    tree = ast.parse("def f(x, item):\n    i = 0\n    return [j for j in item] + list(map(lambda k: k, item))\n")
    assert _one_letter_names(tree) == [(1, "x"), (2, "i")]


@pytest.mark.parametrize("path", _modules(), ids=lambda path: f"{path.parent.name}/{path.name}")
def test_names_say_what_they_are(path: Path) -> None:
    """No one-letter names outside comprehensions and lambdas (issue 18)."""
    found = _one_letter_names(ast.parse(path.read_text(), str(path)))
    assert not found, f"{path.parent.name}/{path.name}: one-letter names at {found}"
