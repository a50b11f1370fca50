"""Module hygiene: the trainer's modules, its subpackages' included, import each other without cycles (function-level
imports included)."""

from __future__ import annotations

import ast
from pathlib import Path

import openenv_prime.mlx_trainer as package

PACKAGE = "openenv_prime.mlx_trainer"


def _name(path: Path, folder: Path) -> str:
    parts = path.relative_to(folder).with_suffix("").parts
    return ".".join((PACKAGE, *parts[:-1])) if parts[-1] == "__init__" else ".".join((PACKAGE, *parts))


def _imports(path: Path, name: str) -> set[str]:
    package = name if path.stem == "__init__" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:  # from .x import y
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                module = f"{base}.{node.module}" if node.module else base
                found.add(module)
                found.update(f"{module}.{a.name}" for a in node.names)
            elif node.module:
                found.add(node.module)
                found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_no_import_cycles_between_trainer_modules():
    folder = Path(list(package.__path__)[0])
    modules = {_name(p, folder): p for p in folder.rglob("*.py")}
    assert {f"{PACKAGE}.model.sources", f"{PACKAGE}.report.summary", f"{PACKAGE}.training.loop", f"{PACKAGE}.rollouts.runner"} <= set(modules)
    graph = {name: sorted(m for m in _imports(path, name) if m in modules and m != name) for name, path in modules.items()}
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
