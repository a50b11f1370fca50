"""Serve an environment under uvicorn and announce the bound address on stdout.

The socket is bound before uvicorn starts, so `--port 0` gets a free port and the printed line
(`listening on http://HOST:PORT`) names the real one; `local_server` reads that line.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time

LISTENING_PREFIX = "listening on "
PARENT_PID_VAR = "OPENENV_PRIME_PARENT_PID"


def _bind(host: str, port: int) -> socket.socket:
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as error:
        sock.close()
        raise SystemExit(f"cannot bind {host}:{port}: {error.strerror}; choose another --port (0 picks a free one)")
    sock.listen(2048)
    return sock


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if sock.family == socket.AF_INET6 else f"http://{host}:{port}"


def _skip_gradio_unless_web_ui() -> None:
    """openenv imports its gradio web UI inside try/except ModuleNotFoundError; blocking the import makes
    importing openenv about 3x faster (benchmarks/envs/server_startup.py). ENABLE_WEB_INTERFACE=true
    keeps the web UI."""
    if os.getenv("ENABLE_WEB_INTERFACE", "false").lower() not in ("true", "1", "yes"):
        sys.modules.setdefault("gradio", None)


def _exit_with_parent() -> None:
    """A server started by `local_server` stops when its parent dies, even if the parent was killed
    before it could stop the server (OPENENV_PRIME_PARENT_PID names the parent)."""
    parent = os.environ.pop(PARENT_PID_VAR, None)
    if not parent or os.getppid() != int(parent):
        return  # not started by local_server, or through a wrapper process: nothing reliable to watch

    def watch() -> None:
        while os.getppid() == int(parent):
            time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGTERM)  # uvicorn shuts down gracefully on SIGTERM

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def _run(sock: socket.socket, app, log_level: str) -> int:
    import uvicorn

    config = uvicorn.Config(app, log_level=log_level, access_log=False, timeout_graceful_shutdown=5)
    _exit_with_parent()
    print(f"{LISTENING_PREFIX}{_url(sock)}", flush=True)
    uvicorn.Server(config).run(sockets=[sock])
    return 0


def serve_chain_sum(
    host: str, port: int, tiers: int, schedule: str, max_sessions: int, log_level: str, session_timeout: float | None = None
) -> int:
    """`openenv-prime serve chain-sum`: the chain_sum case of the reasoning-gym tiers server."""
    sock = _bind(host, port)
    try:  # reject bad arguments before the slow openenv import
        from openenv_prime.envs.reasoning_gym_tiers.chain_sum import ChainSumTaskset

        ChainSumTaskset(tiers, schedule)
        if max_sessions < 1:
            raise ValueError(f"--max-sessions must be at least 1, got {max_sessions}")
        if session_timeout is not None and not session_timeout > 0:
            raise ValueError(f"--session-timeout must be positive seconds, got {session_timeout}")
    except ValueError as error:
        sock.close()
        raise SystemExit(f"openenv-prime serve chain-sum: {error}")
    _skip_gradio_unless_web_ui()
    from openenv_prime.envs.reasoning_gym_tiers.app import build_app
    from openenv_prime.envs.reasoning_gym_tiers.environment import ChainSumEnvironment

    app = build_app(ChainSumEnvironment, tiers, schedule, max_sessions=max_sessions, session_timeout=session_timeout)
    return _run(sock, app, log_level)


def serve_reasoning_gym(args, max_sessions: int) -> int:
    """`openenv-prime serve reasoning-gym`: datasets checked (tiers, one item each) before serving."""
    sock = _bind(args.host, args.port)
    datasets = [d.strip() for d in (args.datasets or "").split(",") if d.strip()]
    per_tier = {"train": 10_000 if args.train_size is None else args.train_size, "test": 200 if args.test_size is None else args.test_size}
    if args.heldout_size is not None:
        per_tier["heldout"] = args.heldout_size
    try:
        if not datasets:
            raise ValueError("--datasets is required: name one or more reasoning-gym datasets, e.g. --datasets leg_counting,chain_sum")
        if max_sessions < 1:
            raise ValueError(f"--max-sessions must be at least 1, got {max_sessions}")
        from openenv_prime.envs.reasoning_gym_tiers.layout import ReasoningGymTaskset, check_datasets

        tiers = 3 if args.tiers is None else args.tiers
        taskset = ReasoningGymTaskset(datasets, tiers, per_tier)
        check_datasets(datasets, tiers)
        taskset.check_heldout()
        _skip_gradio_unless_web_ui()
        from openenv_prime.envs.reasoning_gym_tiers.app import build_app
        from openenv_prime.envs.reasoning_gym_tiers.environment import ReasoningGymTiersEnvironment

        app = build_app(ReasoningGymTiersEnvironment, datasets, tiers, per_tier, max_sessions=max_sessions,
                        session_timeout=args.session_timeout)
    except ValueError as error:
        sock.close()
        raise SystemExit(f"openenv-prime serve reasoning-gym: {error}")
    return _run(sock, app, args.log_level)


def serve_with_tasks(
    env: type | str,
    tasks,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "warning",
    **app_options,
) -> int:
    """Serve any OpenEnv environment class (or "MODULE:CLASS") with the Task API over `tasks` until stopped.

    `tasks` and `app_options` (action_cls, observation_cls, env_name, env_kwargs, max_sessions,
    session_timeout, paths) are those of `openenv_prime.envs.taskapi.create_app_with_tasks`. Prints
    ``listening on http://HOST:PORT`` once bound (port 0 picks a free port); bad arguments exit with
    their message before anything is served."""
    sock = _bind(host, port)
    _skip_gradio_unless_web_ui()
    try:
        from openenv_prime.envs.taskapi.tasklist import as_task_provider

        tasks = as_task_provider(tasks)  # a bad task list fails here, before the slow openenv import
        from openenv_prime.envs.taskapi.app import create_app_with_tasks

        app = create_app_with_tasks(env, tasks, **app_options)
    except (ValueError, TypeError) as error:
        sock.close()
        raise SystemExit(f"openenv-prime serve {env if isinstance(env, str) else env.__qualname__}: {error}")
    return _run(sock, app, log_level)


def serve_imported(
    package_dir: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "warning",
    env_kwargs: dict | None = None,
    max_sessions: int | None = None,
    session_timeout: float | None = None,
) -> int:
    """`openenv-prime serve imported PACKAGE_DIR`: a package made by `openenv import` (see envs/imported.py)."""
    sock = _bind(host, port)
    _skip_gradio_unless_web_ui()
    try:
        from openenv_prime.envs.imported import create_imported_app

        app = create_imported_app(package_dir, env_kwargs=env_kwargs, max_sessions=max_sessions,
                                  session_timeout=session_timeout)
    except (ValueError, TypeError) as error:
        sock.close()
        raise SystemExit(f"openenv-prime serve imported {package_dir}: {error}")
    return _run(sock, app, log_level)
