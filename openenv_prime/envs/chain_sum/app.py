"""The FastAPI app serving chain_sum, for both supported openenv versions (0.4.1 and 0.10.0)."""

from __future__ import annotations

import functools
import inspect

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.types import ConcurrencyConfig

from openenv_prime.envs.chain_sum.environment import (
    ChainSumAction,
    ChainSumEnvironment,
    ChainSumObservation,
    ChainSumState,
)
from openenv_prime.envs.chain_sum.taskset import ENV_NAME
from openenv_prime.envs.errors import add_task_error_handlers


def build_app(
    num_tiers: int = 5, schedule: str = "lockstep", max_sessions: int = 64, session_timeout: float | None = None
):
    """An app with the Task API under `/chain_sum/...` and episodes over `/ws`.

    At most `max_sessions` sockets at once; with `session_timeout`, a session idle that many seconds
    is closed so that a client that vanished without closing does not hold a slot forever."""
    if isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or max_sessions < 1:
        raise ValueError(f"max_sessions must be a positive integer, got {max_sessions!r}")
    if session_timeout is not None and not session_timeout > 0:
        raise ValueError(f"session_timeout must be positive seconds or None, got {session_timeout!r}")
    ChainSumEnvironment(num_tiers, schedule)  # fail here, not in the first request, on bad tiers
    factory = functools.partial(ChainSumEnvironment, num_tiers, schedule)
    kwargs = {}
    if "state_cls" in inspect.signature(create_app).parameters:  # openenv >= 0.10: state schema in /schema
        kwargs["state_cls"] = ChainSumState
    concurrency = ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=session_timeout)
    app = create_app(
        factory, ChainSumAction, ChainSumObservation, env_name=ENV_NAME, concurrency_config=concurrency, **kwargs
    )
    add_task_error_handlers(app)  # openenv alone answers an unknown split with a bare 500
    return app
