"""`OpenEnvPrimeSampler`: the adapter as a real prime-rl `TaskSampler`. This is the only module
that imports prime-rl; name it in a prime-rl TOML as
`import_path = "openenv_prime.prime_rl_adapter.OpenEnvPrimeSampler"` (`type = "custom"`)."""

from __future__ import annotations

try:
    from prime_rl.orchestrator.curriculum.samplers.base import TaskSampler
except ImportError as exc:
    raise ImportError(
        "openenv_prime.prime_rl_adapter.OpenEnvPrimeSampler subclasses prime-rl's TaskSampler, and "
        f"prime-rl does not import here ({exc}). Run it in prime-rl's orchestrator environment, with "
        "patches/prime-rl-custom-sampler.patch applied (see patches/README.md); "
        "openenv_prime.prime_rl_adapter.SamplerCore is the same logic without prime-rl."
    ) from exc

from typing import Any

from openenv_prime.prime_rl_adapter.core import SamplerCore


def _orchestrator_warning(message: str) -> None:
    """Into the orchestrator's own log (prime-rl's loguru logger), not a stdlib logger nobody reads."""
    from prime_rl.utils.logger import get_logger

    get_logger().warning(message)


class OpenEnvPrimeSampler(SamplerCore, TaskSampler):
    """Any openenv_prime sampler (curriculum, uniform, sequential) as a prime-rl curriculum sampler.

    Built by prime-rl's `Curriculum` as `OpenEnvPrimeSampler(tasks, **kwargs)`; see `AdapterConfig`
    for the kwargs."""

    def __init__(self, tasks: Any, **kwargs: Any) -> None:
        super().__init__(tasks, **kwargs)
        self.warn = _orchestrator_warning
