"""openenv_prime samplers inside prime-rl's curriculum.

`SamplerCore` and its helpers need no prime-rl; `OpenEnvPrimeSampler` (prime-rl's `TaskSampler`
subclass) needs it. Everything loads on first use, so this package imports where prime-rl is not
installed and `openenv-prime --help` stays instant."""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "AdapterConfig": "openenv_prime.prime_rl_adapter.config",
    "parse_kwargs": "openenv_prime.prime_rl_adapter.config",
    "SamplerCore": "openenv_prime.prime_rl_adapter.core",
    "GroupReport": "openenv_prime.prime_rl_adapter.groups",
    "read_group": "openenv_prime.prime_rl_adapter.groups",
    "OpenEnvPrimeSampler": "openenv_prime.prime_rl_adapter.sampler",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
