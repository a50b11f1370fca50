"""patches/check says what to install or set before doing anything: a prime-rl interpreter missing
packages (hypothesis, psutil, setproctitle, pytest-timeout, ... all named), and a missing server
interpreter (no .venv) named by its variable instead of a FileNotFoundError."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "patches" / "check"


@pytest.fixture(scope="module")
def fake_checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    checkout = tmp_path_factory.mktemp("prime-rl")
    (checkout / "src" / "prime_rl").mkdir(parents=True)
    return checkout


def run_check(checkout: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(CHECK), str(checkout)], capture_output=True, text=True, timeout=120,
        env={**os.environ, **env},
    )


def test_a_missing_server_interpreter_names_the_variable(fake_checkout: Path, tmp_path: Path) -> None:
    out = run_check(fake_checkout, PRIME_RL_PYTHON=sys.executable, OPENENV_PRIME_SERVER_PYTHON=str(tmp_path / "none"))
    assert out.returncode == 2
    assert "set OPENENV_PRIME_SERVER_PYTHON" in out.stderr
    assert "FileNotFoundError" not in out.stderr + out.stdout


def test_every_missing_package_is_named_with_the_install_line(fake_checkout: Path, tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    venv.create(bare, with_pip=False)
    out = run_check(fake_checkout, PRIME_RL_PYTHON=str(bare / "bin" / "python"), OPENENV_PRIME_SERVER_PYTHON=sys.executable)
    if "cannot import openenv" in out.stderr:
        pytest.skip("this interpreter cannot serve chain_sum (no openenv): the server check fires first")
    assert out.returncode == 2
    lacks = out.stderr.split("lacks:", 1)[1].splitlines()[0].split()
    for package in ("hypothesis", "psutil", "setproctitle", "pytest-timeout", "torch==2.13.0", "verifiers==0.4.0", "pyzmq"):
        assert package in lacks
    assert "-m pip install" in out.stderr


def test_install_lists_in_the_readme_and_the_check_agree() -> None:
    readme = (ROOT / "patches" / "README.md").read_text()
    install = readme.split("/tmp/venv-primerl/bin/pip install", 1)[1].split("PRIME_RL_PYTHON=", 1)[0]
    listed = set(install.replace("\\", " ").split())
    for package in ("hypothesis", "psutil", "setproctitle", "pytest-timeout", "pyzmq", "torch==2.13.0", "verifiers==0.4.0"):
        assert package in listed
        assert package in CHECK.read_text()
