"""The code's shape (docs/architecture.md): records → lakehouse → replay → kraft_replay, no arrow back up; inside
replay/, each room imports only the rooms below it (core ← fold, reference, audit ← store; core, audit ← query);
``kraft_replay/cli.py`` only assembles the app (only what runs a command line imports it: the entry point and the
resident command runner; command modules share ``kraft_replay.plumbing``, never another's private names); no product
module over 400 lines without a reason at its top."""

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
# What each room of replay/ may import of replay (besides itself): docs/architecture.md draws them.
REPLAY_ROOMS: dict[str, set[str]] = {
    "core": set(),
    "fold": {"core"},
    "reference": {"core"},
    "audit": {"core"},
    "store": {"core", "fold", "reference", "audit"},
    "query": {"core", "audit"},
}
# what runs a command line: the ``kraft-replay`` entry point, and the resident runner's children
RUNS_THE_APP = ("kraft_replay/launcher.py", "kraft_replay/command_runner.py")
MAX_LOOSE_MODULES = 6  # at replay/'s top, beside its rooms
MAX_LINES = 400
REASON = "Over 400 lines"


def _modules() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (REPO / package).rglob("*.py"))


def _name(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def _imports(path: Path) -> list[tuple[str, str | None]]:
    """``(module, name)`` of every import in ``path``, at any depth (late imports inside functions included)."""
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [(node.module, alias.name) for alias in node.names]
    return found


@pytest.mark.parametrize("path", _modules(), ids=_name)
def test_no_arrow_runs_back_up(path: Path) -> None:
    package = path.relative_to(REPO).parts[0]
    ours = {module if name is None else f"{module}.{name}" for module, name in _imports(path)
            if module.split(".")[0] in PACKAGES}
    wrong = sorted(name for name in ours if name.split(".")[0] not in ALLOWED[package] | {package})
    assert not wrong, f"{package}/{path.name} imports {wrong}: {package} may import only {sorted(ALLOWED[package])}"
    assert _name(path) in RUNS_THE_APP or not any(
        name == "kraft_replay.cli" or name.startswith("kraft_replay.cli.") for name in ours), (
        f"{path.name}: cli.py only assembles the app; import kraft_replay.plumbing")
    if package == "kraft_replay":
        private = sorted(f"{module}.{name}" for module, name in _imports(path)
                         if module.startswith("kraft_replay") and name is not None and name.startswith("_"))
        assert not private, f"{path.name} imports another module's private names {private}"


@pytest.mark.parametrize("path", [path for path in _modules() if path.relative_to(REPO).parts[:1] == ("replay",)
                                  and len(path.relative_to(REPO).parts) > 2], ids=_name)
def test_a_replay_room_imports_only_the_rooms_below_it(path: Path) -> None:
    room = path.relative_to(REPO).parts[1]
    rooms = {module.split(".")[1] if module.startswith("replay.") else name
             for module, name in _imports(path) if module == "replay" or module.startswith("replay.")}
    wrong = sorted(rooms - REPLAY_ROOMS[room] - {room})
    allowed = sorted(REPLAY_ROOMS[room])
    assert not wrong, f"{_name(path)} imports the rooms {wrong}: replay/{room} may import only {allowed}"


def test_replay_keeps_few_loose_modules() -> None:
    loose = sorted(path.name for path in (REPO / "replay").glob("*.py") if path.name != "__init__.py")
    assert len(loose) <= MAX_LOOSE_MODULES, f"replay/ holds {loose} beside its rooms: put each in the room of its job"
    assert set(REPLAY_ROOMS) == {path.name for path in (REPO / "replay").iterdir()
                                 if (path / "__init__.py").exists()}


@pytest.mark.parametrize("path", sorted((REPO / "kraft_replay").rglob("*.py")), ids=_name)
def test_the_cli_computes_nothing_with_spark(path: Path) -> None:
    spark_functions = sorted(f"{module}.{name}" for module, name in _imports(path)
                             if module == "pyspark.sql.functions" or (module, name) == ("pyspark.sql", "functions"))
    assert not spark_functions, f"{_name(path)} imports {spark_functions}: ask replay.query for the answer"


@pytest.mark.parametrize("path", _modules(), ids=_name)
def test_a_long_module_says_why_at_its_top(path: Path) -> None:
    lines = path.read_text().splitlines()
    if len(lines) > MAX_LINES:
        assert any(REASON in line for line in lines[:8]), (
            f"{_name(path)} has {len(lines)} lines: split it by job, or say at its top "
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


@pytest.mark.parametrize("path", _modules(), ids=_name)
def test_names_say_what_they_are(path: Path) -> None:
    """No one-letter names outside comprehensions and lambdas (issue 18)."""
    found = _one_letter_names(ast.parse(path.read_text(), str(path)))
    assert not found, f"{_name(path)}: one-letter names at {found}"
