"""The repository's layout rules outside the package (docs/architecture.md): `tests/` is imported by nothing else,
benchmarks and patches never edit `sys.path` (they run as modules, or with PYTHONPATH set by their shell script), and
every benchmark is a module with its row and exact command in benchmarks/README.md; no two test modules share a name."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
DOCS = [ROOT / "README.md", BENCHMARKS / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def python_files_outside_tests() -> list[Path]:
    """Every .py file of the repository but `tests/`, hidden folders (.git, virtualenvs) and other virtualenvs."""
    found = []
    for top in sorted(ROOT.iterdir()):
        if top.name.startswith(".") or top.name == "tests" or (top / "pyvenv.cfg").exists():
            continue
        candidates = [top] if top.suffix == ".py" else sorted(top.rglob("*.py")) if top.is_dir() else []
        found += [p for p in candidates if not any(part.startswith(".") for part in p.relative_to(ROOT).parts)]
    return found


def imported_modules(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found.add(node.module)
    return found


def touches_sys_path(path: Path) -> list[int]:
    """Lines that read or change `sys.path` (`sys.path.insert`, `sys.path = ...`, `from sys import path`)."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name) and node.value.id == "sys":
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "sys" and any(a.name == "path" for a in node.names):
            lines.append(node.lineno)
    return lines


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("path", python_files_outside_tests(), ids=rel)
def test_no_file_outside_tests_imports_from_tests(path):
    bad = sorted(name for name in imported_modules(path) if name.split(".")[0] == "tests")
    assert not bad, f"{rel(path)} imports {bad}: code that tests/ shares with others goes to openenv_prime/testing/"


@pytest.mark.parametrize("path", sorted([*BENCHMARKS.rglob("*.py"), *(ROOT / "patches").rglob("*.py")]), ids=rel)
def test_no_benchmark_or_patch_touches_sys_path(path):
    lines = touches_sys_path(path)
    assert not lines, (f"{rel(path)} uses sys.path on lines {lines}: run it as a module from the repository root "
                       "(python -m benchmarks....), or set PYTHONPATH in the shell script that runs it")


def test_the_checks_see_what_they_check(tmp_path):
    """Guards against rules that pass because they found nothing."""
    files = {rel(p) for p in python_files_outside_tests()}
    assert {"openenv_prime/cli.py", "benchmarks/imports.py", "patches/orchestrator_smoke.py"} <= files
    assert not any(name.startswith("tests/") for name in files)
    probe = tmp_path / "probe.py"
    probe.write_text("import sys\nfrom sys import path\nsys.path.insert(0, 'x')\nfrom tests.support import waiting\n")
    assert touches_sys_path(probe) == [2, 3] and "tests.support" in imported_modules(probe)


def benchmark_modules() -> set[str]:
    """`benchmarks.X.Y` for every script that runs (has a ``__main__`` block or is a package's ``__main__``)."""
    modules = set()
    for path in BENCHMARKS.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if path.name == "__main__.py":
            modules.add(".".join(parts[:-1]))
        elif 'if __name__ == "__main__":' in path.read_text():
            modules.add(".".join(parts))
    return modules


def test_every_benchmark_folder_is_a_package():
    folders = {path.parent for path in BENCHMARKS.rglob("*.py")}
    assert folders and all((folder / "__init__.py").is_file() for folder in folders), sorted(
        rel(f) for f in folders if not (f / "__init__.py").is_file())


def test_every_benchmark_has_its_row_and_command_in_the_readme():
    rows = [line for line in (BENCHMARKS / "README.md").read_text().splitlines() if line.startswith("| `")]
    commanded = {m for row in rows for m in re.findall(r"python -m (benchmarks(?:\.[a-z_0-9]+)+)", row)}
    assert benchmark_modules() <= commanded, f"no README row runs {sorted(benchmark_modules() - commanded)}"


@pytest.mark.parametrize("doc", DOCS, ids=rel)
def test_docs_name_only_benchmarks_that_exist(doc):
    """Every `python -m benchmarks...` command and `benchmarks/...` path a page quotes is there to run."""
    text = doc.read_text()
    modules = set(re.findall(r"-m (benchmarks(?:\.[a-z_0-9]+)+)", text))  # not a placeholder: benchmarks.FOLDER.NAME
    missing = sorted(m for m in modules if m not in benchmark_modules())
    paths = set(re.findall(r"\bbenchmarks/[\w/.]*\w", text))
    missing += sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, f"{rel(doc)} names benchmarks that do not exist: {missing}"


def test_no_two_test_modules_share_a_name():
    """Test folders are not packages, so pytest imports each test module by its file name: two of one name in
    different folders fail the whole run's collection ("import file mismatch")."""
    names: dict[str, list[str]] = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        names.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert not {name: paths for name, paths in names.items() if len(paths) > 1}
