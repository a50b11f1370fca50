"""The repository's layout rules outside the package (docs/architecture.md): `tests/` is imported by nothing else,
benchmarks, studies and patches never edit `sys.path` (they run as modules, or with PYTHONPATH set by their shell
script), benchmarks and studies import each other never and the package neither, and every benchmark and every study is
a module with its row and exact command in its folder's README.md; no two test modules share a name."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
STUDIES = ROOT / "studies"
SCRIPT_FOLDERS = [BENCHMARKS, STUDIES]  # modules that print the tables the docs quote, each listed in its README.md
DOCS = [ROOT / "README.md", BENCHMARKS / "README.md", STUDIES / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


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


@pytest.mark.parametrize("path", sorted(p for top in (BENCHMARKS, STUDIES, ROOT / "patches") for p in top.rglob("*.py")),
                         ids=rel)
def test_no_benchmark_study_or_patch_touches_sys_path(path):
    lines = touches_sys_path(path)
    assert not lines, (f"{rel(path)} uses sys.path on lines {lines}: run it as a module from the repository root "
                       "(python -m benchmarks.... or python -m studies....), or set PYTHONPATH in the shell script that "
                       "runs it")


def test_the_checks_see_what_they_check(tmp_path):
    """Guards against rules that pass because they found nothing."""
    files = {rel(p) for p in python_files_outside_tests()}
    assert {"openenv_prime/cli.py", "benchmarks/imports.py", "studies/run_dirs.py", "patches/orchestrator_smoke.py"} <= files
    assert not any(name.startswith("tests/") for name in files)
    probe = tmp_path / "probe.py"
    probe.write_text("import sys\nfrom sys import path\nsys.path.insert(0, 'x')\nfrom tests.support import waiting\n")
    assert touches_sys_path(probe) == [2, 3] and "tests.support" in imported_modules(probe)


# Who may import whom outside the package (docs/architecture.md): a benchmark measures the package, a study asks what
# it learns; neither uses the other, and the package uses neither.
NEVER_IMPORTS = {"benchmarks": ("studies",), "studies": ("benchmarks",), "openenv_prime": ("benchmarks", "studies")}


@pytest.mark.parametrize("path", [p for top in NEVER_IMPORTS for p in sorted((ROOT / top).rglob("*.py"))], ids=rel)
def test_benchmarks_and_studies_stay_apart_and_the_package_uses_neither(path):
    top = path.relative_to(ROOT).parts[0]
    bad = sorted(name for name in imported_modules(path) if name.split(".")[0] in NEVER_IMPORTS[top])
    assert not bad, f"{rel(path)} imports {bad}; {top}/ never imports {' or '.join(NEVER_IMPORTS[top])}/"


def script_modules(folder: Path) -> set[str]:
    """`FOLDER.X.Y` for every script under ``folder`` that runs (has a ``__main__`` block or is a package's
    ``__main__``)."""
    modules = set()
    for path in folder.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if path.name == "__main__.py":
            modules.add(".".join(parts[:-1]))
        elif 'if __name__ == "__main__":' in path.read_text():
            modules.add(".".join(parts))
    return modules


@pytest.mark.parametrize("folder", SCRIPT_FOLDERS, ids=rel)
def test_every_script_folder_is_a_package(folder):
    folders = {path.parent for path in folder.rglob("*.py")}
    assert folders and all((f / "__init__.py").is_file() for f in folders), sorted(
        rel(f) for f in folders if not (f / "__init__.py").is_file())


@pytest.mark.parametrize("folder", SCRIPT_FOLDERS, ids=rel)
def test_every_script_has_its_row_and_command_in_its_readme(folder):
    rows = [line for line in (folder / "README.md").read_text().splitlines() if line.startswith("| `")]
    commanded = {m for row in rows for m in re.findall(rf"python -m ({folder.name}(?:\.[a-z_0-9]+)+)", row)}
    assert script_modules(folder), f"{rel(folder)} has no script"
    missing = sorted(script_modules(folder) - commanded)
    assert not missing, f"no {rel(folder)}/README.md row runs {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=rel)
def test_docs_name_only_benchmarks_and_studies_that_exist(doc):
    """Every `python -m benchmarks...` or `python -m studies...` command and `benchmarks/...` or `studies/...` path a
    page quotes is there to run."""
    text = doc.read_text()
    missing = []
    for folder in SCRIPT_FOLDERS:  # not a placeholder such as benchmarks.FOLDER.NAME
        modules = set(re.findall(rf"-m ({folder.name}(?:\.[a-z_0-9]+)+)", text))
        missing += sorted(m for m in modules if m not in script_modules(folder))
        paths = set(re.findall(rf"(?<![\w/]){folder.name}/[\w/.]*\w", text))  # not tests/studies/...
        missing += sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, f"{rel(doc)} names benchmarks or studies that do not exist: {missing}"


def test_no_two_test_modules_share_a_name():
    """Test folders are not packages, so pytest imports each test module by its file name: two of one name in
    different folders fail the whole run's collection ("import file mismatch")."""
    names: dict[str, list[str]] = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        names.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert not {name: paths for name, paths in names.items() if len(paths) > 1}
