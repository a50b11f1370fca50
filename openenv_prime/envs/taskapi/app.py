"""`create_app_with_tasks(EnvClass, tasks)`: the FastAPI app serving any OpenEnv environment class with the
Task API, for openenv 0.4.1 and 0.10.0 alike. Hand it to uvicorn, or use `serve_with_tasks` to run it."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.types import ConcurrencyConfig

from openenv_prime.envs.errors import add_task_error_handlers
from openenv_prime.envs.taskapi.classes import load_class, load_environment, resolve_classes
from openenv_prime.envs.taskapi.naming import env_name_for
from openenv_prime.envs.taskapi.wrap import with_task_api

DEFAULT_MAX_SESSIONS = 64


def create_app_with_tasks(
    env: type | Callable[..., Any] | str,
    tasks: Any,
    *,
    action_cls: type | str | None = None,
    observation_cls: type | str | None = None,
    env_name: str | None = None,
    env_kwargs: dict[str, Any] | None = None,
    max_sessions: int | None = None,
    session_timeout: float | None = None,
    paths: tuple[str, ...] = (),
):
    """The app: Task API routes under ``/{env_name}/...`` answered from `tasks`, episodes over ``/ws``.

    `env`: the environment class, a function that returns an environment (for a class whose constructor needs
    Python objects), or ``"MODULE:NAME"`` naming either (imported with `paths` first on sys.path).
    `tasks`: a `TaskProvider` (e.g. `SeedTasks(100)`), a JSONL task-list path, or a callable returning
    task-list records. `env_kwargs` go to the class's constructor. `max_sessions` defaults to 64, or 1
    for a class without ``SUPPORTS_CONCURRENT_SESSIONS`` (openenv refuses more for it).
    Raises ValueError/TypeError naming what is wrong before anything is served."""
    target = load_environment(env, paths) if isinstance(env, str) else env
    action_cls = load_class(action_cls, paths) if isinstance(action_cls, str) else action_cls
    observation_cls = load_class(observation_cls, paths) if isinstance(observation_cls, str) else observation_cls
    if isinstance(target, type):
        env_cls = target
        wrapped = with_task_api(env_cls, tasks)
        factory = functools.partial(wrapped, **env_kwargs) if env_kwargs else wrapped
    else:
        env_cls, factory = _function_factory(target, tasks, env_kwargs)
    action_cls, observation_cls, state_cls = resolve_classes(env_cls, action_cls, observation_cls)
    concurrency = concurrency_config(env_cls, max_sessions, session_timeout)
    try:  # fail now, not in the first request, when the class cannot be built
        factory().close()
    except Exception as error:
        raise ValueError(f"cannot construct {env_cls.__qualname__}({kwargs_text(env_kwargs)}): {error!r}") from error
    extra: dict[str, Any] = {}
    if state_cls is not None and "state_cls" in inspect.signature(create_app).parameters:  # openenv >= 0.10
        extra["state_cls"] = state_cls
    app = create_app(
        factory,
        action_cls,
        observation_cls,
        env_name=env_name or env_name_for(env_cls),
        concurrency_config=concurrency,
        **extra,
    )
    add_task_error_handlers(app)
    return app


def _function_factory(make: Callable[..., Any], tasks: Any, env_kwargs: dict[str, Any] | None) -> tuple[type, Callable[[], Any]]:
    """The environment class a function returns (called once to see it) and a factory of its environments with the
    Task API: each one the function makes, its class made the Task API subclass of its own (which adds methods
    only), so the environment is the function's, built with whatever Python objects it holds."""
    name = getattr(make, "__qualname__", repr(make))
    made = functools.partial(make, **env_kwargs) if env_kwargs else make
    try:
        probe = made()
    except Exception as error:
        raise ValueError(f"cannot make an environment with {name}({kwargs_text(env_kwargs)}): {error!r}") from error
    env_cls = type(probe)
    wrapped = with_task_api(env_cls, tasks)  # a TypeError naming it when the function returns no Environment
    probe.close()

    def factory() -> Any:
        environment = made()
        if type(environment) is not env_cls:
            raise TypeError(f"{name}() returned a {type(environment).__qualname__} after a {env_cls.__qualname__}; "
                            "it must return environments of one class")
        environment.__class__ = wrapped
        return environment

    return env_cls, factory


def concurrency_config(env_cls: type, max_sessions: int | None, session_timeout: float | None) -> ConcurrencyConfig:
    """openenv's session limits for `env_cls`: `max_sessions` defaults to 64, or 1 for a class without
    ``SUPPORTS_CONCURRENT_SESSIONS`` (openenv refuses more for it); bad values raise ValueError naming the flag."""
    concurrent = bool(getattr(env_cls, "SUPPORTS_CONCURRENT_SESSIONS", False))
    if max_sessions is None:
        max_sessions = DEFAULT_MAX_SESSIONS if concurrent else 1
    if isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or max_sessions < 1:
        raise ValueError(f"--max-sessions must be a positive integer, got {max_sessions!r}")
    if max_sessions > 1 and not concurrent:
        raise ValueError(
            f"{env_cls.__qualname__} does not set SUPPORTS_CONCURRENT_SESSIONS = True, so openenv serves it one "
            f"session at a time; use --max-sessions 1 (or leave it out)"
        )
    if session_timeout is not None and not session_timeout > 0:
        raise ValueError(f"--session-timeout must be positive seconds, got {session_timeout!r}")
    return ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=session_timeout)


def kwargs_text(kwargs: dict[str, Any] | None) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in (kwargs or {}).items())
