"""The FastAPI app serving a reasoning-gym tiers environment (either case), for openenv 0.4.1 and 0.10.0."""

from __future__ import annotations

import functools
import inspect
from typing import Any

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.types import ConcurrencyConfig

from openenv_prime.envs.errors import add_task_error_handlers
from openenv_prime.envs.one_question import OneQuestionEnvironment


def build_app(environment: type[OneQuestionEnvironment], *args: Any, max_sessions: int = 64,
              session_timeout: float | None = None, **kwargs: Any):
    """An app serving ``environment(*args, **kwargs)``: the Task API under `/ENV_NAME/...` and episodes over `/ws`.

    At most `max_sessions` sockets at once; with `session_timeout`, a session idle that many seconds is closed, so a
    client that vanished without closing does not hold a slot forever. Bad environment arguments fail here, not in
    the first request."""
    if isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or max_sessions < 1:
        raise ValueError(f"--max-sessions must be a positive integer, got {max_sessions!r}")
    if session_timeout is not None and not session_timeout > 0:
        raise ValueError(f"--session-timeout must be positive seconds, got {session_timeout!r}")
    env_name = environment(*args, **kwargs).taskset.ENV_NAME
    options = {}
    if "state_cls" in inspect.signature(create_app).parameters:  # openenv >= 0.10: state schema in /schema
        options["state_cls"] = environment.state_cls
    app = create_app(
        functools.partial(environment, *args, **kwargs),
        environment.action_cls,
        environment.observation_cls,
        env_name=env_name,
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=session_timeout),
        **options,
    )
    add_task_error_handlers(app)  # openenv alone answers an unknown split with a bare 500
    return app
