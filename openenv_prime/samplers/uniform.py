"""Seeded uniform draws with replacement: over all tasks, or over keys first and then tasks within the key.

``over="keys"`` gives every family the same share however many tasks it holds.
"""

from __future__ import annotations

from typing import Any, Iterable

from openenv_prime.samplers.pool import TaskPool
from openenv_prime.samplers.pooled import PooledSampler
from openenv_prime.samplers.task import Task

_MODES = ("tasks", "keys")


class UniformSampler(PooledSampler):
    def __init__(self, tasks: Iterable[Task] | TaskPool, over: str = "tasks", seed: int = 0) -> None:
        if over not in _MODES:
            raise ValueError(f"over must be one of {_MODES}, got {over!r}")
        super().__init__(tasks, seed=seed)
        self.over = over

    def probabilities(self) -> dict[str, float]:
        """The chance that one draw lands in each key."""
        if self.over == "keys":
            return {key: 1.0 / len(self.pool.keys) for key in self.pool.keys}
        total = len(self.pool)
        return {key: len(m) / total for key, m in zip(self.pool.keys, self.pool.members)}

    def _draw(self) -> int:
        if self.over == "tasks":
            return self._rng.randrange(len(self.pool))
        members = self.pool.members[self._rng.randrange(len(self.pool.members))]
        return members[self._rng.randrange(len(members))]

    def _config(self) -> dict[str, Any]:
        return {"seed": self.seed, "over": self.over}
