"""Build a sampler from its name, as configs (TOML, CLI flags) spell it."""

from __future__ import annotations

import inspect
from typing import Any, Iterable, Mapping

from openenv_prime.samplers.curriculum import CurriculumSampler
from openenv_prime.samplers.pool import TaskPool
from openenv_prime.samplers.pooled import PooledSampler
from openenv_prime.samplers.sequential import SequentialSampler
from openenv_prime.samplers.task import Task
from openenv_prime.samplers.uniform import UniformSampler

SAMPLERS: dict[str, type[PooledSampler]] = {
    "sequential": SequentialSampler,
    "uniform": UniformSampler,
    "curriculum": CurriculumSampler,
}


def _sampler_class(name: str) -> type[PooledSampler]:
    cls = SAMPLERS.get(name)
    if cls is None:
        raise ValueError(f"unknown sampler {name!r}; choose one of {sorted(SAMPLERS)}")
    return cls


def taken_defaults(name: str, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The run settings in ``defaults`` (a ``seed``, a ``group_size``) that sampler ``name`` takes."""
    taken = inspect.signature(_sampler_class(name)).parameters
    return {k: v for k, v in defaults.items() if k in taken}


def make_sampler(name: str, tasks: Iterable[Task] | TaskPool, *, defaults: Mapping[str, Any] | None = None,
                 **kwargs: Any) -> PooledSampler:
    """``make_sampler("curriculum", tasks, group_size=8)``; unknown names or settings raise clearly.

    ``defaults`` are a run's own settings (its ``seed``, ``group_size``): each reaches the sampler only where the
    sampler takes it and ``kwargs`` do not set it, so one call builds any sampler (``sequential`` has no seed,
    ``uniform`` no group size)."""
    cls = _sampler_class(name)
    kwargs = {**taken_defaults(name, defaults or {}), **kwargs}
    try:
        return cls(tasks, **kwargs)
    except TypeError as exc:
        if "unexpected keyword argument" in str(exc):
            raise TypeError(f"sampler {name!r} does not take that setting: {exc}") from None
        raise
