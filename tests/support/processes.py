"""Run a test server in a subprocess: wait until it answers, always stop it."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx

from tests.support.waiting import until

REPO = Path(__file__).resolve().parents[2]
# tests/test_lowest_versions.py runs the client from a venv of the lowest versions pyproject.toml allows, which has
# no openenv: the chain_sum servers of the tests it runs come from the interpreter this variable names.
SERVER_PYTHON_VAR = "OPENENV_PRIME_SERVER_PYTHON"


def server_python() -> str | None:
    """The interpreter that serves chain_sum in the tests: $OPENENV_PRIME_SERVER_PYTHON, else this one (None)."""
    return os.environ.get(SERVER_PYTHON_VAR)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def serving(argv: list[str], ready_url: str, log_path: Path, *, env: dict | None = None,
            cwd: Path | None = None) -> Iterator[subprocess.Popen]:
    """Start ``argv``, wait until ``GET ready_url`` answers 200, yield the process, then stop it.

    Output goes to ``log_path``, not a pipe (a full pipe would block the server); its tail is in the error
    when the server exits first, or stays silent past the hang guard. The repository root leads the child's
    ``PYTHONPATH`` (of ``env``, else this process's), so a test server run as a script imports ``tests.support``;
    ``cwd``: the folder it runs in (default: this process's)."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    with log_path.open("w") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd)
        try:
            try:
                until(lambda: answers(ready_url), f"{argv[:3]} to answer at {ready_url}", process=process, interval=0.3)
            except AssertionError as exc:
                raise RuntimeError(f"{exc}: {log_path.read_text()[-2000:]}") from None
            yield process
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=20)


def answers(url: str) -> bool:
    """Whether ``GET url`` answers 200 now."""
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False
