"""Environments written as their authors would (a verifiers `load_environment` module whose system prompt demands a
format, an ORS environment, and the ORS quick start's `MathEnv`), put through openenv 0.10.0's `openenv import` once per session and served with `openenv-prime serve
imported` from .venv-openenv010 (which has verifiers 0.3.1 and ors-sdk 0.1.0 beside openenv 0.10.0)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from openenv_prime.envs.launch import local_server

OPENENV010_PYTHON_VAR = "OPENENV_PRIME_OPENENV010_PYTHON"
SOURCES = Path(__file__).parent
PACKAGES = {"vf_sums": "vf_sums_env", "ors_sums": "ors_sums_env", "ors_quickstart": "ors_quickstart_env"}
"""Source folder -> the package name `openenv import` is given (the routes are /NAME/...)."""


def openenv010_python() -> str:
    python = os.environ.get(OPENENV010_PYTHON_VAR)
    if not python:
        pytest.skip(f"{OPENENV010_PYTHON_VAR} is unset: no openenv 0.10.0 interpreter to import and serve environments")
    return python


@pytest.fixture(scope="session")
def imported_packages(tmp_path_factory) -> dict[str, Path]:
    """``{source: package_dir}``: each source imported by the `openenv` CLI of openenv 0.10.0, as a user runs it."""
    openenv = Path(openenv010_python()).with_name("openenv")
    out = tmp_path_factory.mktemp("imported")
    runs = {  # all at once: most of each run is the CLI's start-up
        source: subprocess.Popen([str(openenv), "import", str(SOURCES / source), "--name", name, "--output-dir", str(out)],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL)
        for source, name in PACKAGES.items()
    }
    for source, run in runs.items():
        output, _ = run.communicate(timeout=600)
        assert run.returncode == 0 and "Generated OpenEnv wrapper" in output, output[-3000:]
    return {source: out / name for source, name in PACKAGES.items()}


@pytest.fixture(scope="session")
def vf_sums_server(imported_packages):
    """Base URL of the imported verifiers environment (one session at a time, as its wrapper declares)."""
    with local_server("imported", package=imported_packages["vf_sums"], python=openenv010_python(), startup_timeout=300) as url:
        yield url


@pytest.fixture(scope="session")
def ors_sums_server(imported_packages):
    """Base URL of the imported ORS environment."""
    with local_server("imported", package=imported_packages["ors_sums"], python=openenv010_python(), startup_timeout=300) as url:
        yield url



@pytest.fixture(scope="session")
def ors_quickstart_server(imported_packages):
    """Base URL of the imported ORS quick start environment."""
    with local_server("imported", package=imported_packages["ors_quickstart"], python=openenv010_python(),
                      startup_timeout=300) as url:
        yield url
