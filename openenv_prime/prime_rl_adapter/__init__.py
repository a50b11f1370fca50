"""openenv_prime samplers inside prime-rl's curriculum.

`SamplerCore` and its helpers need no prime-rl; `OpenEnvPrimeSampler` (prime-rl's `TaskSampler`
subclass) is imported on first use, so this package imports where prime-rl is not installed."""

from __future__ import annotations

from typing import Any

from openenv_prime.prime_rl_adapter.config import AdapterConfig, parse_kwargs
from openenv_prime.prime_rl_adapter.core import SamplerCore
from openenv_prime.prime_rl_adapter.groups import GroupReport, read_group

__all__ = ["AdapterConfig", "GroupReport", "OpenEnvPrimeSampler", "SamplerCore", "parse_kwargs", "read_group"]


def __getattr__(name: str) -> Any:
    if name == "OpenEnvPrimeSampler":
        from openenv_prime.prime_rl_adapter.sampler import OpenEnvPrimeSampler

        return OpenEnvPrimeSampler
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
