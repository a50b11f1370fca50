"""Module hygiene: the trainer's modules import each other without cycles (function-level imports included)."""

from __future__ import annotations

import ast
from pathlib import Path

import openenv_prime.mlx_trainer as package

PACKAGE = "openenv_prime.mlx_trainer"


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:  # from .x import y
                base = node.module or ""
                found.add(f"{PACKAGE}.{base}".rstrip("."))
                found.update(f"{PACKAGE}.{a.name}" for a in node.names if not base)
            elif node.module:
                found.add(node.module)
                found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_no_import_cycles_between_trainer_modules():
    folder = Path(list(package.__path__)[0])
    modules = {f"{PACKAGE}.{p.stem}": p for p in folder.glob("*.py") if p.stem != "__init__"}
    graph = {name: sorted(m for m in _imports(path) if m in modules and m != name) for name, path in modules.items()}
    visiting, done = [], set()

    def visit(name: str) -> None:
        if name in done:
            return
        assert name not in visiting, f"import cycle: {' -> '.join(visiting[visiting.index(name):] + [name])}"
        visiting.append(name)
        for dep in graph[name]:
            visit(dep)
        visiting.pop()
        done.add(name)

    for name in sorted(graph):
        visit(name)
