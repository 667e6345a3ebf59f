"""The package's shape: no import cycles between ovpool's modules (module-level imports, as the
interpreter runs them), and ``python -m ovpool`` is the command."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# installed names of the top-level folders (pyproject.toml's package-dir)
FOLDERS = {"ovpool": "ovpool", "cli": "ovpool.cli", "transforms": "ovpool.transforms"}


def _modules() -> dict[str, Path]:
    found = {}
    for folder, package in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


def _module_level_imports(path: Path, known: set[str]) -> set[str]:
    """ovpool modules imported when ``path`` runs (not inside functions or ``if TYPE_CHECKING``)."""
    tree = ast.parse(path.read_text())
    imported: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If):  # TYPE_CHECKING blocks never run
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # ``from ovpool import shape`` imports the module ovpool.shape (and runs ovpool first)
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                imported.add(submodule if submodule in known else node.module)
        elif isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
    imported &= known
    return imported


def test_no_import_cycles() -> None:
    modules = _modules()
    graph = {name: _module_level_imports(path, set(modules)) for name, path in modules.items()}
    state: dict[str, int] = {}

    def visit(name: str, trail: list[str]) -> None:
        state[name] = 1
        for target in sorted(graph[name]):
            # importing a package's submodule runs the package first; a package importing its own
            # submodules is how packages work, not a cycle
            if target == name or target.startswith(name + "."):
                continue
            if state.get(target) == 1:
                raise AssertionError("import cycle: " + " -> ".join([*trail, name, target]))
            if target not in state:
                visit(target, [*trail, name])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [])


def test_python_m_ovpool_is_the_command() -> None:
    done = subprocess.run([sys.executable, "-m", "ovpool", "--version"], capture_output=True, text=True, check=True)
    assert done.stdout.startswith("ovpool ")
