"""`OpenEnvPrimeSampler`: the adapter as a real prime-rl `TaskSampler`. This is the only module
that imports prime-rl; name it in a prime-rl TOML as
`import_path = "openenv_prime.prime_rl_adapter.OpenEnvPrimeSampler"` (`type = "custom"`)."""

from __future__ import annotations

from prime_rl.orchestrator.curriculum.samplers.base import TaskSampler

from openenv_prime.prime_rl_adapter.core import SamplerCore


class OpenEnvPrimeSampler(SamplerCore, TaskSampler):
    """Any openenv_prime sampler (curriculum, uniform, sequential) as a prime-rl curriculum sampler.

    Built by prime-rl's `Curriculum` as `OpenEnvPrimeSampler(tasks, **kwargs)`; see `AdapterConfig`
    for the kwargs."""
