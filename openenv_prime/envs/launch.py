"""Start an environment server in a subprocess for tests, the trainer, benchmarks and scripts.

No `openenv` import here: the server runs in its own interpreter (`python`, default this one), so a
caller can serve from another virtualenv (e.g. one with a different openenv version). `local_server`
serves through `openenv-prime serve`; `local_app` serves an environment's own ASGI app under uvicorn,
untouched (how its authors run it).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import httpx

from openenv_prime.envs.serve import LISTENING_PREFIX, PARENT_PID_VAR

ENVIRONMENTS = ("chain-sum", "reasoning-gym", "imported")
"""Named environments ("imported" with `package`); besides these, `local_server` serves any "MODULE:CLASS"
(with `tasks` or `seeds`)."""


def check_datasets_have_tiers(datasets: Sequence[str], tiers: int) -> None:
    """Raise a ValueError naming every reasoning-gym dataset that `serve reasoning-gym --tiers N` would refuse
    (unknown, no curriculum, fewer levels than `tiers`), so a config fails before a server or model starts.
    Reads reasoning-gym's curricula only; builds no items."""
    from openenv_prime.envs.reasoning_gym_tiers.tiers import DatasetError, dataset_tiers

    problems = []
    for name in datasets:
        try:
            dataset_tiers(name, tiers)
        except DatasetError as error:
            problems.append(str(error))
    if problems:
        raise ValueError("; ".join(problems))


class ServerStartError(RuntimeError):
    """The server exited or did not become healthy in time; the message carries its output tail."""


def _tail(log: Path, lines: int = 30) -> str:
    text = log.read_text(errors="replace").splitlines()
    return "\n".join(text[-lines:]) or "(no output)"


def _listening_url(log: Path) -> str | None:
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith(LISTENING_PREFIX):
            return line[len(LISTENING_PREFIX):].strip()
    return None


def _wait_until_healthy(process: subprocess.Popen, log: Path, command: list[str], deadline: float, url: str | None = None) -> str:
    """The server's URL once ``/health`` answers; ``url`` when known up front, else read from its listening line."""
    with httpx.Client(timeout=2.0) as http:
        while True:
            if process.poll() is not None:
                raise ServerStartError(
                    f"server exited with code {process.returncode} before becoming healthy.\n"
                    f"command: {' '.join(command)}\noutput tail:\n{_tail(log)}"
                )
            url = url or _listening_url(log)
            if url is not None:
                try:
                    if http.get(f"{url}/health").status_code == 200:
                        return url
                except httpx.HTTPError:
                    pass
            if time.monotonic() > deadline:
                stage = "print its listening line" if url is None else f"answer /health at {url}"
                raise ServerStartError(
                    f"server did not {stage} in time.\ncommand: {' '.join(command)}\noutput tail:\n{_tail(log)}"
                )
            time.sleep(0.1)


def _stop(process: subprocess.Popen, grace: float = 10.0) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=grace)


@contextlib.contextmanager
def local_server(
    env: str = "chain-sum",
    *,
    tiers: int | None = None,
    max_sessions: int | None = None,
    python: str | None = None,
    port: int = 0,
    host: str = "127.0.0.1",
    startup_timeout: float = 300.0,
    schedule: str | None = None,
    session_timeout: float | None = None,
    datasets: Sequence[str] | None = None,
    tasks: str | os.PathLike[str] | None = None,
    seeds: int | None = None,
    splits: Sequence[str] | None = None,
    paths: Sequence[str | os.PathLike[str]] = (),
    env_name: str | None = None,
    package: str | os.PathLike[str] | None = None,
    extra_args: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    log_file: str | os.PathLike[str] | None = None,
) -> Iterator[str]:
    """Serve `env` in a subprocess; yield its base URL (``http://127.0.0.1:PORT``) once `/health` answers.

    `env` is "chain-sum" (`tiers`, `schedule`), "reasoning-gym" (`datasets`, `tiers`), "imported" (`package`: a
    directory made by openenv's `openenv import`) or "MODULE:CLASS" (any OpenEnv environment class, with the Task
    API over a JSONL task list `tasks` or `seeds` per split; `paths` are put first on the server's sys.path to
    import MODULE). Arguments left None take the `openenv-prime serve` defaults; `extra_args` are passed to it as
    they are; `environ` adds variables to the server's environment (e.g. an environment's own settings);
    `log_file` keeps the server's output (default: a temporary file, gone with the server). The server is stopped
    (SIGTERM, then SIGKILL after 10 s) when the block exits, however it exits. Raises `ServerStartError`
    with the server's output tail if it dies (at once) or is not healthy within `startup_timeout` seconds (a hang
    guard: a server starts in seconds on a quiet machine and in over a minute on a loaded one).
    """
    if env not in ENVIRONMENTS and ":" not in env:
        raise ValueError(
            f"unknown environment {env!r}; local_server can start: {', '.join(ENVIRONMENTS)}, or MODULE:CLASS"
        )
    if (env == "imported") != (package is not None):
        raise ValueError("local_server serves a package directory (package=) as env 'imported', and only then")
    command = [python or sys.executable, "-m", "openenv_prime.envs", "serve", env, *([os.fspath(package)] if package else []),
               "--host", host, "--port", str(port)]
    options = {
        "--tiers": tiers, "--schedule": schedule, "--max-sessions": max_sessions, "--session-timeout": session_timeout,
        "--datasets": ",".join(datasets) if datasets is not None else None,
        "--tasks": os.fspath(tasks) if tasks is not None else None, "--tasks-per-split": seeds,
        "--splits": ",".join(splits) if splits is not None else None, "--env-name": env_name,
    }
    for flag, value in options.items():
        if value is not None:
            command += [flag, str(value)]
    for path in paths:
        command += ["--path", os.fspath(path)]
    command += list(extra_args)
    # The repository root on PYTHONPATH lets another virtualenv's interpreter import openenv_prime.
    root = str(Path(__file__).resolve().parents[2])
    with _running(command, _environ([root], environ, {PARENT_PID_VAR: str(os.getpid())}), startup_timeout, log_file) as url:
        yield url


@contextlib.contextmanager
def local_app(
    app: str,
    *,
    python: str | None = None,
    paths: Sequence[str | os.PathLike[str]] = (),
    environ: Mapping[str, str] | None = None,
    host: str = "127.0.0.1",
    startup_timeout: float = 300.0,
    log_file: str | os.PathLike[str] | None = None,
) -> Iterator[str]:
    """Serve an ASGI app, ``"MODULE:ATTRIBUTE"`` (e.g. an OpenEnv environment's own ``envs.X.server.app:app``),
    under uvicorn as it is, from `python` (which must have uvicorn), with `paths` first on PYTHONPATH and
    `environ` added to its environment (`log_file` as for `local_server`); yield its base URL once ``/health``
    answers; stop it on exit, as `local_server` does. Raises `ServerStartError` with the server's output tail."""
    if ":" not in app:
        raise ValueError(f"expected MODULE:ATTRIBUTE naming an ASGI app (e.g. envs.echo_env.server.app:app), got {app!r}")
    port = _free_port(host)
    command = [python or sys.executable, "-m", "uvicorn", app, "--host", host, "--port", str(port), "--log-level", "warning"]
    url = f"http://{host}:{port}"
    with _running(command, _environ([os.fspath(p) for p in paths], environ), startup_timeout, log_file, url) as url:
        yield url


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _environ(paths: Sequence[str], extra: Mapping[str, str] | None, own: Mapping[str, str] | None = None) -> dict[str, str]:
    pythonpath = os.pathsep.join(filter(None, [*paths, os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": pythonpath, **(own or {}), **(extra or {})}


@contextlib.contextmanager
def _running(
    command: list[str], environ: dict[str, str], startup_timeout: float, log_file: str | os.PathLike[str] | None, url: str | None = None
) -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="openenv-prime-server-") as tmp:
        log = Path(log_file) if log_file is not None else Path(tmp) / "server.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=environ)
        try:
            yield _wait_until_healthy(process, log, command, time.monotonic() + startup_timeout, url)
        finally:
            _stop(process)
