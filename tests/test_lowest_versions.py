"""Declared versions are tested versions: uv installs the lowest versions pyproject.toml allows for the core
dependencies and the dev extra (`--resolution lowest-direct`) into `.venv-lowest`, and there every direct dependency
sits at its declared lower bound, `openenv-prime --help` runs, and a fast subset of the suite passes (the client
against real chain_sum servers, which come from this interpreter: the lowest venv has no openenv). The venv is made
again only when pyproject.toml or the install below changed. docs/architecture.md (Tests) says what runs and its cost."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from tests.support.processes import SERVER_PYTHON_VAR
from tests.support.waiting import HANG_GUARD_S

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv-lowest"
EXTRAS = ("dev",)
# Transitive dependencies resolve to their newest release up to this date, so the venv is the same on every run;
# move it forward when a lower bound moves.
EXCLUDE_NEWER = "2026-12-07"
INSTALL = ["--resolution", "lowest-direct", "--exclude-newer", EXCLUDE_NEWER, "-e", f".[{','.join(EXTRAS)}]"]
# Tests that need nothing beyond the core dependencies and the dev extra in their own process; a test whose server
# imports openenv from the test's interpreter is left out.
SUBSET = [  # each core dependency's use: websockets and httpx (sessions, Task API), pydantic (settings), rich
    "tests/client/test_client_session.py",  # (the eval's report), jsonschema (rendering); the CLI's help
    "tests/client/test_client_taskapi.py",
    "tests/client/test_client_units.py",
    "tests/client/test_client_render.py",
    "tests/client/test_server_settings.py",
    "tests/evaluation/test_harness.py",
    "tests/evaluation/test_eval_report.py",  # rich: the console table (Table.add_section, rich 12.6)
    "tests/samplers/test_sampler_basics.py",
    "tests/test_cli_help.py",
    # this one needs reasoning-gym (the server extra): `train --print-config` checks the config's datasets with it
    "--deselect", "tests/test_cli_help.py::test_train_print_config_runs_as_a_command",
    # 11 s of waiting for timeouts, the same with any httpx: the suite runs it in .venv
    "--deselect", "tests/client/test_client_taskapi.py::test_timeouts_are_retried_then_reported",
]


def uv() -> str | None:
    """scripts/setup's uv in this venv, else one on PATH."""
    beside = Path(sys.executable).parent / "uv"
    return str(beside) if beside.exists() else shutil.which("uv")


def declared() -> dict[str, Requirement]:
    """Every direct dependency the venv installs: the core's and those of EXTRAS, by name."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = [*project["dependencies"], *(line for extra in EXTRAS for line in project["optional-dependencies"][extra])]
    return {(req := Requirement(line)).name: req for line in lines}


def lower_bound(requirement: Requirement) -> Version:
    (bound,) = [Version(spec.version) for spec in requirement.specifier if spec.operator in (">=", "==")]
    return bound


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=HANG_GUARD_S, **kwargs)


@pytest.fixture(scope="module")
def lowest_python() -> Path:
    """`.venv-lowest`'s interpreter, the venv made again when its stamp (pyproject.toml and INSTALL) changed."""
    installer = uv() or pytest.skip("uv is absent (scripts/setup installs it into .venv): no lowest-versions venv")
    stamp = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + " ".join(INSTALL).encode()).hexdigest()[:16]
    python, stamp_file = VENV / "bin" / "python", VENV / ".stamp"
    if not (python.exists() and stamp_file.exists() and stamp_file.read_text() == stamp):
        shutil.rmtree(VENV, ignore_errors=True)
        for argv in ([installer, "venv", "-q", "--clear", "--python", sys.executable, str(VENV)],
                     [installer, "pip", "install", "-q", "--python", str(python), *INSTALL]):
            done = run(argv)
            assert done.returncode == 0, f"{' '.join(argv)} failed:\n{done.stdout}{done.stderr}"
        stamp_file.write_text(stamp)
    return python


def test_every_direct_dependency_is_at_its_declared_lower_bound(lowest_python):
    """A bound above what the code needs is harmless; one below it is a crash for whoever has that version, so
    each declared bound must be the version the subset below runs with."""
    names = sorted(declared())
    script = "import json, sys; from importlib.metadata import version; print(json.dumps({n: version(n) for n in sys.argv[1:]}))"
    done = run([str(lowest_python), "-c", script, *names])
    assert done.returncode == 0, done.stderr
    installed = json.loads(done.stdout)
    above = {name: (str(declared()[name].specifier), installed[name]) for name in names
             if Version(installed[name]) != lower_bound(declared()[name])}
    assert not above, f"uv's lowest-direct resolution installs versions above these bounds; raise the bounds in pyproject.toml: {above}"


def test_help_runs_with_the_lowest_versions(lowest_python):
    done = run([str(lowest_python.parent / "openenv-prime"), "--help"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: openenv-prime"), done.stdout


def test_the_fast_subset_passes_with_the_lowest_versions(lowest_python):
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")}
    env.update({SERVER_PYTHON_VAR: sys.executable, "PYTHONPATH": str(ROOT)})
    done = run([str(lowest_python), "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", *SUBSET], env=env)
    # pytest's exit code 5 (no test collected) fails here too: only 0 passes
    assert done.returncode == 0, f"pytest exited with {done.returncode}:\n{done.stdout[-6000:]}{done.stderr[-2000:]}"
