"""patches/check says what to install or set before doing anything: prime-rl's pinned verifiers when its
submodule is empty (naming the pin), a verifiers checkout at another commit than the pin, a prime-rl
interpreter missing packages (hypothesis, psutil, setproctitle, pytest-timeout, ... all named), and a
missing server interpreter (no .venv) named by its variable instead of a FileNotFoundError.

patches/check runs these tests itself (its step 4) in prime-rl's interpreter, which has no openenv, with the caller's
PRIME_RL_PYTHON and the server interpreter it checked in the environment: each check here gets only the interpreters
its test names (a caller's PRIME_RL_PYTHON skips the pin checks), and the package check gets a server interpreter that
has openenv (`server_python`), so that the server check passes and the package check is reached."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.support.waiting import HANG_GUARD_S

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "patches" / "check"
SERVER_PYTHON_VAR = "OPENENV_PRIME_SERVER_PYTHON"
INTERPRETER_VARS = ("PRIME_RL_PYTHON", SERVER_PYTHON_VAR)  # set by each test, never inherited
_SERVES = "import importlib.util as u, sys; sys.exit(not all(u.find_spec(m) for m in ('openenv', 'reasoning_gym')))"


def can_serve(python: str) -> bool:
    """Whether ``python`` has what patches/check asks of the server interpreter (openenv and reasoning-gym)."""
    return Path(python).is_file() and subprocess.run([python, "-c", _SERVES], timeout=HANG_GUARD_S).returncode == 0


@pytest.fixture(scope="module")
def server_python() -> str:
    """An interpreter that can serve chain_sum: the one patches/check checked and exported, this one, or this
    repository's .venv (prime-rl's interpreter, which runs these tests in patches/check, has no openenv)."""
    candidates = (os.environ.get(SERVER_PYTHON_VAR), sys.executable, str(ROOT / ".venv" / "bin" / "python"))
    found = next((python for python in candidates if python and can_serve(python)), None)
    if found is None:
        pytest.skip(f"no interpreter with openenv and reasoning-gym: set {SERVER_PYTHON_VAR} to one")
    return found


@pytest.fixture(scope="module")
def fake_checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    checkout = tmp_path_factory.mktemp("prime-rl")
    (checkout / "src" / "prime_rl").mkdir(parents=True)
    return checkout


def run_check(checkout: Path, *more: Path, **env: str) -> subprocess.CompletedProcess:
    """patches/check with the interpreters in ``env`` only, none inherited."""
    inherited = {name: value for name, value in os.environ.items() if name not in INTERPRETER_VARS}
    return subprocess.run(
        ["bash", str(CHECK), str(checkout), *map(str, more)], capture_output=True, text=True, timeout=HANG_GUARD_S,
        env={**inherited, **env},
    )


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})
    return done.stdout.strip()


@pytest.fixture(scope="module")
def pinning_checkout(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A git prime-rl tree whose deps/verifiers submodule pins a commit but is not checked out (as in a
    snapshot without submodules), and that pin."""
    checkout = tmp_path_factory.mktemp("prime-rl-git")
    (checkout / "src" / "prime_rl").mkdir(parents=True)
    (checkout / "src" / "prime_rl" / "__init__.py").write_text("")
    (checkout / "deps" / "verifiers").mkdir(parents=True)
    pin = "a60a606ecc4d309247edf9ff92c3eabca362781f"
    git(checkout, "init", "-q")
    git(checkout, "add", "src")
    git(checkout, "update-index", "--add", "--cacheinfo", f"160000,{pin},deps/verifiers")
    git(checkout, "commit", "-q", "-m", "pin")
    return checkout, pin


def test_an_empty_verifiers_submodule_names_the_pin_and_the_second_argument(pinning_checkout) -> None:
    """The arguments are checked before any interpreter: these tests name none."""
    checkout, pin = pinning_checkout
    out = run_check(checkout)
    assert out.returncode == 2
    assert "deps/verifiers submodule is not checked out" in out.stderr and pin in out.stderr
    assert "second argument" in out.stderr


def test_a_verifiers_checkout_at_another_commit_than_the_pin_is_refused(pinning_checkout, tmp_path: Path) -> None:
    checkout, pin = pinning_checkout
    verifiers = tmp_path / "verifiers"
    (verifiers / "verifiers" / "v1").mkdir(parents=True)
    (verifiers / "pyproject.toml").write_text('[project]\nname = "verifiers"\n')
    git(verifiers, "init", "-q")
    git(verifiers, "add", ".")
    git(verifiers, "commit", "-q", "-m", "not the pin")
    out = run_check(checkout, verifiers)
    assert out.returncode == 2
    assert f"pins verifiers {pin}" in out.stderr and f"checkout {pin}" in out.stderr
    assert git(verifiers, "rev-parse", "HEAD") in out.stderr


def test_a_second_argument_that_is_not_verifiers_is_named(pinning_checkout, tmp_path: Path) -> None:
    checkout, _ = pinning_checkout
    out = run_check(checkout, tmp_path)
    assert out.returncode == 2
    assert f"{tmp_path} is not a verifiers source tree" in out.stderr


def test_a_missing_server_interpreter_names_the_variable(fake_checkout: Path, tmp_path: Path) -> None:
    out = run_check(fake_checkout, PRIME_RL_PYTHON=sys.executable, OPENENV_PRIME_SERVER_PYTHON=str(tmp_path / "none"))
    assert out.returncode == 2
    assert "set OPENENV_PRIME_SERVER_PYTHON" in out.stderr
    assert "FileNotFoundError" not in out.stderr + out.stdout


def test_every_missing_package_is_named_with_the_install_line(fake_checkout: Path, server_python: str, tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    venv.create(bare, with_pip=False)
    out = run_check(fake_checkout, PRIME_RL_PYTHON=str(bare / "bin" / "python"), OPENENV_PRIME_SERVER_PYTHON=server_python)
    assert out.returncode == 2
    lacks = out.stderr.split("lacks:", 1)[1].splitlines()[0].split()
    for package in ("hypothesis", "psutil", "setproctitle", "pytest-timeout", "torch==2.13.0", "pyzmq",
                    "PRIME_RL_CHECKOUT/deps/verifiers"):
        assert package in lacks
    assert "-m pip install" in out.stderr


def test_install_lists_in_the_readme_and_the_check_agree() -> None:
    """The manual install line (for PRIME_RL_PYTHON) lists what the check installs itself."""
    readme = (ROOT / "patches" / "README.md").read_text()
    install = readme.split("/tmp/venv-primerl/bin/pip install", 1)[1].split("PRIME_RL_PYTHON=", 1)[0]
    listed = set(install.replace("\\", " ").split())
    packages = CHECK.read_text().split('PACKAGES="', 1)[1].split('"', 1)[0].split()
    assert "torch==2.13.0" in packages and "pyzmq" in packages
    assert set(packages) <= listed
    assert "/tmp/prime-rl/deps/verifiers" in listed  # the pinned verifiers, not the registry's


def test_an_unreachable_package_index_is_named_before_pip_runs(fake_checkout: Path, tmp_path: Path) -> None:
    """pip retries an index it cannot reach for minutes: the check names it at once, and CHECK_PIP_ARGS= (the usage)."""
    from tests.support.processes import free_port

    verifiers = tmp_path / "verifiers"
    (verifiers / "verifiers" / "v1").mkdir(parents=True)
    (verifiers / "pyproject.toml").write_text('[project]\nname = "verifiers"\n')
    git(verifiers, "init", "-q")
    git(verifiers, "add", ".")
    git(verifiers, "commit", "-q", "-m", "any commit: the fake checkout is no git tree, so it pins none")
    index = f"http://127.0.0.1:{free_port()}/simple"  # nothing listens there
    out = run_check(fake_checkout, verifiers, CHECK_VENV_DIR=str(tmp_path / "venvs"),
                    CHECK_PIP_ARGS=f"--extra-index-url {index}")
    assert out.returncode == 2
    assert f"the package index {index}" in out.stderr and "cannot be reached" in out.stderr
    assert "CHECK_PIP_ARGS= patches/check" in out.stderr
    assert not (tmp_path / "venvs").exists()  # nothing built


def test_the_usage_says_how_to_run_without_pytorchs_index() -> None:
    out = subprocess.run(["bash", str(CHECK)], capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert out.returncode == 2
    assert "CHECK_PIP_ARGS= patches/check" in out.stderr
