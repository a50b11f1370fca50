"""The FastAPI app serving reasoning-gym datasets in tiers, for openenv 0.4.1 and 0.10.0."""

from __future__ import annotations

import functools
import inspect
from typing import Sequence

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.types import ConcurrencyConfig

from openenv_prime.envs.errors import add_task_error_handlers
from openenv_prime.envs.reasoning_gym_tiers.environment import (
    ReasoningGymAction,
    ReasoningGymObservation,
    ReasoningGymState,
    ReasoningGymTiersEnvironment,
)
from openenv_prime.envs.reasoning_gym_tiers.taskset import ENV_NAME, check_datasets


def build_app(
    datasets: Sequence[str],
    num_tiers: int = 3,
    per_tier: dict[str, int] | None = None,
    max_sessions: int = 64,
    session_timeout: float | None = None,
):
    """An app with the Task API under `/reasoning_gym/...` and episodes over `/ws`; bad datasets fail here."""
    if isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or max_sessions < 1:
        raise ValueError(f"--max-sessions must be a positive integer, got {max_sessions!r}")
    if session_timeout is not None and not session_timeout > 0:
        raise ValueError(f"--session-timeout must be positive seconds, got {session_timeout!r}")
    datasets = tuple(datasets)
    ReasoningGymTiersEnvironment(datasets, num_tiers, per_tier)
    check_datasets(datasets, num_tiers)
    factory = functools.partial(ReasoningGymTiersEnvironment, datasets, num_tiers, per_tier)
    kwargs = {}
    if "state_cls" in inspect.signature(create_app).parameters:  # openenv >= 0.10
        kwargs["state_cls"] = ReasoningGymState
    app = create_app(
        factory,
        ReasoningGymAction,
        ReasoningGymObservation,
        env_name=ENV_NAME,
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=session_timeout),
        **kwargs,
    )
    add_task_error_handlers(app)
    return app
